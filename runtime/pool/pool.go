// Package pool is a persistent worker pool for sqc's kernels: a fixed set
// of long-lived goroutines that run parallel-for loops, so a GEMM call
// costs a few channel operations instead of goroutine spawns, and no
// allocation in steady state. Helpers that run out of work, and callers
// waiting for helpers, poll for a bounded time (spinFor) before they block,
// so that back-to-back loops do not pay to wake sleeping threads (see
// spin.go).
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
	"time"
)

// Pool runs parallel-for loops on a fixed set of goroutines. It is safe for
// concurrent use. The zero value is not usable; call New.
type Pool struct {
	workers int

	// ids holds the worker ids not in use. Whoever runs fn (a helper
	// goroutine or a Run caller) holds an id from here while it does, and
	// blocks on nothing else meanwhile, so an id always comes back.
	ids chan int
	// tickets carries one entry per helper asked to join a job; a ticket
	// with a nil job tells a helper to exit.
	tickets chan ticket
	jobs    FreeList[job] // reused so Run does not allocate

	mu      sync.RWMutex // held shared while sending tickets, exclusively by Close
	closed  bool
	helpers sync.WaitGroup

	stats stats // Stats
}

// job is one Run call. The caller and the helpers that join it take
// indices from next until n. When the caller has run out of indices it
// closes the job: helpers that have not joined by then (descheduled, or
// still waking up) no longer can, so the caller never waits for a helper
// that did no work; it waits only for those inside, the last of which
// signals done.
//
// A job is recycled through Pool.jobs, so a ticket names the generation it
// was sent for; a late helper holding a ticket of an earlier generation
// finds the generation changed and leaves the job alone.
type job struct {
	fn   func(worker, i int)
	n    int64
	next atomic.Int64
	gen  uint32 // the current Run's generation; written by that caller only
	// state is gen<<32 | closedBit | the number of helpers inside.
	state atomic.Uint64
	done  chan struct{} // capacity 1; signalled by the last helper to leave a closed job
}

// ticket asks a helper to join generation gen of job j.
type ticket struct {
	j   *job
	gen uint32
}

const (
	closedBit = 1 << 31
	countMask = closedBit - 1
)

// New starts a pool of the given number of workers (GOMAXPROCS if
// workers <= 0).
func New(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pool{
		workers: workers,
		ids:     make(chan int, workers),
		tickets: make(chan ticket, workers),
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
	// anything but fn: helpers inside a job wait for ids.
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
	j.gen++
	j.state.Store(uint64(j.gen) << 32) // publishes fn and n to joining helpers
send:
	for range min(n, p.workers) - 1 {
		// A full ticket queue means the helpers are busy anyway; the caller
		// and the helpers already asked will do the work.
		select {
		case p.tickets <- ticket{j, j.gen}:
		default:
			break send
		}
	}
	p.mu.RUnlock()

	j.work(id)
	p.ids <- id // before waiting: a helper inside may need it
	p.stats.loops.Add(1)
	p.stats.items.Add(int64(n))
	if j.state.Or(closedBit)&countMask != 0 {
		// The clock is read only here, where the caller is idle anyway.
		t := time.Now()
		j.wait()
		p.stats.callerWait.Add(int64(time.Since(t)))
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

// join enters generation gen of the job, unless it is over or closed.
func (j *job) join(gen uint32) bool {
	for {
		s := j.state.Load()
		if uint32(s>>32) != gen || s&closedBit != 0 {
			return false
		}
		if j.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// leave exits the job; the last helper out of a closed job wakes its
// caller.
func (j *job) leave() {
	if s := j.state.Add(^uint64(0)); s&closedBit != 0 && s&countMask == 0 {
		j.done <- struct{}{}
	}
}

// wait returns once the last helper has left, polling for spinFor before
// it blocks.
func (j *job) wait() {
	var s spinner
	for {
		select {
		case <-j.done:
			return
		default:
		}
		if !s.more() {
			<-j.done
			return
		}
	}
}

// nextTicket returns the next ticket, polling for spinFor before it
// blocks.
func (p *Pool) nextTicket() ticket {
	var s spinner
	for {
		select {
		case t := <-p.tickets:
			return t
		default:
		}
		if !s.more() {
			return <-p.tickets
		}
	}
}

func (p *Pool) helper() {
	defer p.helpers.Done()
	for {
		t := p.nextTicket()
		if t.j == nil {
			return
		}
		if !t.j.join(t.gen) {
			continue // the caller finished without this helper
		}
		id := <-p.ids
		t.j.work(id)
		p.ids <- id
		t.j.leave()
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
		p.tickets <- ticket{}
	}
	p.helpers.Wait()
}
