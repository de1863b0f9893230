package passes

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// The attention matmuls' precision (QuantOptions.Attention).
const (
	// AttentionFP32 keeps Q·K^T and P·V in float32 (the default).
	AttentionFP32 = "fp32"
	// AttentionINT8 runs them as u8 x s8 GEMMs with dynamic scales on the
	// qgemm kernels (AMX tiles where there are some), sqc.Attention's
	// int8 = 1.
	AttentionINT8 = "int8"
)

// QuantizeAttention marks every sqc.Attention int8 = 1 when opts.Attention
// is AttentionINT8, and does nothing otherwise: the decision is the
// graph's, visible in `sqc inspect`, and lowering only follows it. Being
// integer products plus element-wise float32 steps every ISA computes
// alike, INT8 attention keeps the outputs bitwise identical across ISAs,
// so it is a compile-time choice like the Linears' quantisation, not a
// run-time one.
//
// Accuracy (TestAttentionStaysFP32Measurement; cmd/sqc TestINT8AccuracyOnSST2
// holds the end-to-end bars with it, on the shared SST-2 models): per
// key K, per query Q, per channel V and P scaled by its row's largest
// numerator give the attention outputs 52.1 / 54.2 dB SQNR
// (bert-mini / distilbert-tiny), against 44.6 / 48.5 dB for all the INT8
// Linears before them; the per-tensor, fixed-1/255 scheme that quantize.go
// measured gives 40.9 / 41.0 dB.
//
// Speed depends on the ISA: the GEMMs are near free on AMX tiles and VNNI,
// where the float32 softmax and the quantisation of Q, K, V and P remain;
// on AVX2-only CPUs the integer kernel (VPMADDWD) has no more throughput
// than float32 FMA, and INT8 attention is no faster there (BERT-base 8x128
// on a Zen 3: 13.3 ms against 12.3 ms; README). It is therefore opt-in,
// until measured on AMX.
func QuantizeAttention(opts QuantOptions) Pass {
	return Pass{Name: "QuantizeAttention", Level: compiler.VerifyQuantized, Run: func(g *compiler.Graph) (bool, error) {
		switch opts.Attention {
		case "", AttentionFP32:
			return false, nil
		case AttentionINT8:
		default:
			return false, fmt.Errorf("%w: attention precision %q: want %s or %s", compiler.ErrInvalidRequest, opts.Attention, AttentionFP32, AttentionINT8)
		}
		changed := false
		for _, n := range g.Nodes {
			if n.Op != opAttention || compiler.AttentionInt8(n) {
				continue
			}
			n.Attrs["int8"] = compiler.IntAttr(1)
			changed = true
		}
		return changed, nil
	}}
}
