//go:build amd64 && !noasm

package nn

// lnNormalizeDualAVX512 is kernels.lnNormalizeDual on lnNormDualAsm
// (asmgen/nn/layernorm.go), after checking every slice it reads or writes.
func lnNormalizeDualAVX512(y []float32, q []uint8, x []float32, mean, inv float64, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zp int32) {
	n := len(x)
	need("gamma", ln.Gamma, 1, 0, n)
	need("u8 output's gamma", gammaQ, 1, 0, n)
	need("LayerNorm output", y, 1, 0, n)
	need("LayerNorm u8 output", q, 1, 0, n)
	flags := 0
	if (ln.Beta == nil) != (betaQ == nil) {
		panic("nn: LayerNormDual with one beta and not the other")
	}
	if ln.Beta != nil {
		need("beta", ln.Beta, 1, 0, n)
		need("u8 output's beta", betaQ, 1, 0, n)
		flags |= lnBeta
	}
	if n == 0 {
		return
	}
	lnNormDualAsm(ptr(y), ptr(q), ptr(x), n, mean, inv, ptr(ln.Gamma), ptr(ln.Beta), ptr(gammaQ), ptr(betaQ), invScale, zp, flags)
}
