package exec

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// unshared gives every slot of p a buffer of its own, unplanned: the
// reference the tests compare the arena against.
func unshared(p *Program) *Program {
	p.ownBuffers = true
	return p
}

// reuseCase is a program and a sequence of inputs of changing shapes (so
// that shared buffers hold a larger or different value's stale contents);
// saving is the least factor by which reuse must shrink its activations.
type reuseCase struct {
	name   string
	g      *compiler.Graph
	inputs []map[string]*compiler.Tensor
	saving float64
}

// syntheticCases are the package's test graphs: qchain, whose outputs
// are most of its values, and allocModel, one encoder layer.
func syntheticCases(t *testing.T) []reuseCase {
	return []reuseCase{
		{"qchain", parse(t, qchain), []map[string]*compiler.Tensor{
			qchainInputs(4, 11, 5, 1), qchainInputs(2, 5, 3, 2), qchainInputs(3, 13, 9, 3),
		}, 1.1},
		{"alloc", parse(t, allocModel), []map[string]*compiler.Tensor{
			allocInputs(4, 16), allocInputs(2, 7), allocInputs(3, 12),
		}, 1.5},
		{"views", parse(t, viewsModel), []map[string]*compiler.Tensor{
			{"x": randF32(1, -2, 2, 6, 8)}, {"x": randF32(2, -2, 2, 3, 8)}, {"x": randF32(3, -2, 2, 5, 8)},
		}, 1.1},
	}
}

// viewsModel has OpSteps whose outputs are views of their
// inputs' storage (Reshape, Identity) between steps with runtime kernels:
// their slots must keep buffers of their own, or a later step writing a
// shared buffer would overwrite a view still to be read.
var viewsModel = `
graph "views" opset 17 {
  input %x: f32[batch, 8]
  init %rows4: i64[3] = [0, 2, 4]
  init %rows8: i64[2] = [0, 8]

  %a = Tanh(%x)
  %b = Reshape(%a, %rows4)
  %c = Tanh(%b)
  %d = Relu(%c)
  %i = Identity(%d)
  %g = Tanh(%i)
  %h = Relu(%g)
  %e = Add(%h, %b)
  %s = Add(%e, %i)
  %f = Reshape(%s, %rows8)

  output %f: f32[batch, 8]
}
`

// sharedCases are the shared SST-2 models in FP32 and INT8 (none when
// ../shared is absent): several layers, OpSteps around the
// encoder.
func sharedCases(t *testing.T) []reuseCase {
	if _, ok := testmodels.SharedDir(); !ok {
		t.Logf("../shared is absent: the shared SST-2 models are not tested")
		return nil
	}
	var cases []reuseCase
	for _, name := range testmodels.Models {
		g, ref := canonicalModel(t, name)
		var ins []map[string]*compiler.Tensor
		for _, r := range [][2]int{{0, 8}, {8, 10}, {40, 46}} {
			in, err := testmodels.Inputs(g, ref.Examples[r[0]:r[1]])
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, in)
		}
		cases = append(cases,
			reuseCase{name + "/fp32", g, ins, 2.5},
			reuseCase{name + "/int8", quantizeForTest(t, g, ref), ins, 2.5})
	}
	return cases
}

