package qgemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// finishRecorder is a RowFinisher that checks, on every call, that the
// rows it is given are complete: each output element of them already
// holds the reference bits (so no column of them is still to come), and
// no row is finished twice.
type finishRecorder struct {
	t       *testing.T
	workers int
	got     []float32 // the GEMM's output (OutF32)
	want    []float32 // the reference output, laid out like got
	stride  int
	n       int

	mu       sync.Mutex
	finished []int // per row: times finished
	blocks   int
	bad      []string
}

func (r *finishRecorder) FinishRows(worker, m0, m int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocks++
	if worker < 0 || worker >= r.workers || m <= 0 || m0 < 0 || m0+m > len(r.finished) {
		r.bad = append(r.bad, fmt.Sprintf("FinishRows(%d, %d, %d) out of range", worker, m0, m))
		return
	}
	for i := m0; i < m0+m; i++ {
		r.finished[i]++
		for j := 0; j < r.n; j++ {
			if g, w := r.got[i*r.stride+j], r.want[i*r.stride+j]; math.Float32bits(g) != math.Float32bits(w) {
				r.bad = append(r.bad, fmt.Sprintf("row %d finished before column %d was written (%v, want %v)", i, j, g, w))
				return
			}
		}
	}
}

// TestGEMMFinishesEveryRowOnceAfterItsColumns runs GEMMs with a
// RowFinisher over shapes whose plans cut rows into one and several
// macro-blocks, on one and two workers, with every variant, in both block
// orders: the one planGEMM picks and the other.
func TestGEMMFinishesEveryRowOnceAfterItsColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	shapes := []gemmShape{{1, 17, 20}, {45, 83, 150}, {128, 768, 768}, {200, 3072, 64}, {33, 768, 3072}}
	for _, tv := range testVariants() {
		if tv.why != "" {
			continue
		}
		for _, threads := range []int{1, 2} {
			e, err := New(Options{Threads: threads, Variant: &tv.v})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range shapes {
				p := newProblem(t, rng, s, 3)
				picked := e.plan(s.m, p.b, &Epilogue{Finish: &finishRecorder{}})
				other := blockPlan{rowMajor: !picked.rowMajor}
				other.mc, other.nc, _ = planBlocks(s.m, p.b.Np/NBlock, p.b.Kp, threads, e.costs, other.rowMajor)
				for _, pl := range []blockPlan{picked, other} {
					ep, f32buf, _ := newEpilogue(rng, p, epiOptions{bias: true, zeroPoint: true, residual: true})
					wantF, _ := expected(p, ep, f32buf, nil)
					r := &finishRecorder{t: t, workers: threads, got: ep.OutF32, want: wantF[guardElems:], stride: ep.OutStride, n: s.n,
						finished: make([]int, s.m)}
					ep.Finish = r
					if err := checkGEMM(p.a, s.m, p.lda, p.b, ep); err != nil {
						t.Fatal(err)
					}
					e.gemmBlocks(e.variant.Kernel, e.variant.fusedBlock, p.a, s.m, p.lda, p.b, ep, pl)
					what := fmt.Sprintf("%s T=%d %v (blocks %dx%d, row-major %v, picked %v)", tv.name, threads, s, pl.mc, pl.nc, pl.rowMajor, pl == picked)
					for _, b := range r.bad {
						t.Errorf("%s: %s", what, b)
					}
					for i, c := range r.finished {
						if c != 1 {
							t.Errorf("%s: row %d finished %d times", what, i, c)
							break
						}
					}
					if want := (s.m + pl.mc - 1) / pl.mc; r.blocks != want {
						t.Errorf("%s: %d FinishRows calls, want one per row block (%d)", what, r.blocks, want)
					}
				}
			}
			e.Close()
		}
	}
}

