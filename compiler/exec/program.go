package exec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Options configure Compile.
type Options struct {
	// ISA caps the GEMM kernel family ("amx", "vnni", "avx2", "go"); ""
	// means SQC_ISA, or the fastest variant available (qgemm.Options.ISA).
	ISA string
	// Variant, if set, forces one qgemm variant (tests run each entry of
	// qgemm.Variants()); it overrides ISA.
	Variant *qgemm.Variant
	// Threads is the size of the Program's worker pool (<= 0: GOMAXPROCS).
	Threads int
	// SeparateEpilogue keeps the GEMM epilogue out of the kernel call where
	// the kernel would apply it (AMX): qgemm.Options.SeparateEpilogue, for
	// comparisons.
	SeparateEpilogue bool
	// FinishOrder forces the block order of the GEMMs that end in a fused
	// LayerNorm (qgemm.Options.FinishOrder), for comparisons; the zero
	// value lets the planner choose.
	FinishOrder qgemm.FinishOrder
	// ProfileGEMM makes the GEMM engine time its kernels, epilogues and
	// row finishes (qgemm.Options.Profile; Engine().Profile()), for sqc
	// roofline's split of each GEMM step.
	ProfileGEMM bool
	// Padded runs every batch in its padded layout, never packed
	// (packed.go): for comparisons, the outputs are the same bits.
	Padded bool
}

// Schedule is a graph lowered to runtime calls, as pure data: the steps
// with their constant parameters and packed weights, and the numbered
// buffer slots they read and write. Lower makes one without starting
// anything (no worker pool, no CPU permission request), so the code
// generator prints it; NewProgram runs it. A step keeps per-run state
// while it runs, so one Schedule runs in at most one Program.
type Schedule struct {
	name   string
	source string // model file, for error messages

	slots       []*Slot
	steps       []Step
	inputs      []*compiler.Value // the graph's declared inputs
	inputSlots  []SlotID
	outputs     []*compiler.Value
	outputSlots []SlotID

	pack packPlan // whether and how batches run packed (packed.go)
}

// Program is a Schedule with what runs it: a worker pool, a GEMM engine
// and the buffers. Build it with Compile (or Lower and NewProgram), run it
// with Run, release its worker pool with Close.
type Program struct {
	*Schedule

	pool   *pool.Pool
	engine *qgemm.Engine

	mu      sync.Mutex         // Run uses the buffers below: one call at a time
	bufs    []*compiler.Tensor // per slot
	scratch []float32          // attention scores
	padded  bool               // Options.Padded
	run     packing            // this Run's layout (packed.go)

	// The arena the planned buffers are carved from (reuse.go), laid out
	// by plan at the largest sizes run so far (nil before the first Run).
	plan   *MemoryPlan
	arena  []byte
	carved []bool // by slot: its buffer is carved from arena
	// ownBuffers keeps every slot in a tensor of its own, unplanned: the
	// reference tests compare the arena against.
	ownBuffers bool
}

// Name is the graph's name.
func (p *Schedule) Name() string { return p.name }

// Inputs and Outputs are the graph's declared inputs and outputs, in
// order (read-only); InputSlots and OutputSlots hold their slots.
func (p *Schedule) Inputs() []*compiler.Value  { return p.inputs }
func (p *Schedule) Outputs() []*compiler.Value { return p.outputs }

// Steps returns the program's steps in execution order (read-only).
func (p *Schedule) Steps() []Step { return p.steps }

// Slots returns the program's buffers, indexed by SlotID (read-only).
func (p *Schedule) Slots() []*Slot { return p.slots }

// InputSlots and OutputSlots give the slots of the graph's inputs and
// outputs, in the graph's order.
func (p *Schedule) InputSlots() []SlotID  { return p.inputSlots }
func (p *Schedule) OutputSlots() []SlotID { return p.outputSlots }

// Engine is the GEMM engine the program runs on.
func (p *Program) Engine() *qgemm.Engine { return p.engine }

// Close stops the program's worker pool. Run still works afterwards, on
// the caller's goroutine only.
func (p *Program) Close() {
	p.engine.Close()
	p.pool.Close()
}

// String lists the program: engine, inputs, steps and outputs, one per
// line, e.g.
//
//	#7  qgemm.GEMM  %y = qgemm.GEMM(%x#u8, %w [256x1024, Kp=256]; a_zero_point=3, bias=%b, act=gelu, out=u8 Kp=1024 ...)
func (p *Program) String() string { return p.listing(p.engine.Describe()) }

// String lists the schedule as Program.String does, with no engine.
func (p *Schedule) String() string { return p.listing("not bound to an engine") }

func (p *Schedule) listing(engine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "program %q: %d steps, %d slots, %s\n", p.name, len(p.steps), len(p.slots), engine)
	for _, id := range p.inputSlots {
		fmt.Fprintf(&b, "  input  %s\n", p.slots[id].describe())
	}
	for i, s := range p.steps {
		fmt.Fprintf(&b, "  #%-3d %-18s %s\n", i, s.Call(), s.Describe(p.slots))
	}
	for _, id := range p.outputSlots {
		fmt.Fprintf(&b, "  output %s\n", p.slots[id].describe())
	}
	return b.String()
}

