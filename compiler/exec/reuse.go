package exec

import (
	"cmp"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// Activation buffers are shared by lifetime: two slots whose live ranges
// (first to last step that mentions them, inclusive, so that no step's
// inputs and outputs share) do not overlap get the same *compiler.Tensor,
// which every step resizes to what it writes. Sharing is within one dtype,
// so a shared tensor only ever grows the one slice of that dtype. Graph
// inputs, constants and outputs (read by RunInto after the last step) are
// never shared, nor are the slots of an OpStep, which replaces its
// outputs' tensors with ones the generic kernel made (possibly views of
// its inputs). Run holds p.mu for the whole call, so concurrent calls never
// see each other's use of a shared buffer.
//
// A step's slots are its Operands, which each step kind lists beside its
// fields (operands.go; a test checks they cover every slot field).

// newBuffers returns the per-slot tensors of p: constants their
// initializer, graph inputs nil (bound by Run), every other slot a tensor
// of its own or, when reuse is set, one shared with slots of the same
// dtype whose live ranges are disjoint.
func (p *Program) newBuffers(reuse bool) []*compiler.Tensor {
	bufs := make([]*compiler.Tensor, len(p.slots))
	var ranges []liveRange
	pinned := make([]bool, len(p.slots))
	if reuse {
		ranges, pinned = p.liveRanges()
	}
	var shared []*liveSlot
	for _, s := range p.slots {
		switch {
		case s.Kind == SlotConst:
			bufs[s.ID] = s.Const
		case s.Kind == SlotInput:
		case !reuse || pinned[s.ID] || ranges[s.ID].first < 0 || s.DType == compiler.Undefined:
			bufs[s.ID] = &compiler.Tensor{}
		default:
			shared = append(shared, &liveSlot{id: s.ID, dtype: s.DType, size: sizeHint(s.Shape), liveRange: ranges[s.ID]})
		}
	}
	for _, c := range colour(shared) {
		t := &compiler.Tensor{}
		for _, s := range c.members {
			bufs[s.id] = t
		}
	}
	return bufs
}

// liveRange is the first and last step (indices into Program.steps) that
// mention a slot; first is -1 for a slot no step mentions.
type liveRange struct{ first, last int }

func (r liveRange) overlaps(o liveRange) bool { return r.first <= o.last && o.first <= r.last }

// liveRanges returns every slot's live range and which slots must keep a
// buffer of their own: graph outputs and the slots of OpSteps.
func (p *Program) liveRanges() ([]liveRange, []bool) {
	ranges := make([]liveRange, len(p.slots))
	for i := range ranges {
		ranges[i] = liveRange{-1, -1}
	}
	pinned := make([]bool, len(p.slots))
	for _, id := range p.outputSlots {
		pinned[id] = true
	}
	for i, st := range p.steps {
		ops := st.Operands()
		ids := append(ops.Reads[:len(ops.Reads):len(ops.Reads)], ops.Writes...)
		_, generic := st.(*OpStep)
		for _, id := range ids {
			if id < 0 || int(id) >= len(p.slots) {
				continue // not a slot of this program: nothing to share
			}
			r := &ranges[id]
			if r.first < 0 {
				r.first = i
			}
			r.last = i
			pinned[id] = pinned[id] || generic
		}
	}
	return ranges, pinned
}

// liveSlot is a slot that may share its buffer.
type liveSlot struct {
	id    SlotID
	dtype compiler.DType
	size  int64 // elements at sizeHint's sizes, for the order of colouring
	liveRange
}

// bufferColour is a set of slots sharing one buffer: same dtype, pairwise
// disjoint live ranges.
type bufferColour struct {
	dtype   compiler.DType
	size    int64 // its largest member's
	members []*liveSlot
}

// colour assigns the slots to buffers greedily by size, largest first,
// each to the first buffer (in order of creation, so the largest first)
// of its dtype whose members' live ranges it does not overlap, else to a
// new one. The largest buffers are made first and smaller values fill
// their idle spans, which keeps the sum of the buffers' sizes (what the
// shared tensors grow to) near the peak of live bytes, as the generated
// package's arena plan does by offsets.
func colour(live []*liveSlot) []*bufferColour {
	slices.SortStableFunc(live, func(a, b *liveSlot) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.first, b.first), cmp.Compare(a.id, b.id))
	})
	var colours []*bufferColour
	for _, s := range live {
		var into *bufferColour
		for _, c := range colours {
			if c.dtype == s.dtype && !slices.ContainsFunc(c.members, func(o *liveSlot) bool { return o.overlaps(s.liveRange) }) {
				into = c
				break
			}
		}
		if into == nil {
			into = &bufferColour{dtype: s.dtype, size: s.size}
			colours = append(colours, into)
		}
		into.members = append(into.members, s)
	}
	return colours
}

// sizeHint is a shape's element count with every symbolic or unknown dim
// taken as 1: for the [batch, seq, width] activations of an encoder,
// their width, which orders them as their sizes at any batch and
// sequence. Unknown shapes count 0. Only the colouring's order and so
// how well buffers pack depend on it, never correctness.
func sizeHint(shape compiler.Shape) int64 {
	if shape == nil {
		return 0
	}
	n := int64(1)
	for _, d := range shape {
		if d.Param == "" && d.Size > 0 {
			n *= d.Size
		}
	}
	return n
}
