package passes

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
)

// MemoryPlan places every intermediate value of a graph in one arena, for
// batches of up to MaxBatch sequences of up to MaxSeq tokens: values whose
// lifetimes do not overlap share bytes.
type MemoryPlan struct {
	MaxBatch, MaxSeq int
	// Batch and Seq are the symbolic dimensions bound to MaxBatch and
	// MaxSeq (the dims of the graph's token inputs).
	Batch, Seq string
	// Buffers are the planned values in the order their producers run.
	Buffers []PlannedBuffer
	// ArenaBytes is the arena's size: the peak of activation memory under
	// this plan.
	ArenaBytes int64
	// NaiveBytes is the sum of all buffers: what giving every value its
	// own allocation would hold.
	NaiveBytes int64
}

// PlannedBuffer is one value's place in the arena.
type PlannedBuffer struct {
	Value  string
	Bytes  int64 // at MaxBatch x MaxSeq, rounded up to MemoryAlign
	Offset int64 // in the arena, a multiple of MemoryAlign
	// First and Last are the node indices of the value's producer and of
	// its last reader (len(g.Nodes) for graph outputs, which the caller
	// reads after the last node): the buffer is busy in [First, Last],
	// inclusive, so no node writes memory one of its own inputs uses.
	First, Last int
}

// MemoryAlign is the alignment of planned buffers in bytes: one cache
// line, which is also what 512-bit vector loads want.
const MemoryAlign = 64

// Graph meta keys PlanMemory records.
const (
	MetaMemoryMaxBatch   = "sqc.memory.max_batch"
	MetaMemoryMaxSeq     = "sqc.memory.max_seq"
	MetaMemoryArenaBytes = "sqc.memory.arena_bytes"
	MetaMemoryNaiveBytes = "sqc.memory.naive_bytes"
)

// PlanMemory is the pass form of PlanMemoryOf: it records the plan's
// sizes in g.Meta (MetaMemory* keys; `sqc inspect` prints them) and leaves
// the nodes alone. It reports a change only when those keys change.
//
// The plan covers the graph's values, which after FuseQLinearEpilogues
// and FuseQKV are the float32 buffers compiler/exec materialises, with
// two differences: exec's u8 copies of QLinear inputs are not graph values
// and are not counted, and a LayerNorm output that only static QLinears
// read, which exec writes in u8 form only, is counted as f32. The
// generated package's workspace is planned by codegen over exec's own
// buffers (three typed arenas, same lifetime rule); this plan is not
// (yet) what exec or codegen allocate.
func PlanMemory(maxBatch, maxSeq int) Pass {
	return Pass{Name: "PlanMemory", Run: func(g *compiler.Graph) (bool, error) {
		p, err := PlanMemoryOf(g, maxBatch, maxSeq)
		if err != nil {
			return false, err
		}
		changed := false
		for k, v := range map[string]int64{
			MetaMemoryMaxBatch: int64(p.MaxBatch), MetaMemoryMaxSeq: int64(p.MaxSeq),
			MetaMemoryArenaBytes: p.ArenaBytes, MetaMemoryNaiveBytes: p.NaiveBytes,
		} {
			s := strconv.FormatInt(v, 10)
			if g.Meta[k] != s {
				g.Meta[k], changed = s, true
			}
		}
		return changed, nil
	}}
}

