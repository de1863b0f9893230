package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// Packed (padding-free) batches.
//
// A batch of right-padded sequences (ids [batch, seq] with a 0/1
// attention mask of ones then zeros per row) runs packed when its
// schedule allows: the embedding step writes only the real tokens, one
// sequence after another ([tokens, hidden], sequence b at rows
// offsets[b] .. offsets[b+1]-1, nn.PackedOffsets), every token-wise step
// (quantise, GEMM with its epilogue, LayerNorm, Add, activation, FP32
// Linear) then runs on those rows only, attention runs per sequence at
// its own length with no mask (nn.AttentionPacked; a position bias
// proved by passes.MarkPositionOnlyBias is computed at the padded length
// and each sequence reads its top-left corner), and a Gather along
// the sequence axis (the pooler's first token) picks each sequence's row
// (nn.GatherPacked). A graph output that is per token leaves Run in the
// padded layout [batch, seq, ...], padding rows zero. Every sequence gets
// the bits it gets when run alone (with no padding): the token-wise
// kernels compute each row from that row only, and a sequence alone
// attends to the same keys in the same order.
//
// Which steps are token-wise is decided at Lower (planPacking), by
// following the embedding's output through the steps. A schedule whose
// per-token values reach any other kind of step (a generic op, a Gather
// along another axis, an Add with a value of another layout, attention
// without the mask the batch's lengths come from) is not packed: it runs
// padded, and PackingReason says why. So is one whose mask fill is not
// low enough (compiler.MaxZeroingMaskFill) for the padded keys' softmax
// weights to be exactly zero, as skipping them assumes. At run time a batch runs padded
// when its mask is not ones-then-zeros per row (or a row is all zeros),
// and when no row is padded (then both layouts are the same).

// packPlan is what Lower decided about packing a schedule.
type packPlan struct {
	// ok is set when the schedule can run packed; otherwise reason says
	// why not (the zero packPlan: a schedule Lower did not make).
	ok     bool
	reason string
	// ids is the input the embedding reads ([batch, seq]); mask the
	// attention-mask input the lengths come from.
	ids, mask SlotID
	// tokenWise marks slots holding one row per token: packed, when the
	// batch is, to [tokens, ...].
	tokenWise []bool
}

// packing is one Run's layout: offsets nil when the batch runs padded.
type packing struct {
	offsets []int // row offsets of the sequences, len batch+1; nil: padded
	lengths []int
	buf     []int // offsets' storage, kept between runs
	seq     int   // the padded length of the inputs
}

// PackingReason is "" when s runs batches packed (padding-free), or why
// it runs them padded.
func (s *Schedule) PackingReason() string {
	if !s.pack.ok && s.pack.reason == "" {
		return "not lowered by Lower"
	}
	return s.pack.reason
}

// TokenWise reports whether slot id holds one row per token, so that a
// packed batch holds it as [tokens, ...] (false for every slot when the
// schedule runs padded: PackingReason).
func (s *Schedule) TokenWise(id SlotID) bool {
	return s.pack.ok && id != NoSlot && s.pack.tokenWise[id]
}