// TestBufferReuse requires the bits of a program without buffer reuse
// from one with it, on every input of a sequence of shapes; that buffers
// were shared by the rules (checkSharing); and that the arena shrank,
// counted once per shared buffer.
func TestBufferReuse(t *testing.T) {
	for _, c := range append(syntheticCases(t), sharedCases(t)...) {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, c.g, nil, 2)
			ref := unshared(compile(t, c.g, nil, 2))
			// Both layouts (packed.go): packed runs use fewer rows of the
			// same buffers. The padded run comes last so that the figures
			// below compare the arena with unshared buffers of the same
			// (padded) extents; packed, the unshared ones are only as big
			// as the real tokens.
			for _, padded := range []bool{false, true} {
				p.padded, ref.padded = padded, padded
				for i, in := range c.inputs {
					sameBits(t, fmt.Sprintf("padded=%v input %d", padded, i), run(t, p, in), run(t, ref, in))
				}
			}
			checkSharing(t, p)
			n, shared := buffers(p)
			if shared == 0 {
				t.Errorf("no buffer is shared (%d buffers)\n%s", n, p)
			}
			with, without := p.Memory(), ref.Memory()
			t.Logf("%d slots, %d steps: %d buffers, %d of them shared; activations %d bytes, %d without reuse (%.2fx)",
				len(p.slots), len(p.steps), n, shared, with.Activations, without.Activations, float64(without.Activations)/float64(with.Activations))
			if with.Scratch != without.Scratch || with.Weights() != without.Weights() {
				t.Errorf("reuse changed the scratch (%d, %d) or weights (%d, %d)", with.Scratch, without.Scratch, with.Weights(), without.Weights())
			}
			// Buffers carved from the arena count in it, not as shared
			// references; generic results copied into the arena (rather
			// than kept as views of their inputs) may leave fewer.
			if with.SharedRefs > without.SharedRefs {
				t.Errorf("SharedRefs %d with reuse, %d without: the arena counts once, not as shared references", with.SharedRefs, without.SharedRefs)
			}
			if float64(with.Activations)*c.saving > float64(without.Activations) {
				t.Errorf("activations %d bytes with reuse, %d without: want at least %gx less", with.Activations, without.Activations, c.saving)
			}
		})
	}
}

// buffers counts p's distinct activation buffers (planned slots carved
// from the arena, and tensors of their own) and the planned slots whose
// bytes overlap another's.
func buffers(p *Program) (n, shared int) {
	if p.plan == nil {
		for _, s := range p.slots {
			if p.bufs[s.ID] != nil && s.Kind != SlotConst && s.Kind != SlotInput {
				n++
			}
		}
		return n, 0
	}
	for _, s := range p.slots {
		if _, planned := p.plan.Slot(s.ID); p.bufs[s.ID] != nil && s.Kind != SlotConst && s.Kind != SlotInput && (!planned || !p.carved[s.ID]) {
			n++
		}
	}
	for _, a := range p.plan.Slots {
		if !p.carved[a.ID] {
			continue
		}
		n++
		for _, b := range p.plan.Slots {
			if a.ID != b.ID && p.carved[b.ID] && a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes {
				shared++
				break
			}
		}
	}
	return n, shared
}

// checkSharing checks the rules of reuse on p, after it ran: slots whose
// bytes overlap in the arena have disjoint live ranges, which the steps'
// slot fields (read here directly, not by Operands) give, graph outputs
// living to the end; graph inputs and constants are not planned, and the
// inputs of a generic step whose result may be an unplanned view of them
// are not carved; every carved buffer starts at its planned offset (or, if
// a run outgrew it, outside the arena) and holds an array of its dtype
// only.
func checkSharing(t *testing.T, p *Program) {
	t.Helper()
	if p.plan == nil {
		t.Fatal("no memory plan after a run")
	}
	first, last := map[SlotID]int{}, map[SlotID]int{}
	// Inputs of a generic step with an output of unknown size (which may
	// be a view of them) must not be carved.
	pinned := map[SlotID]bool{}
	for i, st := range p.steps {
		for _, id := range directSlots(st) {
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
		}
		if op, ok := st.(*OpStep); ok && slices.ContainsFunc(op.Outputs, func(id SlotID) bool {
			_, planned := p.plan.Slot(id)
			return id != NoSlot && !planned
		}) {
			for _, id := range op.Inputs {
				pinned[id] = true
			}
		}
	}
	for _, id := range p.outputSlots {
		last[id] = len(p.steps)
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(p.arena)))
	var carved []PlannedSlot
	for _, ps := range p.plan.Slots {
		s := p.slots[ps.ID]
		if s.Kind == SlotConst || s.Kind == SlotInput {
			t.Errorf("%s (kind %d) is planned", s.describe(), s.Kind)
		}
		if ps.Offset%MemoryAlign != 0 || ps.Offset+ps.Bytes > p.plan.ArenaBytes {
			t.Errorf("%s at [%d, %d) in an arena of %d bytes", s, ps.Offset, ps.Offset+ps.Bytes, p.plan.ArenaBytes)
		}
		if pinned[ps.ID] == p.carved[ps.ID] {
			t.Errorf("%s: carved %v, but the input of a generic step with an unplanned result: %v", s, p.carved[ps.ID], pinned[ps.ID])
		}
		if !p.carved[ps.ID] {
			continue
		}
		carved = append(carved, ps)
		buf := p.bufs[ps.ID]
		arrays := 0
		tensorArrays(buf, func(ptr unsafe.Pointer, _ int64) {
			if ptr == nil {
				return
			}
			arrays++
			if at := uintptr(ptr); at >= lo && at < lo+uintptr(len(p.arena)) && at != lo+uintptr(ps.Offset) {
				t.Errorf("%s starts at arena offset %d, planned at %d", s, at-lo, ps.Offset)
			}
		})
		if arrays > 1 || (arrays == 1 && buf.DType != s.DType) {
			t.Errorf("buffer of %s holds %d arrays, dtype %s", s.describe(), arrays, buf.DType)
		}
	}
	for i, a := range carved {
		for _, b := range carved[:i] {
			if a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes &&
				first[a.ID] <= last[b.ID] && first[b.ID] <= last[a.ID] {
				t.Errorf("%s (steps %d-%d) and %s (steps %d-%d) share bytes", p.slots[a.ID], first[a.ID], last[a.ID], p.slots[b.ID], first[b.ID], last[b.ID])
			}
		}
	}
}

