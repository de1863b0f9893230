package exec

import (
	"errors"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// chain is elementwise steps on [batch, seq, 16] f32 (64 bytes per token)
// and a [batch, seq] i64 side value: buffers can be reused down the chain.
const chain = `graph "chain" opset 17 {
  input %ids: i64[batch, seq]
  input %x: f32[batch, seq, 16]
  %a = Relu(%x)
  %b = Tanh(%a)
  %c = Relu(%b)
  %d = Add(%c, %a)
  %n = Neg(%ids)
  %e = Tanh(%d)
  output %e: f32[batch, seq, 16]
  output %n: i64[batch, seq]
}`

func lowerText(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := Lower(parse(t, text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanMemory plans chain at 2 x 8 tokens (1 KiB per f32 value): %a
// lives to the Add, so the peak is three f32 values (%a, %c, %d at the
// Add), and %n (128 bytes), live with %d and %e only, fits in a hole.
func TestPlanMemory(t *testing.T) {
	s := lowerText(t, chain)
	p, err := PlanMemory(s, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, p)
	if len(p.Slots) != 6 || len(p.Unplanned) != 0 {
		t.Errorf("%d slots planned, %v unplanned; want the 6 values\n%s", len(p.Slots), p.Unplanned, s)
	}
	if p.ArenaBytes != 3*1024 || p.NaiveBytes != 5*1024+128 {
		t.Errorf("arena %d, naive %d bytes; want %d and %d\n%+v", p.ArenaBytes, p.NaiveBytes, 3*1024, 5*1024+128, p.Slots)
	}
	if again, _ := PlanMemory(s, 2, 8); again.ArenaBytes != p.ArenaBytes || len(again.Slots) != len(p.Slots) {
		t.Error("two plans of one schedule differ")
	} else {
		for i := range p.Slots {
			if again.Slots[i] != p.Slots[i] {
				t.Errorf("slot %d planned at %+v, then at %+v", i, p.Slots[i], again.Slots[i])
			}
		}
	}
}

// TestPlanMemoryBestFit: a buffer goes into the tightest gap that holds
// it, not the lowest.
func TestPlanMemoryBestFit(t *testing.T) {
	p := &MemoryPlan{Slots: []PlannedSlot{
		{ID: 0, Bytes: 1024, First: 0, Last: 9}, // [0, 1024)
		{ID: 1, Bytes: 512, First: 0, Last: 1},  // [1024, 1536), free after step 1
		{ID: 2, Bytes: 256, First: 0, Last: 9},  // [1536, 1792)
		{ID: 3, Bytes: 128, First: 0, Last: 1},  // [1792, 1920), free after step 1
		{ID: 4, Bytes: 128, First: 0, Last: 9},  // [1920, 2048)
		{ID: 5, Bytes: 128, First: 5, Last: 9},  // holes at step 5: [1024, 1536) and [1792, 1920)
	}}
	p.place()
	checkPlan(t, p)
	want := []int64{0, 1024, 1536, 1792, 1920, 1792}
	for i, b := range p.Slots {
		if b.Offset != want[i] {
			t.Errorf("slot %d at %d, want %d", b.ID, b.Offset, want[i])
		}
	}
	if p.ArenaBytes != 2048 || p.NaiveBytes != 2176 {
		t.Errorf("arena %d, naive %d; want 2048 and 2176", p.ArenaBytes, p.NaiveBytes)
	}
}

// checkPlan fails if two buffers busy at one step share a byte, if an
// offset is misaligned, or if the arena does not hold every buffer.
func checkPlan(t *testing.T, p *MemoryPlan) {
	t.Helper()
	for i, a := range p.Slots {
		if a.Offset%MemoryAlign != 0 && a.Bytes%MemoryAlign == 0 {
			t.Errorf("slot %d at offset %d: not %d-aligned", a.ID, a.Offset, MemoryAlign)
		}
		if a.Offset+a.Bytes > p.ArenaBytes {
			t.Errorf("slot %d [%d, %d) beyond the arena of %d bytes", a.ID, a.Offset, a.Offset+a.Bytes, p.ArenaBytes)
		}
		for _, b := range p.Slots[i+1:] {
			timeOverlap := a.First <= b.Last && b.First <= a.Last
			spaceOverlap := a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes
			if timeOverlap && spaceOverlap {
				t.Errorf("slot %d [%d, %d) steps %d-%d and slot %d [%d, %d) steps %d-%d share memory while both live",
					a.ID, a.Offset, a.Offset+a.Bytes, a.First, a.Last, b.ID, b.Offset, b.Offset+b.Bytes, b.First, b.Last)
			}
		}
	}
	if p.ArenaBytes > p.NaiveBytes {
		t.Errorf("arena %d bytes exceeds the naive %d", p.ArenaBytes, p.NaiveBytes)
	}
}

func TestPlanMemoryErrors(t *testing.T) {
	s := lowerText(t, chain)
	if _, err := PlanMemory(s, 0, 8); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("batch 0: %v", err)
	}
	odd := lowerText(t, `graph "odd" opset 17 {
  input %ids: i64[batch, seq]
  input %x: f32[batch, seq, width]
  %a = Relu(%x)
  output %a: f32[batch, seq, width]
}`)
	if p, err := PlanMemory(odd, 1, 8); err != nil || len(p.Unplanned) != 1 || odd.Slots()[p.Unplanned[0]].Name != "a" {
		t.Errorf("a third symbolic dim: %v, want %%a unplanned (%+v)", err, p)
	}
	none := lowerText(t, `graph "none" opset 17 {
  input %x: f32[4, 16]
  %a = Relu(%x)
  output %a: f32[4, 16]
}`)
	if _, err := PlanMemory(none, 1, 8); !errors.Is(err, compiler.ErrUnsupportedOp) {
		t.Errorf("no token input: %v", err)
	}
}

// TestEngineAllocatesThePlan: after runs of growing shapes, the engine's
// arena is the plan at the largest batch and sequence run, byte for
// byte, and its activations hold nothing else when every slot is
// planned.
func TestEngineAllocatesThePlan(t *testing.T) {
	g := parse(t, allocModel)
	p := compile(t, g, nil, 2)
	if p.Plan() != nil {
		t.Error("a plan before the first run")
	}
	run(t, p, allocInputs(2, 16))
	run(t, p, allocInputs(4, 7))
	want, err := PlanMemory(p.Schedule, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Plan()
	if got.ArenaBytes != want.ArenaBytes || int64(len(p.arena)) != want.ArenaBytes || len(got.Slots) != len(want.Slots) {
		t.Fatalf("engine arena %d bytes (plan %d), PlanMemory at 4 x 16: %d", len(p.arena), got.ArenaBytes, want.ArenaBytes)
	}
	for i := range want.Slots {
		if got.Slots[i] != want.Slots[i] {
			t.Errorf("slot %d at %+v in the engine, %+v in PlanMemory", i, got.Slots[i], want.Slots[i])
		}
	}
	m := p.Memory()
	if len(want.Unplanned) == 0 && m.Activations != want.ArenaBytes {
		t.Errorf("activations %d bytes, the plan's arena %d (everything planned)", m.Activations, want.ArenaBytes)
	}
}
