package codegen

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// step places the slots of step i (its exec.Operands) and records its
// constants, with the checks a kind's generated form needs.
func (pl *plan) step(i int, st exec.Step) error {
	if s, ok := st.(*exec.OpStep); ok {
		return pl.opStep(i, s) // plan_ops.go
	}
	if s, ok := st.(*exec.QuantizeRowsStep); ok {
		if _, err := pl.use(i, s.X, st); err != nil {
			return err
		}
		x := pl.slots[s.X]
		for _, id := range []exec.SlotID{s.Scales, s.ZeroPoints} {
			// One value per row of X: the shape exec leaves unknown.
			sp := pl.slots[id]
			sp.shape = nil
			sp.home, sp.extent, sp.width = homeArena, x.rows(), 1
		}
	}
	ops := st.Operands()
	for _, id := range append(ops.Reads, ops.Writes...) {
		if _, err := pl.use(i, id, st); err != nil {
			return err
		}
	}
	switch s := st.(type) {
	case *exec.QuantizeStep, *exec.QuantizeRowsStep, *exec.AttentionMaskStep, *exec.AddStep, *exec.MulStep, *exec.ActivationStep, *exec.RotaryStep, *exec.MaskedSumStep:
		// operands and no constants
	case *exec.GEMMStep: // its weights in order of first use, as linearParams lists them
		pl.addParams(s, "linear", pkgQgemm, "Linear", pl.linearParams(s))
		if s.Norm != nil {
			pl.layerNorm(s.Norm)
		}
	case *exec.LinearF32Step:
		pl.f32Weight(s.Weight, s.W)
		if s.Bias != nil {
			pl.f32Weight(s.BiasName, s.Bias)
		}
	case *exec.LayerNormStep:
		pl.layerNorm(s)
	case *exec.AttentionStep:
		q := pl.slots[s.Q]
		width := attentionWidth(s, q)
		if q.extent != (extent{Batch: true, Seq: 1, Elems: q.width}) || width%s.Heads != 0 || (s.Packed && q.width%3 != 0) {
			return fmt.Errorf("%w: codegen: step #%d (node %q): attention on %s with %d heads", compiler.ErrUnsupportedOp, i, s.Node, q.shape, s.Heads)
		}
		pl.maxHeadDim = max(pl.maxHeadDim, width/s.Heads)
		pl.int8Attention = pl.int8Attention || s.Int8
		for _, id := range []exec.SlotID{s.Mask, s.Bias} {
			if id == exec.NoSlot {
				continue
			}
			if _, err := pl.maskStrides(pl.slots[id], s.Heads); err != nil {
				return fmt.Errorf("codegen: step #%d (node %q): %w", i, s.Node, err)
			}
		}
	case *exec.DisentangledBiasStep:
		// exec's DisentangledBiasStep.run: rows [batch, seq, heads*d] and
		// embeddings [rows, heads*d] per term, on the padded batch.
		for _, t := range [][2]exec.SlotID{{s.Q, s.PosKey}, {s.K, s.PosQuery}} {
			if t[0] == exec.NoSlot {
				continue
			}
			x, emb := pl.slots[t[0]], pl.slots[t[1]]
			if x.extent != (extent{Batch: true, Seq: 1, Elems: x.width}) || s.Heads <= 0 || x.width%s.Heads != 0 ||
				len(emb.shape) != 2 || !emb.shape[0].Known() || emb.width != x.width || emb.home != homeWeight {
				return fmt.Errorf("%w: codegen: step #%d (node %q): relative terms of %s with embeddings %s and %d heads",
					compiler.ErrUnsupportedOp, i, s.Node, x.shape, emb.shape, s.Heads)
			}
			pl.maxHeadDim = max(pl.maxHeadDim, x.width/s.Heads)
			pl.relativeRows = max(pl.relativeRows, int(emb.shape[0].Size))
		}
	case *exec.EmbedStep:
		pl.addParams(s, "embeddings", pkgNN, "Embeddings", pl.embedParams(s))
		e := &s.Params
		if s.TypeIDs != exec.NoSlot { // else type 0 for every token: no token types to give
			pl.typeVocab = len(e.TokenTypes) / e.Hidden
		}
		pl.vocab = len(e.Words) / e.Hidden
		if longest := e.MaxSequence(); pl.maxSeq > longest {
			return fmt.Errorf("%w: codegen: maximum sequence %d exceeds the %d positions of %q", compiler.ErrInvalidRequest, pl.maxSeq, longest, s.PosName)
		}
		if ids := pl.slots[s.IDs]; ids.home != homeInput || (s.TypeIDs != exec.NoSlot && pl.slots[s.TypeIDs].home != homeInput) {
			return fmt.Errorf("%w: codegen: step #%d (node %q): embedding ids must be graph inputs", compiler.ErrUnsupportedOp, i, s.Node)
		}
	case *exec.GatherStep:
		data, ix := pl.slots[s.Data], pl.slots[s.Indices]
		if data.home == homeWeight && s.Axis == 0 && ix.home == homeInput {
			rows := data.extent.Elems / max(data.width, 1)
			switch ix.input {
			case "ids":
				pl.vocab = rows
			case "types":
				pl.typeVocab = rows
			}
		}
		_, _, _, err := pl.gatherDims(s)
		return err
	default:
		return fmt.Errorf("%w: codegen: step #%d: no emitter for %s (%T)", compiler.ErrUnsupportedOp, i, st.Call(), st)
	}
	return nil
}