// directSlots lists the slots in st's SlotID and []SlotID fields, for the
// step types of this package: an independent account of Operands.
func directSlots(st Step) []SlotID {
	var ids []SlotID
	if g, ok := st.(*GEMMStep); ok && g.Norm != nil {
		// The LayerNorm it runs: Norm.X is its own Out, listed once.
		ids = slices.DeleteFunc(directSlots(g.Norm), func(id SlotID) bool { return id == g.Norm.X })
	}
	v := reflect.ValueOf(st).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Type() {
		case reflect.TypeFor[SlotID]():
			ids = append(ids, SlotID(f.Int()))
		case reflect.TypeFor[[]SlotID]():
			for j := range f.Len() {
				ids = append(ids, SlotID(f.Index(j).Int()))
			}
		}
	}
	return slices.DeleteFunc(ids, func(id SlotID) bool { return id == NoSlot })
}

// TestOperandsCoverEverySlotField fills every SlotID and []SlotID field
// of every step kind with distinct slots and requires Operands to list
// exactly them, each once; and on every step of real programs, too.
func TestOperandsCoverEverySlotField(t *testing.T) {
	listed := func(st Step) []SlotID {
		ops := st.Operands()
		got := append(slices.Clone(ops.Reads), ops.Writes...)
		slices.Sort(got)
		return got
	}
	for _, st := range StepKinds() {
		v := reflect.ValueOf(st).Elem()
		next := SlotID(0)
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			switch f.Type() {
			case reflect.TypeFor[SlotID]():
				f.SetInt(int64(next))
				next++
			case reflect.TypeFor[[]SlotID]():
				f.Set(reflect.ValueOf([]SlotID{next, NoSlot, next + 1}))
				next += 2
			}
		}
		want := directSlots(st)
		slices.Sort(want)
		if got := listed(st); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%T: Operands list %v, its slot fields hold %v", st, got, want)
		}
	}
	for _, c := range syntheticCases(t) {
		p := compile(t, c.g, nil, 1)
		for _, st := range p.steps {
			got, want := listed(st), directSlots(st)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s: Operands list %v, the fields hold %v", c.name, st.Call(), got, want)
			}
		}
	}
}

// TestReuseLiveRanges checks the ranges the plan uses on a program
// where they are known: in qchain every value's first step is the one
// computing it, and the outputs live to the end.
func TestReuseLiveRanges(t *testing.T) {
	p := compile(t, parse(t, qchain), nil, 1)
	first, last := p.liveRanges()
	for _, id := range p.outputSlots {
		if last[id] != len(p.steps) {
			t.Errorf("output %s lives to step %d, not to the end (%d)", p.slots[id], last[id], len(p.steps))
		}
	}
	for i, st := range p.steps {
		for _, id := range directSlots(st) {
			if i < first[id] || i > last[id] {
				t.Errorf("step #%d %s mentions %s outside its range %d-%d", i, st.Call(), p.slots[id], first[id], last[id])
			}
		}
	}
	for _, s := range p.slots {
		if s.Kind == SlotConst && p.bufs[s.ID] != s.Const {
			t.Errorf("constant %s has a buffer other than its initializer", s)
		}
	}
}
