package qgemm

// Exported forms of the epilogue's arithmetic, so that code outside the
// GEMM gives the same bits as a GEMM epilogue: runtime/nn's standalone
// activation quantisation, and the FP32 interpreter's reference of
// sqc.QLinear (compiler/interp), which runs this very epilogue on its own
// integer product. The activations' own functions are in act.go.

// QuantizeU8 is the epilogue's u8 output quantisation of one value:
// clamp(roundEven(v*invScale) + zeroPoint, 0, 255), the product first
// clamped to [-65536, 65536] as MAXPS/MINPS do (so NaN gives 0), bit for
// bit what OutU8 receives.
func QuantizeU8(v, invScale float32, zeroPoint int32) uint8 {
	return quantizeU8(v, invScale, zeroPoint)
}

// EpilogueGo is the pure-Go EpilogueFunc, the bit-exact reference of every
// variant's epilogue.
func EpilogueGo(ep *Epilogue, c []int32, ldc, m0, n0, m, n int) {
	epilogueGo(ep, c, ldc, m0, n0, m, n)
}
