package exec

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// MemoryPlan places the activation buffers of a Schedule in one arena of
// bytes, for runs whose symbolic dims are at most Bounds: slots whose
// live ranges do not overlap share bytes. It is the one plan of
// activation memory: the in-process engine carves its buffers from an
// arena of this plan (NewProgram, at the largest sizes run so far), the
// code generator emits its offsets, and `sqc inspect` prints its size.
type MemoryPlan struct {
	// Bounds are the sizes the symbolic dims are planned for (for
	// PlanMemory: the token inputs' batch and sequence dims).
	Bounds map[string]int64
	// Slots are the planned buffers, in slot order.
	Slots []PlannedSlot
	// ArenaBytes is the arena's size: the peak of activation memory under
	// this plan. The attention scratch, whose size depends on the number
	// of workers, is not part of it.
	ArenaBytes int64
	// NaiveBytes is the sum of the planned buffers: what giving each slot
	// its own allocation would hold.
	NaiveBytes int64
	// Unplanned are the value and internal slots steps use that the plan
	// cannot size (a shape unknown or with a dim Bounds lacks): the engine
	// gives them buffers of their own; a generated package cannot have
	// them in its arena.
	Unplanned []SlotID

	at []int // by SlotID: index into Slots, -1 for an unplanned slot
}

// PlannedSlot is one slot's place in the arena.
type PlannedSlot struct {
	ID     SlotID
	Bytes  int64 // at Bounds, rounded up to MemoryAlign
	Offset int64 // a multiple of MemoryAlign
	// First and Last are the first and last step whose Operands list the
	// slot (len(steps) for graph outputs, which RunInto reads after the
	// last step): the buffer is busy in [First, Last], inclusive, so no
	// step writes bytes one of its own operands uses.
	First, Last int
}

// MemoryAlign is the alignment of planned buffers in bytes: one cache
// line, so that no two buffers share a line (no false sharing between
// workers writing neighbouring buffers) and 512-bit loads of a buffer's
// start do not split lines.
const MemoryAlign = 64

// Slot returns the place of slot id, if it is planned.
func (m *MemoryPlan) Slot(id SlotID) (PlannedSlot, bool) {
	if id < 0 || int(id) >= len(m.at) || m.at[id] < 0 {
		return PlannedSlot{}, false
	}
	return m.Slots[m.at[id]], true
}

// PlanMemory plans s's activations for batches of up to maxBatch
// sequences of up to maxSeq tokens: the dims of its token inputs (the
// first graph input of shape [batch, sequence], both symbolic) bound to
// those sizes. See PlanMemoryAt for what is planned and how.
func PlanMemory(s *Schedule, maxBatch, maxSeq int) (*MemoryPlan, error) {
	if maxBatch < 1 || maxSeq < 1 {
		return nil, fmt.Errorf("exec: %w: memory plan for batch %d x sequence %d: both must be at least 1", compiler.ErrInvalidRequest, maxBatch, maxSeq)
	}
	batch, seq, ok := s.TokenDims()
	if !ok {
		return nil, compiler.BadInput(s.source, "graph inputs",
			fmt.Errorf("%w: no input of symbolic shape [batch, sequence] to size a memory plan by", compiler.ErrUnsupportedOp))
	}
	return PlanMemoryAt(s, map[string]int64{batch: int64(maxBatch), seq: int64(maxSeq)}), nil
}

// TokenDims returns the names of the batch and sequence dims: those of
// the first graph input of rank 2 whose dims are two distinct symbols
// (input_ids).
func (s *Schedule) TokenDims() (batch, seq string, ok bool) {
	for _, v := range s.inputs {
		if len(v.Shape) == 2 && v.Shape[0].Param != "" && v.Shape[1].Param != "" && v.Shape[0].Param != v.Shape[1].Param {
			return v.Shape[0].Param, v.Shape[1].Param, true
		}
	}
	return "", "", false
}

