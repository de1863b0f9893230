//go:build !amd64 || amd64.v3

package exec

// interpBitwise: see bitwise_amd64_test.go. Here Go fuses a*b+c in the
// interpreter's LayerNorm and MatMul, so they may differ from runtime/nn
// in the last bit.
const interpBitwise = false
