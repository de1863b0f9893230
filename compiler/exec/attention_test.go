package exec

import (
	"fmt"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestPackedAttention: the packed form reads Q, K and V in place from one
// [batch, seq, 3W] buffer and must give the bits of the unpacked form on
// the same columns, at every variant's thread counts; with 3 heads of 5
// (odd widths) and a padding mask.
func TestPackedAttention(t *testing.T) {
	packed := parse(t, `graph "packed" opset 17 {
  input %qkv: f32[batch, seq, 45]
  input %mask: i64[batch, seq]
  %am = sqc.AttentionMask(%mask)
  %y = sqc.Attention(%qkv, _, _, %am) {heads=3, qkv_packed=1, scale=0.4472136}
  output %y: f32[batch, seq, 15]
}`)
	unpacked := parse(t, `graph "unpacked" opset 17 {
  input %q: f32[batch, seq, 15]
  input %k: f32[batch, seq, 15]
  input %v: f32[batch, seq, 15]
  input %mask: i64[batch, seq]
  %am = sqc.AttentionMask(%mask)
  %y = sqc.Attention(%q, %k, %v, %am) {heads=3, scale=0.4472136}
  output %y: f32[batch, seq, 15]
}`)
	const batch, seq, w = 3, 7, 15
	qkv := randF32(5, -2, 2, batch, seq, 3*w)
	mask := lengthsMask(seq, 7, 4, 1)
	parts := splitQKV(qkv, mask)
	want := run(t, compile(t, unpacked, nil, 1), parts)
	for _, threads := range []int{1, 2} {
		p := compile(t, packed, nil, threads)
		sameBits(t, "packed vs unpacked", run(t, p, map[string]*compiler.Tensor{"qkv": qkv, "mask": mask}), want)
	}
	ref := interpRun(t, packed, map[string]*compiler.Tensor{"qkv": qkv, "mask": mask})
	if d, scale := maxDiff(t, want, ref); d > 1e-5*scale {
		t.Errorf("exec differs from the interpreter by %.3g (outputs up to %.3g)", d, scale)
	}
}

// TestInt8Attention: sqc.Attention with int8 = 1 runs nn.AttentionInt8,
// packed and unpacked with the same bits at every thread count, and agrees
// with the interpreter's float64 reading of the INT8 grids; the FP32
// attention of the same inputs differs from it by the quantisation noise
// only.
func TestInt8Attention(t *testing.T) {
	graph := func(packed bool, int8 int) *compiler.Graph {
		if packed {
			return parse(t, fmt.Sprintf(`graph "packed" opset 17 {
  input %%qkv: f32[batch, seq, 96]
  input %%mask: i64[batch, seq]
  %%am = sqc.AttentionMask(%%mask)
  %%y = sqc.Attention(%%qkv, _, _, %%am) {heads=2, int8=%d, qkv_packed=1, scale=0.25}
  output %%y: f32[batch, seq, 32]
}`, int8))
		}
		return parse(t, fmt.Sprintf(`graph "unpacked" opset 17 {
  input %%q: f32[batch, seq, 32]
  input %%k: f32[batch, seq, 32]
  input %%v: f32[batch, seq, 32]
  input %%mask: i64[batch, seq]
  %%am = sqc.AttentionMask(%%mask)
  %%y = sqc.Attention(%%q, %%k, %%v, %%am) {heads=2, int8=%d, scale=0.25}
  output %%y: f32[batch, seq, 32]
}`, int8))
	}
	const batch, seq, w = 3, 19, 32
	qkv := randF32(6, -2, 2, batch, seq, 3*w)
	mask := lengthsMask(seq, 19, 11, 1)
	parts := splitQKV(qkv, mask)
	packedIn := map[string]*compiler.Tensor{"qkv": qkv, "mask": mask}
	want := run(t, compile(t, graph(false, 1), nil, 1), parts)
	for _, threads := range []int{1, 2} {
		sameBits(t, "packed vs unpacked", run(t, compile(t, graph(true, 1), nil, threads), packedIn), want)
	}
	ref := interpRun(t, graph(true, 1), packedIn)
	d, scale := maxDiff(t, want, ref)
	if d > 1e-4*scale {
		t.Errorf("INT8 exec differs from the interpreter by %.3g (outputs up to %.3g)", d, scale)
	}
	fp32 := interpRun(t, graph(true, 0), packedIn)
	q, _ := maxDiff(t, ref, fp32)
	t.Logf("INT8 attention: %.3g from the interpreter's INT8 reading, %.3g from FP32 (outputs up to %.3g)", d, q, scale)
	if q < 10*d || q > 0.05*scale {
		t.Errorf("INT8 vs FP32 attention differ by %.3g: want quantisation noise, above 10x the %.3g of exec vs interpreter and below 5%% of %.3g", q, d, scale)
	}
}

// lengthsMask is the i64 [len(lengths), seq] attention mask of right-padded
// sequences of the given lengths.
func lengthsMask(seq int, lengths ...int) *compiler.Tensor {
	mask := compiler.NewTensor(compiler.Int64, int64(len(lengths)), int64(seq))
	for b, n := range lengths {
		for j := range n {
			mask.I64[b*seq+j] = 1
		}
	}
	return mask
}

// splitQKV returns the inputs of the unpacked attention graphs: q, k and v
// ([batch, seq, W] each) cut from the packed qkv ([batch, seq, 3W]), and
// the mask.
func splitQKV(qkv, mask *compiler.Tensor) map[string]*compiler.Tensor {
	batch, seq, w := qkv.Shape[0], qkv.Shape[1], int(qkv.Shape[2]/3)
	parts := map[string]*compiler.Tensor{"mask": mask}
	for i, name := range []string{"q", "k", "v"} {
		p := compiler.NewTensor(compiler.Float32, batch, seq, int64(w))
		for r := range int(batch * seq) {
			copy(p.F32[r*w:(r+1)*w], qkv.F32[r*3*w+i*w:])
		}
		parts[name] = p
	}
	return parts
}
