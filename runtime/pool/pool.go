// Package pool is a persistent worker pool for sqc's kernels: a fixed set
// of long-lived goroutines that run parallel-for loops, so a GEMM call
// costs a few channel operations instead of goroutine spawns, and no
// allocation in steady state.
//
// Worker ids are a resource: every call of fn gets a worker id in
// [0, Workers()), and no two calls of fn that run at the same time, from
// any number of concurrent Run callers, share an id. Callers can therefore
// keep per-worker scratch buffers indexed by id without locks.
package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs parallel-for loops on a fixed set of goroutines. It is safe for
// concurrent use. The zero value is not usable; call New.
type Pool struct {
	workers int

	// ids holds the worker ids not in use. Whoever runs fn (a helper
	// goroutine or a Run caller) holds an id from here while it does, and
	// blocks on nothing else meanwhile, so an id always comes back.
	ids chan int
	// tickets carries one entry per helper asked to join a job; nil tells
	// a helper to exit.
	tickets chan *job
	jobs    FreeList[job] // reused so Run does not allocate

	mu      sync.RWMutex // held shared while sending tickets, exclusively by Close
	closed  bool
	helpers sync.WaitGroup
}

// job is one Run call. Participants (the caller and every helper that got
// a ticket) take indices from next until n; the last
// participant to leave wakes the caller.
type job struct {
	fn      func(worker, i int)
	n       int64
	next    atomic.Int64
	pending atomic.Int32  // participants that have not left yet
	done    chan struct{} // capacity 1; signalled by the last helper
}

// New starts a pool of the given number of workers (GOMAXPROCS if
// workers <= 0).
func New(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pool{
		workers: workers,
		ids:     make(chan int, workers),
		tickets: make(chan *job, workers),
	}
	p.jobs.New = func() *job { return &job{done: make(chan struct{}, 1)} }
	for id := range workers {
		p.ids <- id
	}
	// Workers-1 helpers: every Run caller holds one id itself.
	p.helpers.Add(workers - 1)
	for range workers - 1 {
		go p.helper()
	}
	return p
}

// Workers is the number of worker ids, the most calls of fn that run at
// once.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn(worker, i) for every i in [0, n), spread over the pool's
// workers, and returns when all calls have returned. The caller's goroutine
// always takes part (it waits for a free worker id first), and up to
// Workers()-1 helpers join it. fn must not call Run on the same pool (it
// could wait for an id held by its own caller). After Close, Run still
// works but runs every call on the caller's goroutine.
func (p *Pool) Run(n int, fn func(worker, i int)) {
	if n <= 0 {
		return
	}
	// Take an id before anything else and never block while holding it on
	// anything but fn: helpers holding tickets wait for ids.
	id := <-p.ids
	if n == 1 || p.workers == 1 {
		runAll(n, fn, id)
		p.ids <- id
		return
	}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		runAll(n, fn, id)
		p.ids <- id
		return
	}
	j := p.jobs.Get()
	j.fn, j.n = fn, int64(n)
	j.next.Store(0)
	want := min(n, p.workers) - 1
	j.pending.Store(int32(1 + want))
	sent := 0
send:
	for range want {
		// A full ticket queue means the helpers are busy anyway; the caller
		// and the helpers already asked will do the work.
		select {
		case p.tickets <- j:
			sent++
		default:
			break send
		}
	}
	p.mu.RUnlock()
	if sent < want {
		j.pending.Add(int32(sent - want))
	}

	j.work(id)
	p.ids <- id // before waiting: a helper may need it to take its ticket
	if j.pending.Add(-1) != 0 {
		<-j.done
	}
	j.fn = nil // drop the closure so the pool does not keep it alive
	p.jobs.Put(j)
}

func runAll(n int, fn func(worker, i int), id int) {
	for i := range n {
		fn(id, i)
	}
}

func (j *job) work(id int) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(id, int(i))
	}
}

func (p *Pool) helper() {
	defer p.helpers.Done()
	for j := range p.tickets {
		if j == nil {
			return
		}
		id := <-p.ids
		j.work(id)
		p.ids <- id
		if j.pending.Add(-1) == 0 {
			j.done <- struct{}{}
		}
	}
}

// Close stops the helper goroutines and waits for them to exit. Run calls
// already in progress finish first. Close is idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	// Tickets are FIFO, so every job ticket sent before closed was set is
	// taken before these stop markers.
	for range p.workers - 1 {
		p.tickets <- nil
	}
	p.helpers.Wait()
}