// layerNorm records a LayerNorm's constants: its nn.LayerNormParams, and
// for nn.LayerNormDual the u8 output's gamma and beta.
func (pl *plan) layerNorm(s *exec.LayerNormStep) {
	pl.addParams(s, "layerNorm", pkgNN, "LayerNormParams", pl.normParams(s))
	if s.GammaU8 != nil {
		pl.f32Weight(s.GammaU8Name, s.GammaU8)
		if s.BetaU8 != nil {
			pl.f32Weight(s.BetaU8Name, s.BetaU8)
		}
	}
}

// maskStrides are nn.AttentionDims' mask (or bias) strides for an
// additive term of the scores of the given slot broadcast to [batch,
// heads, seq, seq] with keys contiguous, as exec computes them at run time
// from its shape.
func (pl *plan) maskStrides(m *slotPlan, heads int) ([3]extent, error) {
	var strides [3]extent
	shape := m.shape
	r := len(shape)
	bad := fmt.Errorf("%w: attention mask %s does not broadcast to [batch, %d, sequence, sequence] with keys contiguous", compiler.ErrUnsupportedOp, shape, heads)
	if r == 0 || r > 4 || shape[r-1].Param != pl.seq {
		return strides, bad
	}
	full := [4]compiler.Dim{{Size: -1, Param: pl.batch}, {Size: int64(heads)}, {Size: -1, Param: pl.seq}, {Size: -1, Param: pl.seq}}
	stride := extent{Elems: 1}
	for i := 3; i >= 0; i-- {
		j := i - (4 - r)
		if j < 0 {
			continue
		}
		d := shape[j]
		switch {
		case d.Param != "" && d.Param == full[i].Param, d.Known() && full[i].Known() && d.Size == full[i].Size:
			if i < 3 {
				strides[i] = stride
			}
		case d.Known() && d.Size == 1:
		default:
			return strides, bad
		}
		switch {
		case d.Param == pl.batch:
			stride.Batch = true
		case d.Param == pl.seq && stride.Seq < maxSeqPower:
			stride.Seq++
		case d.Known():
			stride.Elems *= int(d.Size)
		default:
			return strides, bad
		}
	}
	return strides, nil
}

// gatherDims are nn.Gather's outer, dim and inner for a GatherStep: the
// data's dims before, at and after the axis.
func (pl *plan) gatherDims(s *exec.GatherStep) (outer, dim extent, inner int, err error) {
	data := pl.slots[s.Data]
	shape := data.shape
	if data.home == homeWeight {
		shape = compiler.StaticShape(pl.prog.Slots()[s.Data].Const.Shape...)
	}
	bad := fmt.Errorf("%w: codegen: Gather (node %q) of %s along axis %d", compiler.ErrUnsupportedOp, s.Node, shape, s.Axis)
	if s.Axis >= len(shape) {
		return outer, dim, 0, bad
	}
	outer, _, okOuter := pl.extentOf(shape[:s.Axis])
	dim, _, okDim := pl.extentOf(shape[s.Axis : s.Axis+1])
	in, _, okIn := pl.extentOf(shape[s.Axis+1:])
	if !okOuter || !okDim || !okIn || in.Batch || in.Seq > 0 {
		return outer, dim, 0, bad
	}
	return outer, dim, in.Elems, nil
}

// attentionWidth is the width (heads x head dim) of an attention step's
// output: its Q operand's, or a third of it when Q, K and V are packed.
func attentionWidth(s *exec.AttentionStep, q *slotPlan) int {
	if s.Packed {
		return exec.PackedAttentionLayout(q.width).Width
	}
	return q.width
}