// PlanMemoryOf plans g's intermediate values (node outputs that are not
// initializers) in one arena:
//
//  1. liveness: a value is busy from the node producing it to the last
//     node reading it, both included (graph outputs to the end), in g's
//     node order;
//  2. sizes: its dtype's size times its shape with the token inputs'
//     symbolic dims bound to maxBatch and maxSeq, rounded up to
//     MemoryAlign; any other unknown dim is an error;
//  3. placement, greedy best-fit by size: buffers are placed largest first
//     (ties by first use, then name, so the plan is deterministic); each
//     goes into the smallest gap, between buffers already placed whose
//     lifetimes overlap its own, that holds it, or above the highest of
//     them when no gap does.
//
// Largest-first keeps the big activations of successive layers stacked at
// the bottom while the small ones fill the holes between them, the
// "greedy by size" strategy of TFLite's arena planner; choosing the
// tightest gap rather than the lowest leaves larger holes for later.
func PlanMemoryOf(g *compiler.Graph, maxBatch, maxSeq int) (*MemoryPlan, error) {
	if maxBatch < 1 || maxSeq < 1 {
		return nil, fmt.Errorf("%w: memory plan for batch %d x sequence %d: both must be at least 1", compiler.ErrInvalidRequest, maxBatch, maxSeq)
	}
	batch, seq, err := tokenDims(g)
	if err != nil {
		return nil, err
	}
	p := &MemoryPlan{MaxBatch: maxBatch, MaxSeq: maxSeq, Batch: batch, Seq: seq}
	index := map[string]int{} // value -> its buffer
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if b, ok := index[in]; ok {
				p.Buffers[b].Last = i
			}
		}
		for _, out := range n.Outputs {
			if out == "" || g.Initializers[out] != nil {
				continue
			}
			if _, dup := index[out]; dup {
				continue // a broken graph; the verifier names it
			}
			size, err := valueBytes(g, out, map[string]int64{batch: int64(maxBatch), seq: int64(maxSeq)})
			if err != nil {
				return nil, err
			}
			index[out] = len(p.Buffers)
			p.Buffers = append(p.Buffers, PlannedBuffer{Value: out, Bytes: roundUp64(size, MemoryAlign), First: i, Last: i})
		}
	}
	for _, o := range g.Outputs {
		if b, ok := index[o.Name]; ok {
			p.Buffers[b].Last = len(g.Nodes)
		}
	}
	p.place()
	return p, nil
}

// tokenDims returns the symbolic batch and sequence dims: those of the
// first graph input of rank 2 whose dims are both symbolic (input_ids).
func tokenDims(g *compiler.Graph) (batch, seq string, err error) {
	for _, v := range g.Inputs {
		if len(v.Shape) == 2 && v.Shape[0].Param != "" && v.Shape[1].Param != "" && v.Shape[0].Param != v.Shape[1].Param {
			return v.Shape[0].Param, v.Shape[1].Param, nil
		}
	}
	return "", "", compiler.BadInput(g.Meta["source"], "graph inputs",
		fmt.Errorf("%w: no input of symbolic shape [batch, sequence] to size a memory plan by", compiler.ErrUnsupportedOp))
}

// valueBytes is the size of value name with the symbolic dims bound.
func valueBytes(g *compiler.Graph, name string, bound map[string]int64) (int64, error) {
	v := valueInfo(g, name)
	bad := func(why string) error {
		return compiler.BadInput(g.Meta["source"], "value "+strconv.Quote(name), fmt.Errorf("%w: cannot size its buffer: %s", compiler.ErrUnsupportedOp, why))
	}
	if v == nil || v.Shape == nil {
		return 0, bad("its shape is unknown")
	}
	if v.DType.Size() <= 0 {
		return 0, bad(fmt.Sprintf("dtype %s", v.DType))
	}
	n := int64(v.DType.Size())
	for _, d := range v.Shape {
		switch size, ok := bound[d.Param]; {
		case d.Param != "" && ok:
			n *= size
		case d.Known():
			n *= d.Size
		default:
			return 0, bad(fmt.Sprintf("shape %s: only the batch and sequence dimensions may vary", v.Shape))
		}
	}
	return n, nil
}

// place gives every buffer an offset (see PlanMemoryOf) and sums the
// sizes.
func (p *MemoryPlan) place() {
	order := make([]int, len(p.Buffers))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &p.Buffers[a], &p.Buffers[b]
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.First, y.First), cmp.Compare(x.Value, y.Value))
	})
	var placed []*PlannedBuffer
	var busy []*PlannedBuffer
	for _, i := range order {
		b := &p.Buffers[i]
		busy = busy[:0]
		for _, o := range placed {
			if o.First <= b.Last && b.First <= o.Last {
				busy = append(busy, o)
			}
		}
		slices.SortFunc(busy, func(x, y *PlannedBuffer) int { return cmp.Compare(x.Offset, y.Offset) })
		best, bestGap := int64(-1), int64(0)
		var top int64 // end of the buffers below the current point
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
		p.ArenaBytes = max(p.ArenaBytes, b.Offset+b.Bytes)
		p.NaiveBytes += b.Bytes
		placed = append(placed, b)
	}
}

func roundUp64(n, m int64) int64 { return (n + m - 1) / m * m }