// TestPlanGEMMFinishOrder checks planGEMM's plans for GEMMs with a
// finisher: full-row blocks wherever the scratch holds mcAlign rows of the
// width, an even share per worker at small M, on every ISA; and, for rows
// too wide for that, the order rule against the measurements behind
// maxFinishTail (VNNI, 2 workers, N = 768, taken as the order rule alone):
// column-major where it measured faster, row-major where it measured
// slower; and that every plan without a finisher is column-major.
func TestPlanGEMMFinishOrder(t *testing.T) {
	for _, isa := range []ISA{ISAGo, ISAAVX2, ISAVNNI, ISAAMX} {
		for _, c := range []struct{ m, n, k, rows int }{
			{1024, 768, 3072, 64}, {1024, 768, 768, 64}, {800, 768, 768, 64}, {128, 768, 768, 64}, {128, 768, 3072, 64},
			{32, 768, 768, 16}, {50, 768, 768, 25}, {1, 768, 768, 1}, {1024, 1024, 1024, 32}, {100, 2032, 1024, 32},
		} {
			want := blockPlan{mc: c.rows, nc: c.n}
			if pl := planGEMM(c.m, c.n/NBlock, c.k, 2, costsFor(isa), true); pl != want {
				t.Errorf("%v M=%d N=%d K=%d with a finish: %+v, want full-row blocks %+v", isa, c.m, c.n, c.k, pl, want)
			}
		}
		// 2048 columns or more: not even mcAlign rows fit the scratch.
		if pl := planGEMM(100, 4096/NBlock, 1024, 2, costsFor(isa), true); pl.nc == 4096 {
			t.Errorf("%v M=100 N=4096: full-row blocks %+v beyond the scratch", isa, pl)
		}
	}
	vnni := costsFor(ISAVNNI)
	for _, c := range []struct {
		m, k     int
		rowMajor bool
	}{{1024, 3072, false}, {128, 3072, false}, {32, 3072, false}, {128, 768, false}, {1024, 768, false}, {800, 768, true}, {32, 768, true}} {
		if pl := planFinishOrder(c.m, 768/NBlock, c.k, 2, vnni); pl.rowMajor != c.rowMajor {
			t.Errorf("VNNI M=%d K=%d order rule: row-major %v (%dx%d), measured faster: row-major %v", c.m, c.k, pl.rowMajor, pl.mc, pl.nc, c.rowMajor)
		}
	}
	for _, isa := range []ISA{ISAGo, ISAAVX2, ISAVNNI, ISAAMX} {
		for _, m := range []int{1, 32, 128, 1024} {
			if pl := planGEMM(m, 768/NBlock, 768, 2, costsFor(isa), false); pl.rowMajor {
				t.Errorf("%v M=%d without a finish: row-major", isa, m)
			}
		}
	}
}

