package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/internal/goroutines"
)

// checkRun runs n indices and checks each ran exactly once, with worker
// ids in range and never shared by two calls running at once.
func checkRun(t *testing.T, p *Pool, n int) {
	t.Helper()
	counts := make([]atomic.Int32, n)
	busy := make([]atomic.Int32, p.Workers())
	var bad atomic.Int32
	p.Run(n, func(w, i int) {
		if w < 0 || w >= p.Workers() {
			bad.Add(1)
			return
		}
		if busy[w].Add(1) != 1 {
			bad.Add(1)
		}
		counts[i].Add(1)
		busy[w].Add(-1)
	})
	if bad.Load() != 0 {
		t.Fatalf("n=%d: %d calls had a bad or shared worker id", n, bad.Load())
	}
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			t.Fatalf("n=%d: index %d ran %d times", n, i, c)
		}
	}
}

func TestRunCoversEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		p := New(workers)
		for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
			checkRun(t, p, n)
		}
		p.Close()
	}
}

func TestRunUsesSeveralWorkers(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	p := New(2)
	defer p.Close()
	// Two indices that each wait for the other: only completes if they
	// run at the same time on two workers.
	var arrived atomic.Int32
	var ids [2]int
	p.Run(2, func(w, i int) {
		ids[i] = w
		arrived.Add(1)
		deadline := time.Now().Add(10 * time.Second)
		for arrived.Load() < 2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	})
	if arrived.Load() != 2 || ids[0] == ids[1] {
		t.Fatalf("indices did not run concurrently on distinct workers: ids %v", ids)
	}
}

func TestConcurrentCallers(t *testing.T) {
	p := New(3)
	defer p.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 200 {
				checkRun(t, p, 1+(g*7+r)%37)
			}
		}()
	}
	wg.Wait()
}

// poolNew is the creator of every helper goroutine.
const poolNew = "github.com/sqc-dev/sqc/runtime/pool.New"

func TestNoGoroutineLeakAfterClose(t *testing.T) {
	if got := goroutines.WaitCreatedBy(poolNew, 0, 5*time.Second); got != 0 {
		t.Fatalf("%d helper goroutines of earlier tests' pools still run 5 s after their Close", got)
	}
	p := New(6)
	defer p.Close() // on failure, so later tests see no stray helpers
	checkRun(t, p, 100)
	if got := goroutines.CreatedBy(poolNew); got != 5 {
		t.Fatalf("New(6) started %d helper goroutines, want 5", got)
	}
	p.Close()
	p.Close() // idempotent
	if got := goroutines.WaitCreatedBy(poolNew, 0, 5*time.Second); got != 0 {
		t.Fatalf("%d helper goroutines still run 5 s after Close", got)
	}
	// Run after Close still does the work, on the caller.
	checkRun(t, p, 10)
}

func TestCloseWhileRunning(t *testing.T) {
	p := New(4)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				checkRun(t, p, 20)
			}
		}()
	}
	time.Sleep(time.Millisecond)
	p.Close()
	wg.Wait()
}

func TestRunDoesNotAllocate(t *testing.T) {
	p := New(2)
	defer p.Close()
	var sum atomic.Int64
	fn := func(_, i int) { sum.Add(int64(i)) }
	allocs := testing.AllocsPerRun(1000, func() { p.Run(64, fn) })
	if allocs > 0 {
		t.Fatalf("Run allocates %.1f times per call", allocs)
	}
}

func BenchmarkRun(b *testing.B) {
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		p := New(workers)
		fn := func(_, _ int) {}
		b.Run("workers="+string(rune('0'+workers)), func(b *testing.B) {
			for b.Loop() {
				p.Run(workers, fn)
			}
		})
		p.Close()
	}
}

func TestFreeListRecycles(t *testing.T) {
	made := 0
	l := &FreeList[[4]int]{New: func() *[4]int { made++; return new([4]int) }}
	a, b := l.Get(), l.Get()
	if made != 2 || a == b {
		t.Fatalf("two Gets from an empty list made %d values (same: %v)", made, a == b)
	}
	l.Put(a)
	l.Put(b)
	if c, d := l.Get(), l.Get(); made != 2 || c != b || d != a {
		t.Errorf("Gets after Puts made %d values, want the 2 recycled ones (last in, first out)", made)
	}
	l.Put(a)
	if allocs := testing.AllocsPerRun(100, func() { l.Put(l.Get()) }); allocs != 0 {
		t.Errorf("%g allocations per Get and Put in steady state", allocs)
	}
}

// A caller whose helpers are all busy elsewhere does the whole loop itself
// and returns without waiting for them: a ticket nobody took in time is
// void, and a helper that takes it late leaves the job alone.
func TestCallerDoesNotWaitForBusyHelper(t *testing.T) {
	p := New(2)
	defer p.Close()
	release := make(chan struct{})
	helperBusy := make(chan struct{})
	first := make(chan struct{})
	go func() {
		defer close(first)
		// The helper's index parks until release.
		runOneEach(p, func() {
			close(helperBusy)
			<-release
		})
	}()
	<-helperBusy
	// The first caller has finished its index and given back its id: the
	// second loop takes it, and must not wait for the parked helper.
	second := make(chan struct{})
	go func() {
		defer close(second)
		checkRun(t, p, 50)
	}()
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		close(release) // so that Close does not wait for ever
		t.Fatal("Run waited for a helper that was busy with another loop")
	}
	close(release)
	<-first
	// The late ticket is void: later loops still run every index once.
	for range 100 {
		checkRun(t, p, 7)
	}
}

func TestSpinnerIsBounded(t *testing.T) {
	var s spinner
	start := time.Now()
	polls := 0
	for s.more() {
		polls++
	}
	if elapsed := time.Since(start); elapsed < spinFor {
		t.Fatalf("spinner gave up after %v (%d polls), before spinFor = %v", elapsed, polls, spinFor)
	}
}

// Stats counts the loops spread over helpers and the time their callers
// wait for a helper's last index.
func TestStatsCountLoopsAndCallerWait(t *testing.T) {
	p := New(2)
	defer p.Close()
	before := p.Stats()
	const nap = 20 * time.Millisecond
	// The helper's index naps, so the caller waits about that long.
	runOneEach(p, func() { time.Sleep(nap) })
	checkRun(t, p, 50)
	p.Run(1, func(_, _ int) {}) // inline: not counted
	got := p.Stats().Sub(before)
	if got.Loops != 2 || got.Items != 52 {
		t.Errorf("Stats: %d loops, %d items; want 2 loops of 2 and 50 indices", got.Loops, got.Items)
	}
	if got.CallerWait < nap/2 || got.CallerWait > 10*time.Second {
		t.Errorf("Stats: callers waited %v; the helper's last index took %v", got.CallerWait, nap)
	}
	one := New(1)
	defer one.Close()
	checkRun(t, one, 10)
	if s := one.Stats(); s.Loops != 0 {
		t.Errorf("a one-worker pool counted %d loops; it runs them inline", s.Loops)
	}
}

// runOneEach runs a loop of 2 indices on a fresh 2-worker pool p with the
// caller and the helper taking one each, and helper running in the
// helper's. A fresh pool hands out ids in order, so the caller runs as
// worker 0 and the helper as worker 1; each index waits until the other
// has started, so neither participant takes both.
func runOneEach(p *Pool, helper func()) {
	var started atomic.Int32
	p.Run(2, func(w, _ int) {
		started.Add(1)
		for started.Load() < 2 {
			runtime.Gosched()
		}
		if w == 1 {
			helper()
		}
	})
}
