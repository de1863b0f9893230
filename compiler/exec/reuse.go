package exec

import (
	"cmp"
	"reflect"
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
// A step's slots are found by reflection, once at Compile: every SlotID
// reachable from the step through fields of this package's types, slices,
// arrays, maps, pointers and interfaces (e.g. a []SlotID of operands, or a
// sub-step held as a Step). A step type added later is covered without
// further code, and so is a slot field added to an existing one; the
// reflection never runs on the Run path.

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
	w := slotWalker{this: reflect.TypeFor[SlotID]().PkgPath(), may: map[reflect.Type]bool{}}
	var ids []SlotID
	for i, st := range p.steps {
		ids = w.slots(ids[:0], st)
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

// slotWalker finds the SlotIDs a step mentions by reflection.
type slotWalker struct {
	this    string                // this package's import path
	may     map[reflect.Type]bool // whether a value of the type can hold a SlotID
	visited map[uintptr]bool      // pointers followed in the current step
}

var slotIDType = reflect.TypeFor[SlotID]()

// slots appends the slots step s mentions to dst (NoSlot left out,
// repeats kept).
func (w *slotWalker) slots(dst []SlotID, s Step) []SlotID {
	w.visited = map[uintptr]bool{}
	return w.walk(dst, reflect.ValueOf(s))
}

func (w *slotWalker) walk(dst []SlotID, v reflect.Value) []SlotID {
	if !v.IsValid() || !w.mayHold(v.Type()) {
		return dst
	}
	if v.Type() == slotIDType {
		if id := SlotID(v.Int()); id != NoSlot {
			dst = append(dst, id)
		}
		return dst
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || w.visited[v.Pointer()] {
			return dst
		}
		w.visited[v.Pointer()] = true
		return w.walk(dst, v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return dst
		}
		return w.walk(dst, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			dst = w.walk(dst, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			dst = w.walk(dst, v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			dst = w.walk(w.walk(dst, it.Key()), it.Value())
		}
	}
	return dst
}

// mayHold reports whether a value of type t can hold a SlotID: SlotID
// itself, an interface (its dynamic value may), or a type built from
// these out of this package's named types and unnamed composites. Named
// types of other packages cannot name SlotID (they would import this
// package) and are not descended into, which keeps large arrays such as
// packed weights out of the walk.
func (w *slotWalker) mayHold(t reflect.Type) bool {
	if may, ok := w.may[t]; ok {
		return may
	}
	if t == slotIDType || t.Kind() == reflect.Interface {
		w.may[t] = true
		return true
	}
	if t.Name() != "" && t.PkgPath() != w.this {
		w.may[t] = false
		return false
	}
	w.may[t] = true // assumed while t's parts are looked at: recursive types end here
	may := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		may = w.mayHold(t.Elem())
	case reflect.Map:
		may = w.mayHold(t.Key()) || w.mayHold(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			may = may || w.mayHold(t.Field(i).Type)
		}
	}
	w.may[t] = may
	return may
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
