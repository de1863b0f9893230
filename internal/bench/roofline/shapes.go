package roofline

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// shapes resolves a Program's symbolic slot shapes for one batch and
// sequence length: the graph inputs are [batch, sequence], which names
// the two symbols every other shape is written in.
type shapes struct {
	slots  []*exec.Slot
	params map[string]int
}

func newShapes(p *exec.Program, batch, seq int) shapes {
	s := shapes{slots: p.Slots(), params: map[string]int{}}
	for _, id := range p.InputSlots() {
		sh := s.slots[id].Shape
		if len(sh) == 2 {
			if sh[0].Param != "" {
				s.params[sh[0].Param] = batch
			}
			if sh[1].Param != "" {
				s.params[sh[1].Param] = seq
			}
		}
	}
	return s
}

// of returns slot id's concrete shape, or false if a dim is unknown.
func (s shapes) of(id exec.SlotID) ([]int, bool) {
	if id == exec.NoSlot || int(id) >= len(s.slots) {
		return nil, false
	}
	sl := s.slots[id]
	if sl.Const != nil {
		out := make([]int, len(sl.Const.Shape))
		for i, d := range sl.Const.Shape {
			out[i] = int(d)
		}
		return out, true
	}
	if sl.Shape == nil {
		return nil, false
	}
	out := make([]int, len(sl.Shape))
	for i, d := range sl.Shape {
		switch {
		case d.Param != "":
			v, ok := s.params[d.Param]
			if !ok {
				return nil, false
			}
			out[i] = v
		case d.Size >= 0:
			out[i] = int(d.Size)
		default:
			return nil, false
		}
	}
	return out, true
}

// rows returns the product of slot id's leading dims and its last dim.
func (s shapes) rows(id exec.SlotID) (rows, last int, ok bool) {
	sh, ok := s.of(id)
	if !ok || len(sh) == 0 {
		return 0, 0, false
	}
	rows = 1
	for _, d := range sh[:len(sh)-1] {
		rows *= d
	}
	return rows, sh[len(sh)-1], true
}

// elems is the element count of slot id.
func (s shapes) elems(id exec.SlotID) (int, bool) {
	sh, ok := s.of(id)
	if !ok {
		return 0, false
	}
	return int(compiler.NumElements(int64s(sh))), true
}

func int64s(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}
