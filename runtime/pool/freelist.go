package pool

import "sync"

// FreeList recycles the per-call state of parallel loops (a struct holding
// a call's arguments and its bound func(worker, i int)), so that a call
// allocates nothing in steady state: Get returns a value Put back earlier,
// or a new one from New. Unlike sync.Pool it is never emptied by the
// garbage collector (a GC would otherwise cost each cache a few
// allocations to refill), and it holds at most as many values as were
// ever out at once. It is safe for concurrent use. Callers must clear the
// references a value holds before they Put it, so that the list keeps no
// caller memory alive.
type FreeList[T any] struct {
	New  func() *T
	mu   sync.Mutex
	free []*T
}

// Get returns a recycled value, or New() when none is free.
func (l *FreeList[T]) Get() *T {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		v := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return v
	}
	l.mu.Unlock()
	return l.New()
}

// Put makes v available to Get.
func (l *FreeList[T]) Put(v *T) {
	l.mu.Lock()
	l.free = append(l.free, v)
	l.mu.Unlock()
}
