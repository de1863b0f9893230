//go:build linux

package pool

import "syscall"

// osYield gives up the thread's CPU to other runnable threads, if any
// (sched_yield(2); it cannot fail).
func osYield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