// TestEnvFinishOrder checks that SQC_FINISH_ORDER forces the order of
// GEMMs with a finisher only, says so in Describe, and rejects other
// values by name.
func TestEnvFinishOrder(t *testing.T) {
	b := &PackedB{K: 768, N: 768, Kp: 768, Np: 768}
	fin, plain := &Epilogue{Finish: &finishRecorder{}}, &Epilogue{}
	for _, c := range []struct {
		value, describe string
		rowMajor        bool
	}{{"row", "row-major", true}, {" Column ", "column-major", false}} {
		t.Setenv(EnvFinishOrder, c.value)
		e, err := New(Options{Threads: 2, ISA: "vnni"})
		if err != nil {
			t.Fatal(err)
		}
		// The model gives both M = 800 and M = 1024 full-row blocks (not
		// row-major); each forced order replaces them with its own.
		for _, m := range []int{800, 1024} {
			if pl := e.plan(m, b, fin); pl.rowMajor != c.rowMajor || pl == planGEMM(m, 48, 768, 2, e.costs, true) {
				t.Errorf("%s=%q, M=%d: %+v, want row-major %v and not the model's plan", EnvFinishOrder, c.value, m, pl, c.rowMajor)
			}
			if pl := e.plan(m, b, plain); pl.rowMajor {
				t.Errorf("%s=%q, M=%d: a GEMM without a finisher went row-major", EnvFinishOrder, c.value, m)
			}
		}
		if d := e.Describe(); !strings.Contains(d, c.describe) {
			t.Errorf("%s=%q: Describe() = %q, want it to say %s", EnvFinishOrder, c.value, d, c.describe)
		}
		e.Close()
	}
	t.Setenv(EnvFinishOrder, "")
	e, err := New(Options{Threads: 2, ISA: "vnni"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.plan(1024, b, fin), planGEMM(1024, 48, 768, 2, e.costs, true); got != want {
		t.Errorf("%s unset: plan %+v, want planGEMM's %+v", EnvFinishOrder, got, want)
	}
	e.Close()
	t.Setenv(EnvFinishOrder, "rows")
	if _, err := New(Options{}); !errors.Is(err, ErrUnknownFinishOrder) || !strings.Contains(err.Error(), EnvFinishOrder) {
		t.Errorf("%s=rows: New error %v, want ErrUnknownFinishOrder naming the variable", EnvFinishOrder, err)
	}
}

// TestOptionsFinishOrder checks that Options.FinishOrder forces the order
// of GEMMs with a finisher over SQC_FINISH_ORDER, says so in Describe,
// leaves the variable in charge at FinishByModel, and rejects values
// that are not orders; and that ParseFinishOrder takes back String's
// names.
func TestOptionsFinishOrder(t *testing.T) {
	b := &PackedB{K: 768, N: 768, Kp: 768, Np: 768}
	fin := &Epilogue{Finish: &finishRecorder{}}
	for _, c := range []struct {
		env      string
		opt      FinishOrder
		rowMajor bool
		describe string
	}{
		{"row", FinishColumnMajor, false, "column-major (Options.FinishOrder)"},
		{"column", FinishRowMajor, true, "row-major (Options.FinishOrder)"},
		{"row", FinishByModel, true, "row-major (SQC_FINISH_ORDER=row)"},
	} {
		t.Setenv(EnvFinishOrder, c.env)
		e, err := New(Options{Threads: 2, ISA: "vnni", FinishOrder: c.opt})
		if err != nil {
			t.Fatal(err)
		}
		// Each forced order replaces the model's full-row blocks.
		for _, m := range []int{800, 1024} {
			if pl := e.plan(m, b, fin); pl.rowMajor != c.rowMajor || pl == planGEMM(m, 48, 768, 2, e.costs, true) {
				t.Errorf("%s=%s, Options.FinishOrder %v, M=%d: %+v, want row-major %v and not the model's plan", EnvFinishOrder, c.env, c.opt, m, pl, c.rowMajor)
			}
		}
		if d := e.Describe(); !strings.Contains(d, c.describe) {
			t.Errorf("%s=%s, Options.FinishOrder %v: Describe() = %q, want it to say %q", EnvFinishOrder, c.env, c.opt, d, c.describe)
		}
		e.Close()
	}
	t.Setenv(EnvFinishOrder, "")
	if _, err := New(Options{FinishOrder: FinishRowMajor + 1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Options.FinishOrder %d: New error %v, want ErrInvalidArgument", FinishRowMajor+1, err)
	}
	for _, o := range []FinishOrder{FinishByModel, FinishColumnMajor, FinishRowMajor} {
		if got, err := ParseFinishOrder(o.String()); err != nil || got != o {
			t.Errorf("ParseFinishOrder(%q) = %v, %v; want %v", o.String(), got, err, o)
		}
	}
	if _, err := ParseFinishOrder("diagonal"); !errors.Is(err, ErrUnknownFinishOrder) || !strings.Contains(err.Error(), `"diagonal"`) {
		t.Errorf("ParseFinishOrder(diagonal): error %v, want ErrUnknownFinishOrder naming the value", err)
	}
}
