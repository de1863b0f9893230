package passes

import "math"

// dynQuant says which operands simulateDyn puts on the grids of
// sqc.Attention's int8 = 1 (runtime/nn.AttentionInt8): Q and K per token,
// V per channel over the real keys, P on pBits bits (0: exact) of the
// row's largest probability (pRowMax) or of 1.
type dynQuant struct {
	qk, v   bool
	pBits   int
	pRowMax bool
}

// rowGrid rounds x in place to a symmetric grid of levels steps per
// max |x|.
func rowGrid(x []float64, levels float64) {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	if m == 0 {
		return
	}
	st := m / levels
	for i, v := range x {
		x[i] = math.RoundToEven(v/st) * st
	}
}

// simulateDyn computes the attention of c in float64 with the operands dq
// names on INT8 grids (symmetric per-token K where the runtime's is
// asymmetric u8: the same 8 bits).
func simulateDyn(c *attentionCall, dq dynQuant) []float64 {
	heads := int(c.node.AttrInt("heads", 1))
	scale := float64(c.node.AttrFloat("scale", 1))
	b, s, w := int(c.q.Shape[0]), int(c.q.Shape[1]), int(c.q.Shape[2])
	d := w / heads
	out := make([]float64, b*s*w)
	p := make([]float64, s)
	q := make([]float64, s*d)
	k := make([]float64, s*d)
	v := make([]float64, s*d)
	col := make([]float64, s)
	for bi := range b {
		for h := range heads {
			for i := range s {
				for e := range d {
					idx := (bi*s+i)*w + h*d + e
					q[i*d+e], k[i*d+e], v[i*d+e] = float64(c.q.F32[idx]), float64(c.k.F32[idx]), float64(c.v.F32[idx])
				}
				if dq.qk {
					rowGrid(q[i*d:(i+1)*d], 127)
					rowGrid(k[i*d:(i+1)*d], 127)
				}
			}
			if dq.v { // per channel over the real keys
				for e := range d {
					n := 0
					for j := range s {
						if c.mask.F32[bi*s+j] == 0 {
							col[n] = v[j*d+e]
							n++
						}
					}
					rowGrid(col[:n], 127)
					n = 0
					for j := range s {
						if c.mask.F32[bi*s+j] == 0 {
							v[j*d+e] = col[n]
							n++
						}
					}
				}
			}
			for i := range s {
				top := math.Inf(-1)
				for j := range s {
					var dot float64
					for e := range d {
						dot += q[i*d+e] * k[j*d+e]
					}
					p[j] = scale*dot + float64(c.mask.F32[bi*s+j])
					top = math.Max(top, p[j])
				}
				pm := softmaxRow(p, top)
				if dq.pBits > 0 {
					lv := math.Exp2(float64(dq.pBits)) - 1
					st := 1 / lv
					if dq.pRowMax {
						st = pm / lv
					}
					for j := range s {
						p[j] = math.RoundToEven(p[j]/st) * st
					}
				}
				for e := range d {
					var acc float64
					for j := range s {
						acc += p[j] * v[j*d+e]
					}
					out[(bi*s+i)*w+h*d+e] = acc
				}
			}
		}
	}
	return out
}

// softmaxRow turns the scores p (whose largest is top) into
// probabilities in place and returns the largest.
func softmaxRow(p []float64, top float64) float64 {
	sum := 0.0
	for j := range p {
		p[j] = math.Exp(p[j] - top)
		sum += p[j]
	}
	pm := 0.0
	for j := range p {
		p[j] /= sum
		pm = math.Max(pm, p[j])
	}
	return pm
}
