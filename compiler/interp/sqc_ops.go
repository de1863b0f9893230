package interp

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// Kernels of the attention ops the passes package introduces
// (sqc.AttentionMask from CanonicalizeAttentionMask, sqc.Attention from
// FuseAttention); their OpDefs are in compiler/ops_sqc_attention.go. They
// join the kernel table at package initialisation, before anything reads
// it, so the table is still only read afterwards. (sqc.Gelu and sqc.Linear
// run on the generic Gelu and Linear kernels: genericAliases.)
func init() {
	sqcKernels["sqc.AttentionMask"] = sqcKernel("sqc.AttentionMask", attentionMask)
	sqcKernels["sqc.Attention"] = sqcKernel("sqc.Attention", attention)
}

// attentionMask: Y[b, 0, 0, s] = (M[b, s] != 0) ? 0 : fill, float32
// [batch, 1, 1, seq].
func attentionMask(c *call) ([]*compiler.Tensor, error) {
	m := c.in[0]
	if len(m.Shape) != 2 {
		return nil, fmt.Errorf("%w: AttentionMask input %v, want [batch, seq]", compiler.ErrShapeMismatch, m.Shape)
	}
	fill := c.node.AttrFloat("fill", compiler.AttentionMaskDefaultFill)
	var keep []bool
	switch m.DType {
	case compiler.Bool:
		keep = m.Bool
	default:
		vals := ops.Float64s(m)
		if vals == nil {
			return nil, unsupported(m.DType)
		}
		keep = make([]bool, len(vals))
		for i, v := range vals {
			keep[i] = v != 0
		}
	}
	y := make([]float32, len(keep))
	for i, k := range keep {
		if !k {
			y[i] = fill
		}
	}
	return []*compiler.Tensor{ops.FromSlice([]int64{m.Shape[0], 1, 1, m.Shape[1]}, y)}, nil
}