// planPacking decides whether s can run packed batches, and which slots
// are token-wise.
func planPacking(s *Schedule) packPlan {
	pl := packPlan{ids: NoSlot, mask: NoSlot, tokenWise: make([]bool, len(s.slots))}
	no := func(format string, args ...any) packPlan {
		return packPlan{reason: fmt.Sprintf(format, args...), ids: NoSlot, mask: NoSlot}
	}
	tok := pl.tokenWise
	// corner marks DisentangledBiasStep outputs of a packed batch: each
	// sequence's bias in its corner of the padded [batch, heads, seq,
	// seq], which only an attention step's bias may read.
	corner := make([]bool, len(s.slots))
	var maskOut SlotID = NoSlot
	for i, st := range s.steps {
		anyTok := false
		label := func() string { return fmt.Sprintf("step #%d %s (node %q)", i, st.Call(), st.Source()) }
		for _, id := range st.Operands().Reads {
			anyTok = anyTok || tok[id]
			if a, ok := st.(*AttentionStep); corner[id] && (!ok || a.Bias != id || a.Q == id || a.K == id || a.V == id || a.Mask == id) {
				return no("%s: reads a packed relative bias, which only attention's bias input may", label())
			}
		}
		switch x := st.(type) {
		case *EmbedStep:
			if pl.ids != NoSlot {
				return no("%s: a second embedding step", label())
			}
			if s.slots[x.IDs].Kind != SlotInput || (x.TypeIDs != NoSlot && s.slots[x.TypeIDs].Kind != SlotInput) {
				return no("%s: its ids are not graph inputs", label())
			}
			pl.ids, tok[x.Out] = x.IDs, true
		case *AttentionMaskStep:
			if s.slots[x.Mask].Kind != SlotInput {
				return no("%s: its mask is not a graph input", label())
			}
			if maskOut != NoSlot {
				return no("%s: a second attention mask", label())
			}
			if !(x.Fill <= compiler.MaxZeroingMaskFill) {
				return no("%s: its fill %g leaves padded keys a weight (packing skips them, which needs a fill <= %g)", label(), x.Fill, compiler.MaxZeroingMaskFill)
			}
			pl.mask, maskOut = x.Mask, x.Out
		case *QuantizeStep, *QuantizeRowsStep, *LinearF32Step, *LayerNormStep, *ActivationStep:
			// Row-wise kernels of one input: each output row (and row
			// scale) comes from the same row of it.
			ops := st.Operands()
			for _, id := range ops.Writes {
				tok[id] = tok[ops.Reads[0]]
			}
		case *GEMMStep:
			if x.Residual != NoSlot && tok[x.Residual] != tok[x.A] {
				return no("%s: a residual of another layout than its input", label())
			}
			tok[x.Out] = tok[x.A]
			if x.Norm != nil { // row-wise of Out
				for _, id := range slots(x.Norm.Out, x.Norm.OutU8) {
					tok[id] = tok[x.A]
				}
			}
		case *AddStep:
			if anyTok {
				for _, id := range []SlotID{x.A, x.B} {
					if !tok[id] && !rowBroadcast(s.slots[id]) {
						return no("%s: adds %s, which is neither per token nor one row", label(), s.slots[id])
					}
				}
				tok[x.Out] = true
			}
		case *AttentionStep:
			if anyTok {
				for _, id := range []SlotID{x.Q, x.K, x.V} {
					if id != NoSlot && !tok[id] {
						return no("%s: an operand not per token", label())
					}
				}
				if x.Mask == NoSlot || x.Mask != maskOut {
					return no("%s: attends without the graph's attention mask", label())
				}
				if x.Bias != NoSlot && !corner[x.Bias] && (!x.BiasByPosition || tok[x.Bias]) {
					return no("%s: adds a bias to the scores that is not proved to depend on positions only (passes.MarkPositionOnlyBias)", label())
				}
				tok[x.Out] = true
			}
		case *DisentangledBiasStep:
			// Per sequence: its rows, and the position-only tables'
			// corner (nn.DisentangledBiasPacked).
			if anyTok {
				for _, id := range []SlotID{x.Q, x.K} {
					if id != NoSlot && !tok[id] {
						return no("%s: relative terms of rows that are not per token", label())
					}
				}
				for _, id := range []SlotID{x.PosKey, x.C2P, x.PosQuery, x.P2C} {
					if id != NoSlot && (tok[id] || s.slots[id].Kind == SlotInput) {
						return no("%s: relative embeddings or index tables that are per token or inputs", label())
					}
				}
				corner[x.Out] = true
			}
		case *RotaryStep:
			if anyTok {
				if !tok[x.X] || tok[x.Cos] || tok[x.Sin] || !x.TablesByPosition {
					return no("%s: rotary tables not proved to depend on positions only (passes.MarkPositionOnlyBias)", label())
				}
				tok[x.Out] = true
			}
		case *MaskedSumStep:
			// A sum per sequence: its output is not per token.
			if anyTok && (!tok[x.X] || s.slots[x.Mask].Kind != SlotInput || (pl.mask != NoSlot && x.Mask != pl.mask)) {
				return no("%s: sums a value that is not per token, or with another mask than the graph's attention mask", label())
			}
		case *MulStep:
			if anyTok {
				if !tok[x.A] || !tok[x.B] {
					return no("%s: multiplies a value that is not per token", label())
				}
				tok[x.Out] = true
			}
		case *GatherStep:
			if tok[x.Indices] {
				return no("%s: per-token indices", label())
			}
			if tok[x.Data] {
				sh := s.slots[x.Data].Shape
				if x.Axis != 1 || len(sh) != 3 || s.slots[x.Indices].Kind != SlotConst {
					return no("%s: a per-token value gathered other than at constant positions of each sequence", label())
				}
			}
		case *OpStep:
			if !anyTok {
				break
			}
			if !trailingAxesOp(s, x, tok) {
				return no("%s: reads a per-token value (no packed form)", label())
			}
			for _, id := range x.Outputs {
				if id != NoSlot {
					tok[id] = true
				}
			}
		default:
			if anyTok {
				return no("%s: reads a per-token value (no packed form)", label())
			}
		}
	}
	switch {
	case pl.ids == NoSlot:
		return no("no fused embedding step")
	case pl.mask == NoSlot:
		return no("no attention mask input: sequences are not padded")
	}
	for _, id := range s.outputSlots {
		if corner[id] {
			return no("output %s is a packed relative bias", s.slots[id])
		}
		if tok[id] && s.slots[id].DType != compiler.Float32 {
			return no("output %s is per token and %s (only f32 ones are unpacked)", s.slots[id], s.slots[id].DType)
		}
	}
	pl.ok = true
	return pl
}

