package codegen

import (
	"errors"
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// step places the slots of step i and records its constants.
func (pl *plan) step(i int, st exec.Step) error {
	use := func(ids ...exec.SlotID) error {
		for _, id := range ids {
			if _, err := pl.use(i, id, st); err != nil {
				return err
			}
		}
		return nil
	}
	switch s := st.(type) {
	case *exec.OpStep:
		return pl.opStep(i, s) // plan_ops.go
	case *exec.QuantizeStep:
		return use(s.X, s.Out)
	case *exec.QuantizeRowsStep:
		if err := use(s.X, s.Out); err != nil {
			return err
		}
		pl.dynamic = true
		x := pl.slots[s.X]
		for _, id := range []exec.SlotID{s.Scales, s.ZeroPoints} {
			// One value per row of X: the shape exec leaves unknown.
			sp := pl.slots[id]
			sp.shape = nil
			sp.home, sp.extent, sp.width = homeArena, x.rows(), 1
			sp.arena = arenaF32
			if sp.dtype == compiler.Int32 {
				sp.arena = arenaI32
			}
		}
		return use(s.Scales, s.ZeroPoints)
	case *exec.GEMMStep:
		pl.packedWeight(s.Weight, s.B)
		pl.f32Weight(s.Weight+".scale", s.Scale)
		if s.Bias != nil {
			pl.f32Weight(s.BiasName, s.Bias)
		}
		return use(s.A, s.RowScale, s.RowZeroPoint, s.Residual, s.Out)
	case *exec.LinearF32Step:
		pl.f32Weight(s.Weight, s.W)
		if s.Bias != nil {
			pl.f32Weight(s.BiasName, s.Bias)
		}
		return use(s.X, s.Out)
	case *exec.LayerNormStep:
		pl.f32Weight(s.GammaName, s.Params.Gamma)
		if s.Params.Beta != nil {
			pl.f32Weight(s.BetaName, s.Params.Beta)
		}
		if s.GammaU8 != nil { // nn.LayerNormDual's u8 output parameters
			pl.f32Weight(s.GammaU8Name, s.GammaU8)
			if s.BetaU8 != nil {
				pl.f32Weight(s.BetaU8Name, s.BetaU8)
			}
		}
		return use(s.X, s.Out, s.OutU8)
	case *exec.AttentionStep:
		if err := use(s.Q, s.K, s.V, s.Mask, s.Out); err != nil {
			return err
		}
		q := pl.slots[s.Q]
		width := attentionWidth(s, q)
		if q.extent != (extent{Batch: true, Seq: true, Elems: q.width}) || width%s.Heads != 0 || (s.Packed && q.width%3 != 0) {
			return fmt.Errorf("%w: codegen: step #%d (node %q): attention on %s with %d heads", compiler.ErrUnsupportedOp, i, s.Node, q.shape, s.Heads)
		}
		pl.maxHeadDim = max(pl.maxHeadDim, width/s.Heads)
		if s.Mask != exec.NoSlot {
			if _, err := pl.maskStrides(pl.slots[s.Mask], s.Heads); err != nil {
				return fmt.Errorf("codegen: step #%d (node %q): %w", i, s.Node, err)
			}
		}
		return nil
	case *exec.AttentionMaskStep:
		return use(s.Mask, s.Out)
	case *exec.AddStep:
		return use(s.A, s.B, s.Out)
	case *exec.ActivationStep:
		return use(s.X, s.Out)
	case *exec.EmbedStep:
		e := &s.Params
		pl.f32Weight(s.WordName, e.Words)
		pl.f32Weight(s.PosName, e.Positions)
		if e.TokenTypes != nil {
			pl.f32Weight(s.TypeName, e.TokenTypes)
		}
		if s.TypeIDs != exec.NoSlot { // else type 0 for every token: no token types to give
			pl.typeVocab = len(e.TokenTypes) / e.Hidden
		}
		if st.Call() == "nn.Embed" {
			pl.f32Weight(s.GammaName, e.Norm.Gamma)
			if e.Norm.Beta != nil {
				pl.f32Weight(s.BetaName, e.Norm.Beta)
			}
		}
		pl.vocab = len(e.Words) / e.Hidden
		if longest := e.MaxSequence(); pl.maxSeq > longest {
			return fmt.Errorf("%w: codegen: maximum sequence %d exceeds the %d positions of %q", compiler.ErrInvalidRequest, pl.maxSeq, longest, s.PosName)
		}
		if ids := pl.slots[s.IDs]; ids.home != homeInput || (s.TypeIDs != exec.NoSlot && pl.slots[s.TypeIDs].home != homeInput) {
			return fmt.Errorf("%w: codegen: step #%d (node %q): embedding ids must be graph inputs", compiler.ErrUnsupportedOp, i, s.Node)
		}
		return use(s.IDs, s.TypeIDs, s.Out)
	case *exec.GatherStep:
		if err := use(s.Data, s.Indices, s.Out); err != nil {
			return err
		}
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
	}
	return fmt.Errorf("%w: codegen: step #%d: no emitter for %s (%T)", compiler.ErrUnsupportedOp, i, st.Call(), st)
}

// view handles the generic steps of shape plumbing before the encoder that
// need no statement: Shape of the ids, Gather of a constant position in
// it, and the Slice of the first `sequence` rows of the position table,
// which becomes a prefix of that table. It reports false, having changed
// nothing, for a step of another form, which is then emitted as a call.
func (pl *plan) view(i int, s *exec.OpStep) (bool, error) {
	n := s.Op
	bad := func(string) error { return errNotView }
	in := func(j int) *slotPlan {
		if j >= len(s.Inputs) || s.Inputs[j] == exec.NoSlot {
			return nil
		}
		return pl.slots[s.Inputs[j]]
	}
	constOf := func(j int) []int64 {
		if j >= len(s.Inputs) || s.Inputs[j] == exec.NoSlot {
			return nil
		}
		slot := pl.prog.Slots()[s.Inputs[j]]
		if slot.Kind != exec.SlotConst || slot.Const == nil {
			return nil
		}
		switch slot.Const.DType {
		case compiler.Int64:
			return slot.Const.I64
		case compiler.Int32:
			out := make([]int64, len(slot.Const.I32))
			for k, v := range slot.Const.I32 {
				out[k] = int64(v)
			}
			return out
		}
		return nil
	}
	if len(s.Outputs) != 1 || s.Outputs[0] == exec.NoSlot {
		return false, nil
	}
	out := pl.slots[s.Outputs[0]]
	err := pl.viewOf(n, out, in, constOf, s, bad)
	if err == errNotView {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	pl.views[i] = true
	return true, nil
}

// errNotView is viewOf's answer for a step that is not a view.
var errNotView = errors.New("not a view")

// viewOf makes out the view that generic node n computes, or returns
// bad's errNotView when n is not of a form view handles.
func (pl *plan) viewOf(n *ops.Node, out *slotPlan, in func(int) *slotPlan, constOf func(int) []int64, s *exec.OpStep, bad func(string) error) error {
	switch n.Op {
	case "Shape":
		x := in(0)
		if x == nil || x.home != homeInput || len(n.Attrs) != 0 {
			return bad("only the Shape of a token input is supported")
		}
		out.home, out.sym = homeSym, []symDim{{batch: true, c: 1}, {seq: true, c: 1}}
		return nil
	case "Gather":
		x, idx := in(0), constOf(1)
		if x == nil || x.home != homeSym || idx == nil {
			return bad("only constant positions of a symbolic shape are supported")
		}
		var sym []symDim
		for _, k := range idx {
			if k < 0 {
				k += int64(len(x.sym))
			}
			if k < 0 || k >= int64(len(x.sym)) {
				return bad(fmt.Sprintf("position %d out of range", k))
			}
			sym = append(sym, x.sym[k])
		}
		out.home, out.sym = homeSym, sym
		return nil
	case "Slice":
		table := pl.prog.Slots()[s.Inputs[0]]
		starts, ends := constOf(1), in(2)
		axes := []int64{0}
		if len(s.Inputs) > 3 && s.Inputs[3] != exec.NoSlot {
			axes = constOf(3)
		}
		if len(s.Inputs) > 4 && s.Inputs[4] != exec.NoSlot {
			if st := constOf(4); len(st) != 1 || st[0] != 1 {
				return bad("steps must be 1")
			}
		}
		t := table.Const
		if table.Kind != exec.SlotConst || t == nil || t.DType != compiler.Float32 || len(t.Shape) != 2 ||
			len(starts) != 1 || starts[0] != 0 || ends == nil || ends.home != homeSym || len(ends.sym) != 1 ||
			!ends.sym[0].seq || ends.sym[0].batch || len(axes) != 1 || axes[0] != 0 {
			return bad("only the first `sequence` rows of a constant table are supported")
		}
		if rows := int(t.Shape[0]); pl.maxSeq > rows {
			return fmt.Errorf("%w: codegen: maximum sequence %d exceeds the %d rows of %q", compiler.ErrInvalidRequest, pl.maxSeq, rows, table.Name)
		}
		width := int(t.Shape[1])
		out.home, out.weight, out.width = homeWeight, pl.f32Weight(table.Name, t.F32), width
		out.extent = extent{Seq: true, Elems: width}
		return nil
	}
	return bad("no view form")
}

// maskStrides are nn.AttentionDims' mask strides for a mask of the given
// slot broadcast to [batch, heads, seq, seq] with keys contiguous, as
// exec computes them at run time from the mask's shape.
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
		case d.Param == pl.seq && !stride.Seq:
			stride.Seq = true
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
	var shape compiler.Shape
	if data.home == homeWeight {
		shape = compiler.StaticShape(pl.prog.Slots()[s.Data].Const.Shape...)
	} else {
		shape = data.shape
	}
	bad := fmt.Errorf("%w: codegen: Gather (node %q) of %s along axis %d", compiler.ErrUnsupportedOp, s.Node, shape, s.Axis)
	if s.Axis >= len(shape) {
		return outer, dim, 0, bad
	}
	var ok bool
	if outer, _, ok = pl.extentOf(shape[:s.Axis]); !ok {
		return outer, dim, 0, bad
	}
	if dim, _, ok = pl.extentOf(shape[s.Axis : s.Axis+1]); !ok {
		return outer, dim, 0, bad
	}
	in, _, ok := pl.extentOf(shape[s.Axis+1:])
	if !ok || in.Batch || in.Seq {
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
