package passes

import (
	"errors"
	"strconv"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// chain is five elementwise steps on [batch, seq, 16] f32 (64 bytes per
// token) and a [batch, seq] i64 side value: buffers can be reused down
// the chain.
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

func TestPlanMemory(t *testing.T) {
	g := parseGraph(t, chain)
	p, err := PlanMemoryOf(g, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if p.Batch != "batch" || p.Seq != "seq" {
		t.Errorf("token dims %q, %q", p.Batch, p.Seq)
	}
	// Every f32 value: 2*8*16*4 = 1024 bytes; n: 2*8*8 = 128 bytes.
	sizes := map[string]int64{}
	for _, b := range p.Buffers {
		sizes[b.Value] = b.Bytes
	}
	want := map[string]int64{"a": 1024, "b": 1024, "c": 1024, "d": 1024, "e": 1024, "n": 128}
	for v, n := range want {
		if sizes[v] != n {
			t.Errorf("%s: %d bytes, want %d", v, sizes[v], n)
		}
	}
	if len(p.Buffers) != len(want) {
		t.Errorf("%d buffers, want %d", len(p.Buffers), len(want))
	}
	checkPlan(t, p)
	if p.NaiveBytes != 5*1024+128 {
		t.Errorf("naive %d bytes, want %d", p.NaiveBytes, 5*1024+128)
	}
	// a lives until d reads it, so at d three f32 buffers are busy (a, c,
	// d); n (a graph output from node 4 on) then fits below that peak.
	if p.ArenaBytes != 3*1024 {
		t.Errorf("arena %d bytes, want %d\n%+v", p.ArenaBytes, 3*1024, p.Buffers)
	}

	// The pass records the sizes and changes nothing else.
	before := g.Text()
	if !runPasses(t, g, PlanMemory(2, 8)) {
		t.Error("the first run reported no change")
	}
	if got := g.Meta[MetaMemoryArenaBytes]; got != strconv.FormatInt(p.ArenaBytes, 10) {
		t.Errorf("meta arena %q, want %d", got, p.ArenaBytes)
	}
	if g.Meta[MetaMemoryNaiveBytes] != "5248" || g.Meta[MetaMemoryMaxBatch] != "2" || g.Meta[MetaMemoryMaxSeq] != "8" {
		t.Errorf("meta %v", g.Meta)
	}
	if runPasses(t, g, PlanMemory(2, 8)) {
		t.Error("a second run reported a change")
	}
	delete(g.Meta, MetaMemoryArenaBytes)
	delete(g.Meta, MetaMemoryNaiveBytes)
	delete(g.Meta, MetaMemoryMaxBatch)
	delete(g.Meta, MetaMemoryMaxSeq)
	if g.Text() != before {
		t.Errorf("PlanMemory changed the graph beyond its meta keys")
	}
}

// TestPlanMemoryBestFit: a buffer goes into the tightest gap that holds
// it, not the lowest.
func TestPlanMemoryBestFit(t *testing.T) {
	p := &MemoryPlan{Buffers: []PlannedBuffer{
		{Value: "a", Bytes: 1024, First: 0, Last: 9},   // [0, 1024)
		{Value: "w", Bytes: 512, First: 0, Last: 1},    // [1024, 1536), free after node 1
		{Value: "b", Bytes: 256, First: 0, Last: 9},    // [1536, 1792)
		{Value: "t1", Bytes: 128, First: 0, Last: 1},   // [1792, 1920), free after node 1
		{Value: "t2", Bytes: 128, First: 0, Last: 9},   // [1920, 2048)
		{Value: "late", Bytes: 128, First: 5, Last: 9}, // holes at node 5: [1024, 1536) and [1792, 1920)
	}}
	p.place()
	checkPlan(t, p)
	want := map[string]int64{"a": 0, "w": 1024, "b": 1536, "t1": 1792, "t2": 1920, "late": 1792}
	for _, b := range p.Buffers {
		if b.Offset != want[b.Value] {
			t.Errorf("%s at %d, want %d", b.Value, b.Offset, want[b.Value])
		}
	}
	if p.ArenaBytes != 2048 || p.NaiveBytes != 2176 {
		t.Errorf("arena %d, naive %d; want 2048 and 2176", p.ArenaBytes, p.NaiveBytes)
	}
}

// checkPlan fails if two buffers busy at one node share a byte, if an
// offset is misaligned, or if the arena does not hold every buffer.
func checkPlan(t *testing.T, p *MemoryPlan) {
	t.Helper()
	for i, a := range p.Buffers {
		if a.Offset%MemoryAlign != 0 && a.Bytes%MemoryAlign == 0 {
			t.Errorf("%s at offset %d: not %d-aligned", a.Value, a.Offset, MemoryAlign)
		}
		if a.Offset+a.Bytes > p.ArenaBytes {
			t.Errorf("%s [%d, %d) beyond the arena of %d bytes", a.Value, a.Offset, a.Offset+a.Bytes, p.ArenaBytes)
		}
		for _, b := range p.Buffers[i+1:] {
			timeOverlap := a.First <= b.Last && b.First <= a.Last
			spaceOverlap := a.Offset < b.Offset+b.Bytes && b.Offset < a.Offset+a.Bytes
			if timeOverlap && spaceOverlap {
				t.Errorf("%s [%d, %d) nodes %d-%d and %s [%d, %d) nodes %d-%d share memory while both live",
					a.Value, a.Offset, a.Offset+a.Bytes, a.First, a.Last, b.Value, b.Offset, b.Offset+b.Bytes, b.First, b.Last)
			}
		}
	}
	if p.ArenaBytes > p.NaiveBytes {
		t.Errorf("arena %d bytes exceeds the naive %d", p.ArenaBytes, p.NaiveBytes)
	}
}

func TestPlanMemoryErrors(t *testing.T) {
	g := parseGraph(t, chain)
	if _, err := PlanMemoryOf(g, 0, 8); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("batch 0: %v", err)
	}
	odd := parseGraph(t, `graph "odd" opset 17 {
  input %ids: i64[batch, seq]
  input %x: f32[batch, seq, width]
  %a = Relu(%x)
  output %a: f32[batch, seq, width]
}`)
	if _, err := PlanMemoryOf(odd, 1, 8); !errors.Is(err, compiler.ErrUnsupportedOp) || !errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("a third symbolic dim: %v", err)
	}
	none := parseGraph(t, `graph "none" opset 17 {
  input %x: f32[4, 16]
  %a = Relu(%x)
  output %a: f32[4, 16]
}`)
	if _, err := PlanMemoryOf(none, 1, 8); !errors.Is(err, compiler.ErrUnsupportedOp) {
		t.Errorf("no token input: %v", err)
	}
}
