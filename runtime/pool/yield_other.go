//go:build !linux

package pool

// osYield would give the thread's CPU to other threads; there is no
// portable sched_yield(2), and spinner.more's runtime.Gosched already lets
// the process's other goroutines run (the spin is bounded by spinFor
// regardless).
func osYield() {}
