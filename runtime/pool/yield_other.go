//go:build !linux

package pool

import "runtime"

// osYield lets other goroutines run (the portable stand-in for
// sched_yield(2); the spin is bounded by spinFor regardless).
func osYield() { runtime.Gosched() }
