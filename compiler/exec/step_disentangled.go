package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// DisentangledBiasStep is nn.DisentangledBias: sqc.DisentangledBias's
// DeBERTa relative terms into Out [batch, Heads, seq, seq], the bias of
// the attention step after it. Q, PosKey and C2P (or K, PosQuery and P2C)
// are NoSlot where the model has no such term. A packed batch
// (nn.DisentangledBiasPacked) has Q and K [tokens, ...] and fills each
// sequence's corner of Out at the padded length, which packed attention
// reads (packed.go).
type DisentangledBiasStep struct {
	node
	Heads                  int
	Divisor                float32
	Q, PosKey, C2P         SlotID
	K, PosQuery, P2C       SlotID
	Out                    SlotID
	dims                   nn.DisentangledDims
	q, posKey, k, posQuery []float32 // this run's operands, nil for an absent term
	c2p, p2c               []int64
	rowShapes              [2][3]int64 // a packed batch's rows as the padded shapes (no allocation per run)
}

func (s *DisentangledBiasStep) Call() string { return "nn.DisentangledBias" }

func (s *DisentangledBiasStep) Describe(sl []*Slot) string {
	name := func(id SlotID) string {
		if id == NoSlot {
			return "_"
		}
		return slotName(sl, id)
	}
	return fmt.Sprintf("%s = %s(%s, %s, %s, %s, %s, %s; heads=%d, divisor=%g)", slotName(sl, s.Out), s.Call(),
		name(s.Q), name(s.PosKey), name(s.C2P), name(s.K), name(s.PosQuery), name(s.P2C), s.Heads, s.Divisor)
}

func (s *DisentangledBiasStep) Operands() Operands {
	return operands(reads(s.Q, s.PosKey, s.C2P, s.K, s.PosQuery, s.P2C), s.Out)
}

// bindAs reads the step's operands from p, checking their dtypes and
// shapes, into s's run fields and s.dims; batch and seq >= 0 (a packed
// batch's) stand for the rows' own [tokens, width] shape.
func (s *DisentangledBiasStep) bindAs(p *Program, batch, seq int64) error {
	var shapes [6][]int64
	// Inputs 0, 1, 3 and 4 are float32 values, 2 and 5 int64 tables.
	f32s := [6]*[]float32{&s.q, &s.posKey, nil, &s.k, &s.posQuery, nil}
	i64s := [6]*[]int64{2: &s.c2p, 5: &s.p2c}
	for i, id := range []SlotID{s.Q, s.PosKey, s.C2P, s.K, s.PosQuery, s.P2C} {
		if f32s[i] != nil {
			*f32s[i] = nil
		} else {
			*i64s[i] = nil
		}
		if id == NoSlot {
			continue
		}
		t := p.bufs[id]
		dt := compiler.Float32
		if f32s[i] == nil {
			dt = compiler.Int64
		}
		if err := want(t, "DisentangledBias operand", dt, 0); err != nil {
			return err
		}
		shapes[i] = t.Shape
		if (i == 0 || i == 3) && batch >= 0 && len(t.Shape) == 2 {
			rs := &s.rowShapes[i/3]
			*rs = [3]int64{batch, seq, t.Shape[1]}
			shapes[i] = rs[:]
		}
		if f32s[i] != nil {
			*f32s[i] = t.F32
		} else {
			*i64s[i] = t.I64
		}
	}
	size, err := compiler.DisentangledBiasShapes(int64(s.Heads), shapes)
	if err != nil {
		return err
	}
	width := s.Heads * size.HeadSize
	s.dims = nn.DisentangledDims{Batch: size.Batch, Seq: size.Seq, Heads: s.Heads, HeadDim: size.HeadSize, Rows: size.Rows,
		QStride: width, KStride: width, Divisor: s.Divisor}
	return nil
}

func (s *DisentangledBiasStep) run(p *Program) error {
	off := p.run.offsets
	if off != nil {
		// Bind as the padded batch would: rows [batch, seq, width] in
		// the shapes' place, checked against the packed rows below.
		seq := p.run.seq
		for _, id := range []SlotID{s.Q, s.K} {
			if id == NoSlot {
				continue
			}
			x := p.bufs[id]
			if len(x.Shape) != 2 || x.Shape[0] != int64(off[len(off)-1]) {
				return fmt.Errorf("internal error: packed DisentangledBias rows %v for %d tokens", x.Shape, off[len(off)-1])
			}
		}
		if err := s.bindAs(p, int64(len(off)-1), int64(seq)); err != nil {
			return err
		}
	} else if err := s.bindAs(p, -1, -1); err != nil {
		return err
	}
	d := &s.dims
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, int64(d.Batch), int64(d.Heads), int64(d.Seq), int64(d.Seq))
	p.scratch = grow(p.scratch, nn.DisentangledScratchLen(p.pool.Workers(), d.Rows, d.HeadDim))
	var err error
	if off != nil {
		err = nn.DisentangledBiasPacked(p.pool, p.scratch, out.F32, s.q, s.posKey, s.c2p, s.k, s.posQuery, s.p2c, d, off)
	} else {
		err = nn.DisentangledBias(p.pool, p.scratch, out.F32, s.q, s.posKey, s.c2p, s.k, s.posQuery, s.p2c, d)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", compiler.ErrInvalidRequest, err)
	}
	return nil
}

// cost: per term and head, a dot product of HeadDim for each query (or
// key) and the relative distances its pair of 16-row blocks reaches (seq
// + 31 at most, the embedding rows at most), then a copy and a sum per
// output value.
func (s *DisentangledBiasStep) cost(p *Program) Cost {
	d := s.dims
	terms := 0
	for _, id := range []SlotID{s.Q, s.K} {
		if id != NoSlot {
			terms++
		}
	}
	distances := min(d.Seq+31, d.Rows)
	dots := float64(terms * d.Batch * d.Heads * d.Seq * distances)
	return Cost{Kind: KindAttention, Label: fmt.Sprintf("DisentangledBias %dx%d", s.Heads, d.HeadDim),
		Ops: dots*2*float64(d.HeadDim) + 2*float64(terms*d.Batch*d.Heads*d.Seq*d.Seq), Bytes: p.operandBytes(s)}
}