// attention: multi-head scaled dot-product attention on unsplit heads,
// Q [B, Sq, H*D], K and V [B, Sk, H*D], optional additive mask broadcast
// to [B, H, Sq, Sk]. Dot products and the softmax are computed in float64
// and rounded once, like the interpreter's MatMul-free reductions.
//
// With qkv_packed = 1, input 0 holds Q, K and V side by side; they are
// copied out (exactly) and attended as above. With int8 = 1, Q, K, V and
// the probabilities are put on the INT8 grids first (int8AttentionOperands)
// and the rest runs in float64 alike, so the engine's INT8 attention agrees
// with it up to float32 rounding. With out_scale, the output is the u8
// codes of that (sqc.Quantize's).
func attention(c *call) ([]*compiler.Tensor, error) {
	var q, k, v *compiler.Tensor
	if compiler.AttentionPacked(c.node) {
		if (len(c.in) > 1 && c.in[1] != nil) || (len(c.in) > 2 && c.in[2] != nil) {
			return nil, fmt.Errorf("%w: packed Attention takes no separate key or value", compiler.ErrMalformed)
		}
		var err error
		if q, k, v, err = unpackQKV(c.in[0]); err != nil {
			return nil, err
		}
	} else {
		if len(c.in) < 3 || c.in[1] == nil || c.in[2] == nil {
			return nil, fmt.Errorf("%w: Attention needs query, key and value", compiler.ErrMissingTensor)
		}
		q, k, v = c.in[0], c.in[1], c.in[2]
	}
	var mask *compiler.Tensor
	if len(c.in) > 3 {
		mask = c.in[3]
	}
	if len(c.in) > 4 && c.in[4] != nil { // the bias, added to the mask first
		if mask == nil {
			mask = c.in[4]
		} else {
			sum, err := (&ops.Node{Op: "Add"}).Eval([]*ops.Tensor{c.in[4], mask}, ops.Options{})
			if err != nil {
				return nil, fmt.Errorf("Attention bias + mask: %w", err)
			}
			saturate(sum[0], c.in[4], mask)
			mask = sum[0]
		}
	}
	if !ops.IsFloat(q.DType) || k.DType != q.DType || v.DType != q.DType || (mask != nil && mask.DType != q.DType) {
		return nil, fmt.Errorf("%w: Attention inputs %s, %s, %s", compiler.ErrDTypeMismatch, q.DType, k.DType, v.DType)
	}
	heads := c.node.AttrInt("heads", 0)
	scale := float64(c.node.AttrFloat("scale", 1))
	if len(q.Shape) != 3 || len(k.Shape) != 3 || !slices.Equal(k.Shape, v.Shape) ||
		q.Shape[0] != k.Shape[0] || q.Shape[2] != k.Shape[2] || heads <= 0 || q.Shape[2]%heads != 0 {
		return nil, fmt.Errorf("%w: Attention q %v, k %v, v %v with %d heads", compiler.ErrShapeMismatch, q.Shape, k.Shape, v.Shape, heads)
	}
	batch, sq, sk, width := q.Shape[0], q.Shape[1], k.Shape[1], q.Shape[2]
	d := width / heads
	var maskAt []int
	var mv []float64
	if mask != nil {
		if len(mask.Shape) > 4 {
			return nil, fmt.Errorf("%w: Attention mask %v has rank above 4", compiler.ErrShapeMismatch, mask.Shape)
		}
		scores := []int64{batch, heads, sq, sk}
		if full, err := ops.BroadcastShapes(scores, mask.Shape); err != nil || !slices.Equal(full, scores) {
			return nil, fmt.Errorf("%w: Attention mask %v does not broadcast to scores %v", compiler.ErrShapeMismatch, mask.Shape, scores)
		}
		maskAt = ops.BroadcastIndex(mask.Shape, scores)
		mv = ops.Float64s(mask)
	}
	qv, kv, vv := ops.Float64s(q), ops.Float64s(k), ops.Float64s(v)
	int8 := compiler.AttentionInt8(c.node)
	if int8 {
		live := func(b, h, j int) bool {
			if mask == nil {
				return true
			}
			for i := range sq {
				if mv[maskAt[((int64(b)*heads+int64(h))*sq+i)*sk+int64(j)]] > -math.MaxFloat32 {
					return true
				}
			}
			return false
		}
		int8AttentionOperands(qv, kv, vv, int(batch), int(sq), int(sk), int(heads), int(d), live)
	}
	y := make([]float64, len(qv))
	p := make([]float64, sk)
	for b := range batch {
		for h := range heads {
			for i := range sq {
				qRow := qv[(b*sq+i)*width+h*d:][:d]
				m := math.Inf(-1)
				for j := range sk {
					kRow := kv[(b*sk+j)*width+h*d:][:d]
					var dot float64
					for e, x := range qRow {
						dot += x * kRow[e]
					}
					s := scale * dot
					if mask != nil {
						s += mv[maskAt[((b*heads+h)*sq+i)*sk+j]]
					}
					p[j] = s
					m = math.Max(m, s)
				}
				var sum float64
				for j := range sk {
					p[j] = math.Exp(p[j] - m)
					sum += p[j]
				}
				out := y[(b*sq+i)*width+h*d:][:d]
				for j := range sk {
					w := p[j] / sum
					if int8 { // P on the u8 grid of the row's largest numerator, exp(0) = 1
						w = math.RoundToEven(255*p[j]) / 255 / sum
					}
					vRow := vv[(b*sk+j)*width+h*d:][:d]
					for e, x := range vRow {
						out[e] += w * x
					}
				}
			}
		}
	}
	out, err := ops.Cast(ops.FromSlice(slices.Clone(q.Shape), y), q.DType)
	if err != nil {
		return nil, err
	}
	if scale, zp, ok := compiler.U8Output(c.node); ok { // written quantised (int8 = 1 only)
		if out, err = quantizeRows(out, scale, zp); err != nil {
			return nil, err
		}
	}
	return []*compiler.Tensor{out}, nil
}