// trailingAxesOp reports whether generic step x is a Squeeze or Slice of
// a per-token value along constant negative axes past [batch, sequence]
// (a question answerer's column of its [batch, seq, 2] logits, squeezed
// to [batch, seq]): each token's result comes from its own row, and a
// negative axis names the same dimension of the packed [tokens, ...] as
// of the padded [batch, seq, ...], so the generic kernel computes either
// layout. Squeeze without axes (which would squeeze a one-token batch's
// tokens) and positive axes are not.
func trailingAxesOp(s *Schedule, x *OpStep, tok []bool) bool {
	if len(x.Inputs) == 0 || x.Inputs[0] == NoSlot || !tok[x.Inputs[0]] {
		return false
	}
	rank := len(s.slots[x.Inputs[0]].Shape)
	constant := func(i int) ([]int64, bool) {
		if i >= len(x.Inputs) || x.Inputs[i] == NoSlot {
			return nil, true // absent
		}
		c := s.slots[x.Inputs[i]]
		if c.Kind != SlotConst || c.Const == nil || c.Const.DType != compiler.Int64 {
			return nil, false
		}
		return c.Const.I64, true
	}
	for i := 1; i < len(x.Inputs); i++ {
		if _, ok := constant(i); !ok {
			return false // a per-token or computed operand
		}
	}
	var axes []int64
	switch x.Op.Op {
	case "Squeeze":
		if len(x.Inputs) > 1 {
			axes, _ = constant(1)
		} else {
			axes, _ = x.Op.Attrs.Ints("axes")
		}
	case "Slice":
		if len(x.Inputs) < 4 {
			return false // attribute Slice (opset < 10), or axes defaulting to the first ones
		}
		axes, _ = constant(3)
	default:
		return false
	}
	if len(axes) == 0 || rank < 3 {
		return false
	}
	for _, a := range axes {
		if a >= 0 || int(a) < 2-rank {
			return false
		}
	}
	return true
}

// rowBroadcast reports whether a slot is a constant of one row ([N] or
// [1, ..., N]), which adds to every token alike.
func rowBroadcast(s *Slot) bool {
	if s.Kind != SlotConst || s.Const == nil {
		return false
	}
	sh := s.Const.Shape
	for _, d := range sh[:max(len(sh)-1, 0)] {
		if d != 1 {
			return false
		}
	}
	return true
}

// bindPacking decides how this Run lays out the batch: packed when the
// schedule allows, the mask is right-padding (ones then zeros, at least
// one one per row) and some row is padded.
func (p *Program) bindPacking() {
	p.run.offsets = nil
	if !p.pack.ok || p.padded {
		return
	}
	ids, mask := p.bufs[p.pack.ids], p.bufs[p.pack.mask]
	if ids == nil || mask == nil || mask.DType != compiler.Int64 || len(mask.Shape) != 2 || len(ids.Shape) != 2 ||
		ids.Shape[0] != mask.Shape[0] || ids.Shape[1] != mask.Shape[1] {
		return // padded, where the steps check the shapes
	}
	batch, seq := int(mask.Shape[0]), int(mask.Shape[1])
	lengths, ok := nn.MaskLengths(p.run.lengths, mask.I64, batch, seq)
	p.run.lengths = lengths
	if !ok {
		return
	}
	p.run.buf = nn.PackedOffsets(p.run.buf, lengths)
	p.run.offsets = p.run.buf
	p.run.seq = seq
}

// unpackRows writes the packed f32 rows of src ([tokens, ...]) into dst
// in the padded layout [batch, seq, ...] of the run, padding rows zero.
func (r *packing) unpackRows(dst, src *compiler.Tensor) {
	if dst.DType != compiler.Float32 {
		*dst = compiler.Tensor{}
	}
	// Each token's values: a per-token output of [batch, seq] (a
	// question answerer's logits) is [tokens] packed, one value a token.
	width := int(compiler.NumElements(src.Shape[1:]))
	var buf [8]int64
	shape := append(append(buf[:0], int64(len(r.lengths)), int64(r.seq)), src.Shape[1:]...)
	resize(dst, compiler.Float32, shape...)
	clear(dst.F32)
	for b, l := range r.lengths {
		copy(dst.F32[b*r.seq*width:][:l*width], src.F32[r.offsets[b]*width:][:l*width])
	}
}