// Run executes the program on inputs (by graph input name), checked
// against the graph's declared dtypes and shapes, symbolic dims taking one
// size across all inputs. It returns every graph output as a fresh tensor.
// Calls are serialised; the input tensors are read, never modified.
func (p *Program) Run(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	out := make(map[string]*compiler.Tensor, len(p.outputs))
	if err := p.RunInto(inputs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RunInto is Run writing each graph output into outputs[name], reusing
// that tensor's storage when it is large enough (a missing or nil entry
// gets a new tensor). A caller that passes the same map to every call
// makes Run allocate nothing in steady state, as long as every step has a
// runtime kernel (an OpStep allocates its results). On
// error the outputs are unspecified.
func (p *Program) RunInto(inputs, outputs map[string]*compiler.Tensor) error {
	return p.runSteps(inputs, outputs, func(i int, s Step) error { return nil })
}

// runSteps binds inputs, runs every step, calling after(i, step) after
// each, and copies the graph outputs into outputs (none when nil).
func (p *Program) runSteps(inputs, outputs map[string]*compiler.Tensor, after func(int, Step) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.bindInputs(inputs); err != nil {
		return err
	}
	p.fitArena()
	p.bindPacking()
	defer func() {
		for _, id := range p.inputSlots {
			p.bufs[id] = nil // keep none of the caller's memory
		}
	}()
	for i, s := range p.steps {
		if err := p.runOne(i, s); err != nil {
			return err
		}
		if err := after(i, s); err != nil {
			return err
		}
	}
	if outputs == nil {
		return nil
	}
	for i, v := range p.outputs {
		t := outputs[v.Name]
		if t == nil {
			t = &compiler.Tensor{}
			outputs[v.Name] = t
		}
		if id := p.outputSlots[i]; p.run.offsets != nil && p.pack.tokenWise[id] {
			p.run.unpackRows(t, p.bufs[id])
		} else {
			copyTensor(t, p.bufs[id])
		}
	}
	return nil
}

// runOne runs step i, its error naming the step.
func (p *Program) runOne(i int, s Step) error {
	err := runStep(p, s)
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("step #%d %s (node %q)", i, s.Call(), s.Source())
	if errors.Is(err, compiler.ErrInternal) { // the engine's fault, not the input's
		return fmt.Errorf("%s: %w", strings.TrimPrefix(p.source+": "+where, ": "), err)
	}
	return compiler.BadInput(p.source, where, err)
}

// runStep runs one step, turning a panic into an error wrapping
// compiler.ErrInternal: a bug in the engine or a kernel (on input the
// checks missed), not bad input, so runOne does not make it ErrBadInput.
func runStep(p *Program, s Step) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", compiler.ErrInternal, r)
		}
	}()
	return s.run(p)
}

// bindInputs checks the caller's inputs and puts them in their slots.
func (p *Program) bindInputs(inputs map[string]*compiler.Tensor) error {
	bad := func(name, format string, args ...any) error {
		return compiler.BadInput("", "input "+name, fmt.Errorf("%w: "+format, append([]any{compiler.ErrInvalidRequest}, args...)...))
	}
	symbols := map[string]int64{}
	from := map[string]string{}
	for i, v := range p.inputs {
		t, ok := inputs[v.Name]
		slot := p.slots[p.inputSlots[i]]
		if !ok || t == nil {
			if slot.Const != nil {
				p.bufs[slot.ID] = slot.Const // defaults to the initializer
				continue
			}
			return bad(v.Name, "missing")
		}
		if err := t.Check(); err != nil {
			return bad(v.Name, "%v", err)
		}
		if v.DType != compiler.Undefined && t.DType != v.DType {
			return bad(v.Name, "dtype %s, the graph wants %s", t.DType, v.DType)
		}
		if v.Shape != nil {
			if len(t.Shape) != len(v.Shape) {
				return bad(v.Name, "shape %v, the graph wants %s", t.Shape, v.Shape)
			}
			for j, d := range v.Shape {
				size := t.Shape[j]
				switch {
				case d.Param != "":
					if prev, seen := symbols[d.Param]; seen && prev != size {
						return bad(v.Name, "dim %d (%s) is %d but %s has %s = %d", j, d.Param, size, from[d.Param], d.Param, prev)
					}
					symbols[d.Param], from[d.Param] = size, v.Name
				case d.Size >= 0 && d.Size != size:
					return bad(v.Name, "shape %v, the graph wants %s", t.Shape, v.Shape)
				}
			}
		}
		p.bufs[slot.ID] = t
	}
	for name := range inputs {
		if !slices.ContainsFunc(p.inputs, func(v *compiler.Value) bool { return v.Name == name }) {
			names := make([]string, len(p.inputs))
			for i, v := range p.inputs {
				names[i] = v.Name
			}
			return bad(name, "not a graph input (the graph's inputs are %s)", strings.Join(names, ", "))
		}
	}
	return nil
}