// int8AttentionOperands puts Q, K and V ([batch, seq, heads*d] each) on
// the grids of sqc.Attention's int8 = 1, in place: each key row of each
// head on its own u8 grid (min/max with 0, as DynamicQuantizeLinear), each
// query row on a symmetric s8 grid of 127 steps per max |x|, and each value
// channel of a head on a symmetric s8 grid over the keys live(b, h, j)
// says some query can attend to (all of them if none is).
func int8AttentionOperands(q, k, v []float64, batch, sq, sk, heads, d int, live func(b, h, j int) bool) {
	width := heads * d
	grid := func(x, absMax float64) float64 { // symmetric s8: 127 steps per absMax
		step := absMax / 127
		if step == 0 {
			return x
		}
		return math.Max(-127, math.Min(127, math.RoundToEven(x/step))) * step
	}
	sym := func(xs []float64, absMax float64) {
		for i, x := range xs {
			xs[i] = grid(x, absMax)
		}
	}
	absMax := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			m = math.Max(m, math.Abs(x))
		}
		return m
	}
	for b := range batch {
		for h := range heads {
			for i := range sq {
				row := q[(b*sq+i)*width+h*d:][:d]
				sym(row, absMax(row))
			}
			for j := range sk {
				row := k[(b*sk+j)*width+h*d:][:d]
				lo, hi := 0.0, 0.0
				for _, x := range row {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
				scale := (hi - lo) / 255
				if scale == 0 {
					continue
				}
				zp := math.Max(0, math.Min(255, math.RoundToEven(-lo/scale)))
				for c, x := range row {
					row[c] = (math.Max(0, math.Min(255, math.RoundToEven(x/scale)+zp)) - zp) * scale
				}
			}
			anyLive := false
			for j := range sk {
				anyLive = anyLive || live(b, h, j)
			}
			col := make([]float64, 0, sk)
			for c := range d {
				col = col[:0]
				for j := range sk {
					if !anyLive || live(b, h, j) {
						col = append(col, v[(b*sk+j)*width+h*d+c])
					}
				}
				m := absMax(col)
				for j := range sk {
					at := (b*sk+j)*width + h*d + c
					v[at] = grid(v[at], m)
				}
			}
		}
	}
}

// unpackQKV splits a packed [batch, seq, 3W] tensor into Q, K and V of
// [batch, seq, W] each: columns [0, W), [W, 2W) and [2W, 3W) of every row.
func unpackQKV(qkv *compiler.Tensor) (q, k, v *compiler.Tensor, err error) {
	if !ops.IsFloat(qkv.DType) || len(qkv.Shape) != 3 || qkv.Shape[2]%3 != 0 {
		return nil, nil, nil, fmt.Errorf("%w: packed Attention QKV %s%v, want float [batch, seq, 3*width]", compiler.ErrShapeMismatch, qkv.DType, qkv.Shape)
	}
	w := int(qkv.Shape[2] / 3)
	rows := int(qkv.Shape[0] * qkv.Shape[1])
	parts := make([]*compiler.Tensor, 3)
	for i := range parts {
		parts[i] = compiler.NewTensor(qkv.DType, qkv.Shape[0], qkv.Shape[1], int64(w))
		for r := range rows {
			from := r*3*w + i*w
			switch qkv.DType {
			case compiler.Float32:
				copy(parts[i].F32[r*w:(r+1)*w], qkv.F32[from:from+w])
			case compiler.Float64:
				copy(parts[i].F64[r*w:(r+1)*w], qkv.F64[from:from+w])
			}
		}
	}
	return parts[0], parts[1], parts[2], nil
}

// saturate makes sum = a + b (float32, broadcast) what the attention
// kernels add to the scores, nn.AddSaturating's: an element where two
// finite addends overflowed is ±math.MaxFloat32 instead of ±Inf.
func saturate(sum, a, b *compiler.Tensor) {
	if sum.DType != compiler.Float32 || a.DType != compiler.Float32 || b.DType != compiler.Float32 {
		return
	}
	ai, bi := ops.BroadcastIndex(a.Shape, sum.Shape), ops.BroadcastIndex(b.Shape, sum.Shape)
	for i := range sum.F32 {
		sum.F32[i] = nn.AddSaturating(a.F32[ai[i]], b.F32[bi[i]])
	}
}
