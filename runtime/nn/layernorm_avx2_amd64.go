//go:build amd64 && !noasm

package nn

import (
	"github.com/sqc-dev/sqc/internal/lnstats"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// useAVX2LayerNorm sets k's LayerNorm loops (lnStats16, lnNormalize, lnNormalizeDual) to their AVX2 assembly forms.
func useAVX2LayerNorm(k *kernels) {
	k.lnStats16 = lnStats16AVX2
	k.lnNormalize = lnNormalizeAVX2
	k.lnNormalizeDual = lnNormalizeDualAVX2
}

// lnStats16AVX2 is kernels.lnStats16 on lnStats16AVX2Asm
// (asmgen/nn/layernorm_avx2.go), which loads a row's last partial block
// of 8 under mask and so reads nothing past column n.
func lnStats16AVX2(x []float32, stride, n int, eps float32, mean, inv *[lnGroup]float64) {
	need("LayerNorm rows", x, lnGroup, stride, n)
	lnStats16AVX2Asm(ptr(x), stride, n, float64(n), float64(eps), &mean[0], &inv[0])
}

// lnNormalizeAVX2 is kernels.lnNormalize: lnNormAVX2Asm on the whole
// groups of 8 columns, lnNormalizeGo's loop on the rest (every output
// depends on its own column only).
func lnNormalizeAVX2(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, invScale float32, zp int32) {
	flags := lnNormFlags(y, q, x, ln)
	if flags == 0 {
		return
	}
	n := len(x)
	n8 := n &^ 7
	if n8 > 0 {
		lnNormAVX2Asm(ptr(y), ptr(q), ptr(x), n8, st.MeanHi, st.MeanLo, st.Inv, ptr(ln.Gamma), ptr(ln.Beta), invScale, zp, flags)
	}
	for j := n8; j < n; j++ {
		o := normalize(x[j], st, ln, j)
		if y != nil {
			y[j] = o
		}
		if q != nil {
			q[j] = qgemm.QuantizeU8(o, invScale, zp)
		}
	}
}

// lnNormalizeDualAVX2 is kernels.lnNormalizeDual: lnNormDualAVX2Asm on the
// whole groups of 8 columns, lnNormalizeDualGo's loop on the rest.
func lnNormalizeDualAVX2(y []float32, q []uint8, x []float32, st lnstats.Row32, ln *LayerNormParams, gammaQ, betaQ []float32, invScale float32, zp int32) {
	flags := lnDualFlags(y, q, x, ln, gammaQ, betaQ)
	n := len(x)
	n8 := n &^ 7
	if n8 > 0 {
		lnNormDualAVX2Asm(ptr(y), ptr(q), ptr(x), n8, st.MeanHi, st.MeanLo, st.Inv, ptr(ln.Gamma), ptr(ln.Beta), ptr(gammaQ), ptr(betaQ), invScale, zp, flags)
	}
	for j := n8; j < n; j++ {
		z := st.Normalize(x[j])
		y[j] = affine(z, ln.Gamma, ln.Beta, j)
		q[j] = qgemm.QuantizeU8(affine(z, gammaQ, betaQ, j), invScale, zp)
	}
}
