package reliability

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
)

// callers is how many goroutines share one Program or Model.
const callers = 32

// requests returns callers batches of mixed sizes (1 to 4 sequences) and
// sequence lengths (3 to 27 tokens, and cut to 2..9 tokens for every
// third request), as token ids.
func requests(d demo) [][][]int64 {
	all := d.encode(sentences)
	out := make([][][]int64, callers)
	for i := range out {
		n := 1 + i%4
		for j := range n {
			ids := all[(i*3+j*5)%len(all)]
			if i%3 == 2 {
				ids = ids[:min(len(ids), 2+(i+j)%8)]
			}
			out[i] = append(out[i], ids)
		}
	}
	return out
}

// TestConcurrentProgram calls one compiled Program from 32 goroutines at
// once with batches of different shapes; every result must be bitwise the
// one a serial run gave. Run under -race, this also checks the Program's
// buffer reuse (slots grown and shrunk between calls) for data races.
func TestConcurrentProgram(t *testing.T) {
	d := loadDemo(t)
	p := compileProgram(t, quantizedDemo(t, d, compiler.QLinearStatic), "", 2)
	reqs := requests(d)
	want := make([]map[string]*compiler.Tensor, len(reqs))
	for i, r := range reqs {
		out, err := p.Run(batch(r))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = out
	}
	got := make([]map[string]*compiler.Tensor, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i], errs[i] = p.Run(batch(r)) })
	}
	wg.Wait()
	for i := range reqs {
		if errs[i] != nil {
			t.Errorf("caller %d: %v", i, errs[i])
			continue
		}
		if diff := diffBits(got[i], want[i]); diff != "" {
			t.Errorf("caller %d (%d sequences): %s", i, len(reqs[i]), diff)
		}
	}
}

// TestConcurrentGenerated calls one generated Model (the example's
// sentimentmodel) from 32 goroutines at once, results bitwise equal to
// serial runs.
func TestConcurrentGenerated(t *testing.T) {
	d := loadDemo(t)
	m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reqs := requests(d)
	ctx := context.Background()
	want := make([][][]float32, len(reqs))
	for i, r := range reqs {
		out, err := m.Run(ctx, sentimentmodel.Batch{InputIDs: r})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = out.Logits
	}
	got := make([][][]float32, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			out, err := m.Run(ctx, sentimentmodel.Batch{InputIDs: r})
			got[i], errs[i] = out.Logits, err
		})
	}
	wg.Wait()
	for i := range reqs {
		if errs[i] != nil {
			t.Errorf("caller %d: %v", i, errs[i])
			continue
		}
		if diff := diffRows(got[i], want[i]); diff != "" {
			t.Errorf("caller %d (%d sequences): %s", i, len(reqs[i]), diff)
		}
	}
}

// cancelAfter is a context whose Err turns to context.Canceled after a
// given number of calls, so a test can cancel at each point of a forward
// pass without timing anything.
type cancelAfter struct {
	context.Context
	after  int64
	checks atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.checks.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

// TestCancelGenerated: a cancelled context stops a generated Model's Run
// at its next check (before each GEMM and attention) and Run returns
// ctx.Err(); a context cancelled before the call does no work. The
// number of checks made after the cancellation is the measure of
// promptness, not a clock.
func TestCancelGenerated(t *testing.T) {
	d := loadDemo(t)
	m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Two chunks of MaxBatch sequences: cancellation must also stop
	// between chunks.
	var ids [][]int64
	for i := range 2 * sentimentmodel.MaxBatch {
		ids = append(ids, d.encode(sentences[i%len(sentences):][:1])[0])
	}
	b := sentimentmodel.Batch{InputIDs: ids}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Run(cancelled, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context: %v, want context.Canceled", err)
	}

	full := &cancelAfter{Context: context.Background(), after: math.MaxInt64}
	if _, err := m.Run(full, b); err != nil {
		t.Fatal(err)
	}
	total := full.checks.Load()
	if total < 4 {
		t.Fatalf("Run checked its context %d times over two chunks; want a check per GEMM and attention", total)
	}
	for _, after := range []int64{0, 1, total / 2, total - 1} {
		ctx := &cancelAfter{Context: context.Background(), after: after}
		out, err := m.Run(ctx, b)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d of %d checks: err %v, want context.Canceled", after, total, err)
		}
		if out.Logits != nil {
			t.Errorf("cancelled after %d of %d checks: Run returned logits with its error", after, total)
		}
		if n := ctx.checks.Load(); n != after+1 {
			t.Errorf("cancelled after %d of %d checks: Run checked %d times, want %d (it must stop at the first check that sees the cancellation)", after, total, n, after+1)
		}
	}
}
