//go:build amd64 && !noasm

package nn

import "github.com/sqc-dev/sqc/internal/lnstats"

// lnNormalizeDualAVX512 is kernels.lnNormalizeDual on lnNormDualAsm
// (asmgen/nn/layernorm.go), after checking every slice it reads or writes.
func lnNormalizeDualAVX512(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zp int32) {
	flags := lnDualFlags(y, q, x, ln, gammaQ, betaQ)
	n := len(x)
	if n == 0 {
		return
	}
	if !quantZPOK(zp) {
		lnNormalizeDualGo(y, q, x, st, ln, gammaQ, betaQ, invScale, zp)
		return
	}
	lnNormDualAsm(ptr(y), ptr(q), ptr(x), n, st.MeanHi, st.MeanLo, st.Inv, ptr(ln.Gamma), ptr(ln.Beta), ptr(gammaQ), ptr(betaQ), invScale, zp, flags)
}
