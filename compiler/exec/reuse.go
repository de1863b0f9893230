package exec

import (
	"maps"
	"slices"
	"unsafe"

	"github.com/sqc-dev/sqc/compiler"
)

// Activation buffers are carved from one arena laid out by the
// Schedule's MemoryPlan (memplan.go): slots whose live ranges do not
// overlap share bytes, whatever their dtypes. A Program plans lazily, at
// the largest size of every symbolic dim run so far (0 bytes before the
// first Run): when a call brings a larger batch or sequence, RunInto plans
// again at the new bounds and carves the buffers from a new arena, so
// steady-state calls of sizes already seen allocate nothing, as before.
//
// Each carved buffer is a tensor whose storage has its planned capacity
// and no more, so a step writing more than planned (a dim the plan could
// not bound) reallocates that tensor on the heap instead of writing over
// a neighbour: correct, merely unplanned. Graph inputs and constants are
// not planned, nor are slots the plan cannot size (a generic op's result
// of unknown shape); those keep tensors of their own, grown by resize.
// A generic op (OpStep) returns tensors it made, possibly views of its
// inputs (Reshape) or the inputs themselves (Identity): a carved result is
// copied into its place, as the generated package does; an uncarved one
// takes the result's fields, and then the inputs of that step are not
// carved either, so no view aliases arena bytes a later step reuses. Run
// holds p.mu for the whole call, so concurrent calls never see each
// other's use of the arena.

// newBuffers returns the per-slot tensors of p: constants their
// initializer, graph inputs nil (bound by Run), every other slot a tensor
// of its own, which carve later points into the arena.
func (p *Program) newBuffers() []*compiler.Tensor {
	bufs := make([]*compiler.Tensor, len(p.slots))
	for _, s := range p.slots {
		switch s.Kind {
		case SlotConst:
			bufs[s.ID] = s.Const
		case SlotInput:
		default:
			bufs[s.ID] = &compiler.Tensor{}
		}
	}
	return bufs
}

// fitArena makes the arena hold the run whose inputs are bound: if one
// of their symbolic dims exceeds the bounds planned for, it plans at the
// larger bounds and carves every planned buffer from a new arena.
func (p *Program) fitArena() {
	if p.ownBuffers {
		return
	}
	grown := p.plan == nil
	p.inputDims(func(dim string, size int64) { grown = grown || size > p.plan.Bounds[dim] })
	if !grown {
		return
	}
	bounds := map[string]int64{}
	if p.plan != nil {
		maps.Copy(bounds, p.plan.Bounds)
	}
	p.inputDims(func(dim string, size int64) { bounds[dim] = max(bounds[dim], size) })
	p.plan = PlanMemoryAt(p.Schedule, bounds)
	p.arena = alignedBytes(p.plan.ArenaBytes)
	p.carved = p.carvable(p.plan)
	for _, ps := range p.plan.Slots {
		if !p.carved[ps.ID] {
			continue
		}
		t := p.bufs[ps.ID]
		*t = compiler.Tensor{}
		carve(t, p.slots[ps.ID].DType, p.arena[ps.Offset:ps.Offset+ps.Bytes])
	}
}

// inputDims calls f with every symbolic dim of the bound inputs and its
// size.
func (p *Program) inputDims(f func(dim string, size int64)) {
	for i, v := range p.inputs {
		t := p.bufs[p.inputSlots[i]]
		for j, d := range v.Shape {
			if d.Param != "" && t != nil && j < len(t.Shape) {
				f(d.Param, t.Shape[j])
			}
		}
	}
}

// carvable marks the slots carved from the arena under plan: the
// planned ones, except the inputs of a generic step with an output the
// plan leaves out (which may be a view of them).
func (p *Program) carvable(plan *MemoryPlan) []bool {
	carved := make([]bool, len(p.slots))
	for _, ps := range plan.Slots {
		carved[ps.ID] = true
	}
	for _, st := range p.steps {
		op, ok := st.(*OpStep)
		if !ok || !slices.ContainsFunc(op.Outputs, func(id SlotID) bool { _, planned := plan.Slot(id); return id != NoSlot && !planned }) {
			continue
		}
		for _, id := range op.Inputs {
			if id >= 0 && int(id) < len(carved) {
				carved[id] = false
			}
		}
	}
	return carved
}

// setResult gives slot id a generic op's result t: copied into its
// carved buffer, or else as the slot's own tensor taking t's fields (no
// two slots share a *Tensor).
func (p *Program) setResult(id SlotID, t *compiler.Tensor) {
	if p.carved != nil && p.carved[id] {
		copyTensor(p.bufs[id], t)
		return
	}
	*p.bufs[id] = *t
}

// alignedBytes returns n bytes starting at a multiple of MemoryAlign.
func alignedBytes(n int64) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n+MemoryAlign)
	skip := (MemoryAlign - int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%MemoryAlign) % MemoryAlign
	return b[skip : skip+n : skip+n]
}

// carve makes mem t's storage of dtype dt: an empty slice of capacity
// len(mem) bytes, which resize extends without reallocating.
func carve(t *compiler.Tensor, dt compiler.DType, mem []byte) {
	t.DType = dt
	switch dt {
	case compiler.Float32:
		t.F32 = view[float32](mem)
	case compiler.Uint8:
		t.U8 = mem[:0]
	case compiler.Int32:
		t.I32 = view[int32](mem)
	case compiler.Int64:
		t.I64 = view[int64](mem)
	case compiler.Int8:
		t.I8 = view[int8](mem)
	case compiler.Float64:
		t.F64 = view[float64](mem)
	case compiler.Bool:
		t.Bool = view[bool](mem)
	}
}

// view is mem as an empty slice of T with the capacity mem holds. mem
// starts at a multiple of MemoryAlign, which every T's alignment divides.
func view[T any](mem []byte) []T {
	var zero T
	n := len(mem) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)[:0]
}

// Plan is the memory plan p's arena is laid out by now: at the largest
// sizes run so far (nil before the first Run, and for a Program that
// gives every slot a buffer of its own). It waits for a Run in progress.
func (p *Program) Plan() *MemoryPlan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plan
}
