package roofline

import (
	"runtime"
	"sync"
	"time"
)

// rate runs work on threads goroutines at once (each locked to its OS
// thread), in rounds, until budget has passed (at least minRounds), and
// returns the best round's total units per second: a ceiling is what the
// machine can do, so rounds slowed by other processes are discarded, not
// averaged in. work(worker) does one burst and returns the units it did.
func rate(threads int, budget time.Duration, minRounds int, work func(worker int) float64) float64 {
	best := 0.0
	start := time.Now()
	units := make([]float64, threads)
	for round := 0; round < minRounds || time.Since(start) < budget; round++ {
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := 0; w < threads; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				units[w] = work(w)
			}(w)
		}
		wg.Wait()
		el := time.Since(t0).Seconds()
		total := 0.0
		for _, u := range units {
			total += u
		}
		if el > 0 {
			best = max(best, total/el)
		}
	}
	return best
}
