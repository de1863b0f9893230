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

// unshared gives every slot of p a buffer of its own, as before buffers
// were reused: the reference the tests compare reuse against.
func unshared(p *Program) *Program {
	p.bufs = p.newBuffers(false)
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
  init %rows4: i64[2] = [-1, 4]
  init %rows8: i64[2] = [-1, 8]

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
			for i, in := range c.inputs {
				sameBits(t, fmt.Sprintf("input %d", i), run(t, p, in), run(t, ref, in))
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
			if with.SharedRefs != without.SharedRefs {
				t.Errorf("SharedRefs %d with reuse, %d without: a shared buffer counts once, not as shared references", with.SharedRefs, without.SharedRefs)
			}
			if float64(with.Activations)*c.saving > float64(without.Activations) {
				t.Errorf("activations %d bytes with reuse, %d without: want at least %gx less", with.Activations, without.Activations, c.saving)
			}
		})
	}
}

// buffers counts p's distinct activation buffers and those that more
// than one slot uses.
func buffers(p *Program) (n, shared int) {
	users := map[*compiler.Tensor]int{}
	for _, s := range p.slots {
		if t := p.bufs[s.ID]; t != nil && s.Kind != SlotConst && s.Kind != SlotInput {
			users[t]++
		}
	}
	for _, u := range users {
		if u > 1 {
			shared++
		}
	}
	return len(users), shared
}

// checkSharing checks the rules of reuse on p, after it ran: slots that
// share a buffer have one dtype and disjoint live ranges, which the
// steps' slot fields (read here directly, not by the walker) give; graph
// inputs, outputs, constants and OpSteps' slots share nothing;
// a shared buffer holds an array of its dtype only.
func checkSharing(t *testing.T, p *Program) {
	t.Helper()
	first, last := map[SlotID]int{}, map[SlotID]int{}
	own := map[SlotID]bool{}
	for _, id := range p.outputSlots {
		own[id] = true
	}
	for i, st := range p.steps {
		for _, id := range directSlots(st) {
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
			if _, interp := st.(*OpStep); interp {
				own[id] = true
			}
		}
	}
	users := map[*compiler.Tensor][]*Slot{}
	for _, s := range p.slots {
		if t := p.bufs[s.ID]; t != nil {
			users[t] = append(users[t], s)
		}
	}
	for buf, slots := range users {
		if len(slots) < 2 {
			continue
		}
		for i, a := range slots {
			if a.Kind == SlotConst || a.Kind == SlotInput || own[a.ID] {
				t.Errorf("%s (kind %d) shares its buffer", a.describe(), a.Kind)
			}
			if a.DType != slots[0].DType {
				t.Errorf("%s and %s share a buffer", a.describe(), slots[0].describe())
			}
			for _, b := range slots[:i] {
				if first[a.ID] <= last[b.ID] && first[b.ID] <= last[a.ID] {
					t.Errorf("%s (steps %d-%d) and %s (steps %d-%d) share a buffer", a, first[a.ID], last[a.ID], b, first[b.ID], last[b.ID])
				}
			}
		}
		arrays := 0
		tensorArrays(buf, func(ptr unsafe.Pointer, _ int64) {
			if ptr != nil {
				arrays++
			}
		})
		if arrays > 1 || (arrays == 1 && buf.DType != slots[0].DType) {
			t.Errorf("buffer of %s holds %d arrays, dtype %s", slots[0].describe(), arrays, buf.DType)
		}
	}
}

// directSlots lists the slots in st's SlotID and []SlotID fields, for the
// step types of this package: an independent account of Operands.
func directSlots(st Step) []SlotID {
	var ids []SlotID
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

// TestReuseLiveRanges checks the ranges the colouring uses on a program
// where they are known: in qchain every value's first step is the one
// computing it, and the outputs are pinned.
func TestReuseLiveRanges(t *testing.T) {
	p := compile(t, parse(t, qchain), nil, 1)
	ranges, pinned := p.liveRanges()
	for _, id := range p.outputSlots {
		if !pinned[id] {
			t.Errorf("output %s is not pinned", p.slots[id])
		}
	}
	for i, st := range p.steps {
		for _, id := range directSlots(st) {
			if r := ranges[id]; i < r.first || i > r.last {
				t.Errorf("step #%d %s mentions %s outside its range %d-%d", i, st.Call(), p.slots[id], r.first, r.last)
			}
		}
	}
	for _, s := range p.slots {
		if s.Kind == SlotConst && !pinned[s.ID] && ranges[s.ID].first >= 0 && p.bufs[s.ID] != s.Const {
			t.Errorf("constant %s has a buffer other than its initializer", s)
		}
	}
}
