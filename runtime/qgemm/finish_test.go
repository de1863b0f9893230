package qgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
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
// macro-blocks, on one and two workers, with every variant.
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
				ep, f32buf, _ := newEpilogue(rng, p, epiOptions{bias: true, zeroPoint: true, residual: true})
				wantF, _ := expected(p, ep, f32buf, nil)
				r := &finishRecorder{t: t, workers: threads, got: ep.OutF32, want: wantF[guardElems:], stride: ep.OutStride, n: s.n,
					finished: make([]int, s.m)}
				ep.Finish = r
				if err := e.GEMM(p.a, s.m, p.lda, p.b, ep); err != nil {
					t.Fatal(err)
				}
				mc, nc := planBlocks(s.m, p.b.Np/NBlock, p.b.Kp, threads, e.costs, true)
				what := fmt.Sprintf("%s T=%d %v (blocks %dx%d)", tv.name, threads, s, mc, nc)
				for _, b := range r.bad {
					t.Errorf("%s: %s", what, b)
				}
				for i, c := range r.finished {
					if c != 1 {
						t.Errorf("%s: row %d finished %d times", what, i, c)
						break
					}
				}
				if want := (s.m + mc - 1) / mc; r.blocks != want {
					t.Errorf("%s: %d FinishRows calls, want one per row block (%d)", what, r.blocks, want)
				}
			}
			e.Close()
		}
	}
}
