package exec

import (
	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/pool"
)

// Cost is what one call of a step does at the shapes of the run it was
// taken from (Replay): its operations (2 per multiply-add; the arithmetic
// the kernel's documented formula does, not instructions) and the least
// memory traffic it needs (each operand read once, each result written
// once), by which the roofline places it. Steps with the same Label are
// the same call on the same shapes. Each step kind computes its own, beside
// its run.
type Cost struct {
	Kind  string // KindGEMM, KindAttention, ...
	Label string // e.g. "GEMM 768x3072 +gelu ->u8"
	Ops   float64
	Bytes float64
	// INT8 says the multiply-adds run on the INT8 GEMM kernels, so their
	// INT8 peak bounds them (GEMMs, INT8 attention); otherwise FP32's.
	INT8 bool
}

// Kinds of steps, for grouping and colours.
const (
	KindGEMM      = "GEMM"
	KindAttention = "Attention"
	KindLayerNorm = "LayerNorm"
	KindQuantize  = "Quantize"
	KindLinearF32 = "LinearF32"
	KindElemwise  = "Elementwise"
	KindGather    = "Gather"
	KindGeneric   = "Generic" // a runtime/ops kernel (OpStep)
)

// Operations counted per element by the non-GEMM kernels.
const (
	opsLayerNorm     = 8 // sum; subtract, square, sum; subtract, scale, gamma, beta
	opsLayerNormDual = 4 // the second output's subtract, scale, gamma, beta
	opsQuantize      = 3 // scale, round, add zero point (clamps not counted)
	opsQuantizeRow   = 5 // min, max, then scale, round, add zero point
	opsSoftmax       = 5 // per score: scale, mask add, max, exp, normalise
	opsMask          = 2
)

// Replay runs p on inputs as RunInto does, and calls visit after each step
// with the step, its Cost at this run's shapes, and again, which runs the
// step once more on the same buffers: what the roofline times. A repeat
// reads what the first call read, because no later step has run yet and
// the memory plan never lets a step's outputs share bytes with its inputs
// (both are live at that step). visit's error stops the run. The outputs
// are not returned.
func (p *Program) Replay(inputs map[string]*compiler.Tensor, visit func(i int, s Step, c Cost, again func() error) error) error {
	return p.runSteps(inputs, nil, func(i int, s Step) error {
		return visit(i, s, s.cost(p), func() error { return p.runOne(i, s) })
	})
}

// Trace runs p on inputs as RunInto does and calls after(i) when step i
// has returned, with nothing else between steps: what the roofline times a
// pass's steps by, within the pass. after's error stops the run. The
// outputs are not returned.
func (p *Program) Trace(inputs map[string]*compiler.Tensor, after func(i int) error) error {
	return p.runSteps(inputs, nil, func(i int, _ Step) error { return after(i) })
}

// Workers is the size of the Program's worker pool.
func (p *Program) Workers() int { return p.pool.Workers() }

// PoolStats is the Program's worker pool's counters (pool.Stats): its
// parallel loops and the time their callers waited for helpers.
func (p *Program) PoolStats() pool.Stats { return p.pool.Stats() }

// operandBytes is the size in bytes of every slot s reads or writes (its
// Operands), as the step left them: the least traffic of a step that
// reads each input whole once and writes each result once.
func (p *Program) operandBytes(s Step) float64 {
	ops := s.Operands()
	var n float64
	for _, id := range append(ops.Reads, ops.Writes...) {
		n += p.bytesOf(id)
	}
	return n
}

// bytesOf is the size in bytes of slot id's buffer as the last step left it
// (0 for NoSlot).
func (p *Program) bytesOf(id SlotID) float64 {
	if id == NoSlot {
		return 0
	}
	if t := p.bufs[id]; t != nil {
		return float64(t.Bytes())
	}
	return 0
}
