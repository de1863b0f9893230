package roofline

import (
	"runtime"
	"sync"
	"time"
)

// rate runs work on threads goroutines at once (each locked to its OS
// thread), in rounds, until budget has passed (at least minRounds), and
// returns the best round's rate: the units all threads did over the
// longest time any thread was running. Time is each thread's CPU time
// where the OS reports it (threadCPU), so a round in which other
// processes took the core away is not charged for the time it waited:
// on a loaded machine wall-clock ceilings come out at a fraction of the
// hardware's. A ceiling is what the machine can do, so the best round
// counts, not the average. work(worker) does one burst and returns its
// units.
func rate(threads int, budget time.Duration, minRounds int, work func(worker int) float64) float64 {
	best := 0.0
	start := time.Now()
	units := make([]float64, threads)
	secs := make([]float64, threads)
	for round := 0; round < minRounds || time.Since(start) < budget; round++ {
		var wg sync.WaitGroup
		for w := 0; w < threads; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0, t0 := threadCPU(), time.Now()
				units[w] = work(w)
				if c0 >= 0 {
					secs[w] = (threadCPU() - c0).Seconds()
				} else {
					secs[w] = time.Since(t0).Seconds()
				}
			}(w)
		}
		wg.Wait()
		total, longest := 0.0, 0.0
		for w := range units {
			total += units[w]
			longest = max(longest, secs[w])
		}
		if longest > 0 {
			best = max(best, total/longest)
		}
	}
	return best
}