// PlanMemoryAt plans s's activations with its symbolic dims bound to
// bounds:
//
//  1. what: every value and internal slot that some step's Operands list,
//     of a dtype with a size and a shape whose dims are all static or
//     bound (others, e.g. the results of generic ops of unknown shape, are
//     left out: the engine gives them buffers of their own);
//  2. liveness: from the first to the last step listing the slot, both
//     included, graph outputs to the end;
//  3. size: the dtype's size times the shape at bounds, rounded up to
//     MemoryAlign;
//  4. placement, greedy by size with best fit: largest first (ties by
//     first use, then slot), each into the smallest gap between the
//     already placed buffers whose lifetimes overlap its own that holds
//     it, or above the highest of them.
//
// Largest-first stacks the big activations of successive layers at the
// bottom while the small ones fill the holes between them (TFLite's
// greedy-by-size arena planner); the tightest gap rather than the lowest
// leaves larger holes for later. A buffer's size is monotone in every
// dim, so a plan at bounds holds any run at smaller sizes, each buffer a
// prefix of its place. The plan is deterministic.
func PlanMemoryAt(s *Schedule, bounds map[string]int64) *MemoryPlan {
	m := &MemoryPlan{Bounds: bounds, at: make([]int, len(s.slots))}
	first, last := s.liveRanges()
	for _, slot := range s.slots {
		m.at[slot.ID] = -1
		if first[slot.ID] < 0 || (slot.Kind != SlotValue && slot.Kind != SlotInternal) {
			continue
		}
		n, ok := slotBytes(slot, bounds)
		if !ok {
			m.Unplanned = append(m.Unplanned, slot.ID)
			continue
		}
		m.at[slot.ID] = len(m.Slots)
		m.Slots = append(m.Slots, PlannedSlot{ID: slot.ID, Bytes: roundUp64(n, MemoryAlign), First: first[slot.ID], Last: last[slot.ID]})
	}
	m.place()
	return m
}

// liveRanges returns the first and last step listing each slot (-1 for
// none), graph outputs living to len(steps).
func (s *Schedule) liveRanges() (first, last []int) {
	first, last = make([]int, len(s.slots)), make([]int, len(s.slots))
	for i := range first {
		first[i], last[i] = -1, -1
	}
	mark := func(id SlotID, i int) {
		if id < 0 || int(id) >= len(s.slots) {
			return // not a slot of this schedule
		}
		if first[id] < 0 {
			first[id] = i
		}
		last[id] = i
	}
	for i, st := range s.steps {
		ops := st.Operands()
		for _, id := range ops.Reads {
			mark(id, i)
		}
		for _, id := range ops.Writes {
			mark(id, i)
		}
	}
	for _, id := range s.outputSlots {
		mark(id, len(s.steps))
	}
	return first, last
}

// slotBytes is the size of slot's buffer at bounds, if it has one.
func slotBytes(slot *Slot, bounds map[string]int64) (int64, bool) {
	if slot.Shape == nil || slot.DType.Size() <= 0 {
		return 0, false
	}
	n := int64(slot.DType.Size())
	for _, d := range slot.Shape {
		switch size, ok := bounds[d.Param]; {
		case d.Param != "" && ok:
			n *= size
		case d.Known():
			n *= d.Size
		default:
			return 0, false
		}
	}
	return n, true
}

// place gives every planned slot an offset (see PlanMemoryAt) and sums
// the sizes.
func (m *MemoryPlan) place() {
	order := make([]*PlannedSlot, len(m.Slots))
	for i := range m.Slots {
		order[i] = &m.Slots[i]
	}
	slices.SortStableFunc(order, func(x, y *PlannedSlot) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.First, y.First), cmp.Compare(x.ID, y.ID))
	})
	var placed, busy []*PlannedSlot
	for _, b := range order {
		busy = busy[:0]
		for _, o := range placed {
			if o.First <= b.Last && b.First <= o.Last {
				busy = append(busy, o)
			}
		}
		slices.SortFunc(busy, func(x, y *PlannedSlot) int { return cmp.Or(cmp.Compare(x.Offset, y.Offset), cmp.Compare(x.ID, y.ID)) })
		best, bestGap := int64(-1), int64(0)
		var top int64 // end of the busy buffers below the current point
		for _, o := range busy {
			if gap := o.Offset - top; gap >= b.Bytes && (best < 0 || gap < bestGap) {
				best, bestGap = top, gap
			}
			top = max(top, o.Offset+o.Bytes)
		}
		if best < 0 {
			best = top
		}
		b.Offset = best
		m.ArenaBytes = max(m.ArenaBytes, b.Offset+b.Bytes)
		m.NaiveBytes += b.Bytes
		placed = append(placed, b)
	}
}

func roundUp64(n, m int64) int64 { return (n + m - 1) / m * m }
