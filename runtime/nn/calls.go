package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// Per-call state of the parallel loops, so that they do not allocate.
//
// pool.Run takes a func(worker, i int) that the pool's helper goroutines
// call, so a closure over a kernel's arguments escapes to the heap: one
// allocation per call, and more for whatever it captures by address (the
// per-block softmax sums, LayerNorm's statistics). Instead, each parallel
// kernel keeps its arguments in a call struct whose task method value is
// bound once, when the struct is made, and recycles the structs through a
// pool.FreeList. The lists are caches, not state: a call sets every field
// it uses before running and clears its slices afterwards (so no caller
// memory stays reachable), and a list is safe for concurrent callers.

// recycler hands out call structs of type T, making them with newCall.
type recycler[T any] struct{ l pool.FreeList[T] }

func newRecycler[T any](newCall func() *T) *recycler[T] {
	return &recycler[T]{l: pool.FreeList[T]{New: newCall}}
}

func (r *recycler[T]) get() *T  { return r.l.Get() }
func (r *recycler[T]) put(c *T) { r.l.Put(c) }

// growStats returns s with room for n entries, reallocated only when its
// capacity is short.
func growStats[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// rowsCall is the state of a parallel loop over chunks of rows (the
// elementwise kernels and the quantisers): the kernel's arguments A and a
// top-level function body, which processes rows [r0, r1) (a function, not
// a closure, so passing it allocates nothing).
type rowsCall[A any] struct {
	args       A
	size, rows int // rows per chunk, all rows
	body       func(a *A, r0, r1 int)
	task       func(worker, c int)
}

func (c *rowsCall[A]) chunk(_, i int) {
	r0 := i * c.size
	c.body(&c.args, r0, min(r0+c.size, c.rows))
}

// newRowsRecycler returns the cache of one kernel's rowsCalls.
func newRowsRecycler[A any]() *recycler[rowsCall[A]] {
	return newRecycler(func() *rowsCall[A] {
		c := &rowsCall[A]{}
		c.task = c.chunk
		return c
	})
}

// elementsPerChunk is the least work given to one worker by the
// elementwise kernels and the quantisers, in elements: about 10 µs of
// quantisation, so that the pool's hand-off (a few µs) stays small.
const elementsPerChunk = 16 << 10

// forRows calls body(&args, r0, r1) over consecutive ranges covering
// [0, rows), in parallel on p: about 4 ranges per worker, each of at least
// elementsPerChunk elements when a row holds perRow (all on the caller's
// goroutine when that makes one range).
func forRows[A any](calls *recycler[rowsCall[A]], p *pool.Pool, rows, perRow int, args A, body func(a *A, r0, r1 int)) {
	if rows <= 0 {
		return
	}
	size, count := chunks(p, rows, max(1, elementsPerChunk/max(perRow, 1)))
	c := calls.get()
	c.args, c.size, c.rows, c.body = args, size, rows, body
	if count == 1 {
		c.body(&c.args, 0, rows)
	} else {
		parallelFor(p, count, c.task)
	}
	var zero A
	c.args, c.body = zero, nil // keep no caller memory alive
	calls.put(c)
}
