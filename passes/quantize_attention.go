package passes

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// The attention matmuls' precision (QuantOptions.Attention).
const (
	// AttentionINT8 runs Q·K^T and P·V as u8 x s8 GEMMs with dynamic
	// scales on the qgemm kernels (AMX tiles where there are some),
	// sqc.Attention's int8 = 1: the default.
	AttentionINT8 = "int8"
	// AttentionFP32 keeps them in float32.
	AttentionFP32 = "fp32"
)

// AttentionPrecision is the precision QuantOptions.Attention a selects
// (AttentionINT8 for "", the default), or an error naming a.
func AttentionPrecision(a string) (string, error) {
	switch a {
	case "", AttentionINT8:
		return AttentionINT8, nil
	case AttentionFP32:
		return AttentionFP32, nil
	}
	return "", fmt.Errorf("%w: attention precision %q: want %s or %s", compiler.ErrInvalidRequest, a, AttentionINT8, AttentionFP32)
}

// QuantizeAttention sets every sqc.Attention to opts.Attention's precision:
// int8 = 1 (the default), or no int8 attribute for AttentionFP32 (so it
// also turns an INT8-attention graph back, as bench's workers do to time
// both: an INT8 attention writing u8 gets its sqc.Quantize back, and
// WriteU8Directly, run after it, fuses that into an attention made INT8). The decision is the graph's, visible in
// `sqc inspect`, and lowering only follows it. Being integer products plus
// element-wise float32 steps every ISA computes alike, INT8 attention
// keeps the outputs bitwise identical across ISAs, so it is a compile-time
// choice like the Linears' quantisation, not a run-time one.
//
// Accuracy (TestAttentionStaysFP32Measurement; cmd/sqc TestINT8AccuracyOnSST2
// holds the end-to-end bars with it, on the shared SST-2 models): per
// key K, per query Q, per channel V and P scaled by its row's largest
// numerator give the attention outputs 52.1 / 54.2 dB SQNR
// (bert-mini / distilbert-tiny), against 44.6 / 48.5 dB for all the INT8
// Linears before them; the per-tensor, fixed-1/255 scheme that quantize.go
// measured gives 40.9 / 41.0 dB.
//
// Speed (README): BERT-base on a 2-core Zen 5 (AVX512-VNNI), whole
// forward pass against FP32 attention, interleaved: 1.06x at 8x128, 1.07x
// at 1x128, 1.01x at 8x32, 0.99x on real-length SST-2 batches (attention
// per sequence at ~25 tokens); with AVX-512 off (the AVX2 kernels, whose
// integer GEMM has no more throughput than float32 FMA) 1.02x, 1.02x and
// 1.05x. On AMX its GEMMs run on the tiles, where FP32 attention was 32%
// of the step time (../shared/perf). Hence the default; --attention fp32
// keeps the float32 matmuls.
func QuantizeAttention(opts QuantOptions) Pass {
	return Pass{Name: "QuantizeAttention", Level: compiler.VerifyQuantized, Run: func(g *compiler.Graph) (bool, error) {
		a, err := AttentionPrecision(opts.Attention)
		if err != nil {
			return false, err
		}
		int8 := a == AttentionINT8
		changed := false
		var nodes []*compiler.Node
		for _, n := range g.Nodes {
			nodes = append(nodes, n)
			if n.Op != opAttention || compiler.AttentionInt8(n) == int8 {
				continue
			}
			changed = true
			if int8 {
				n.Attrs["int8"] = compiler.IntAttr(1)
				continue
			}
			delete(n.Attrs, "int8")
			if q := splitU8Output(g, n); q != nil {
				nodes = append(nodes, q)
			}
		}
		if !changed {
			return false, nil
		}
		g.Nodes = nodes
		return true, g.InferShapes()
	}}
}

// splitU8Output turns an INT8 attention n that writes u8 (WriteU8Directly)
// back into one writing f32, followed by the sqc.Quantize it absorbed,
// which it returns (nil when n writes f32): FP32 attention has no u8 form.
// The f32 value is named after the u8 one.
func splitU8Output(g *compiler.Graph, n *compiler.Node) *compiler.Node {
	scale, zp, ok := compiler.U8Output(n)
	if !ok {
		return nil
	}
	delete(n.Attrs, "out_scale")
	delete(n.Attrs, "out_zero_point")
	u8 := n.Outputs[0]
	f32 := u8 + "/f32"
	producers := g.Producers()
	for i := 2; producers[f32] != nil || g.Initializers[f32] != nil; i++ {
		f32 = fmt.Sprintf("%s/f32.%d", u8, i)
	}
	n.Outputs[0] = f32
	return &compiler.Node{
		Op: "sqc.Quantize", Name: n.Name + "/quantize", Inputs: []string{f32}, Outputs: []string{u8},
		Attrs: compiler.Attrs{"scale": compiler.FloatAttr(scale), "zero_point": compiler.IntAttr(int64(zp))},
	}
}
