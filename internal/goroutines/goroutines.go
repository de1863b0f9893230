// Package goroutines counts live goroutines by the function that started
// them, for tests that check a pool starts and stops its helpers. Counting
// by creator, not runtime.NumGoroutine, keeps unrelated goroutines out:
// another test's helpers still exiting after their Close returned (which
// under -race lasts long enough to be seen) would otherwise move the count.
package goroutines

import (
	"runtime"
	"strings"
	"time"
)

// CreatedBy counts the goroutines whose "created by" line names fn, a
// fully qualified function such as "github.com/sqc-dev/sqc/runtime/pool.New".
// Goroutines not yet started count too: their stack already names their
// creator.
func CreatedBy(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "\ncreated by "+fn+" ")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// WaitCreatedBy waits up to timeout for exactly want goroutines created by
// fn and returns how many there are when it stops.
func WaitCreatedBy(fn string, want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	got := CreatedBy(fn)
	for got != want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		got = CreatedBy(fn)
	}
	return got
}
