//go:build amd64 && !amd64.v3

package exec

// interpBitwise: the FP32 interpreter's float code (LayerNormalization,
// MatMul/Linear) is not written against FMA fusion, so it gives the same
// bits as runtime/nn only where Go does not fuse: amd64 below GOAMD64=v3.
const interpBitwise = true
