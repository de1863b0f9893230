package pool

import (
	"runtime"
	"time"
)

// Spin-then-park waiting.
//
// A parallel loop of a forward pass lasts tens of microseconds to a few
// milliseconds, and a pass runs a hundred or more of them back to back with
// a few microseconds of serial work in between. If a helper that runs out
// of work blocks at once (a channel receive: the goroutine parks, its
// thread sleeps in futex and, in a VM, its vCPU halts), the next loop pays
// to wake it: a futex wake, an inter-processor interrupt and a
// rescheduling, tens of microseconds on a KVM guest, and the caller runs
// alone meanwhile. So helpers and waiting callers first poll for a while,
// as ONNX Runtime's and OpenMP's threads do, and block only when nothing
// came: a pass keeps its helpers awake from one loop to the next, while an
// idle pool costs at most spinFor of CPU per helper after its last job.

// spinFor bounds how long a helper polls for its next ticket, and a caller
// for its helpers to finish, before blocking. The serial gaps between a
// BERT pass's parallel loops are short (measured on bert-base 1x128, 2
// threads: median 2 µs, 99th percentile 26 µs), so 50 µs keeps helpers
// awake through a whole pass, while an idle pool burns at most 50 µs of
// CPU per helper after its last job.
const spinFor = 50 * time.Microsecond

// pollsPerCheck is how many polls (each followed by spinPause, about
// 0.1-0.3 µs) pass between reads of the clock and offers of the CPU to
// other goroutines and threads: a few µs.
const pollsPerCheck = 16

// spinner tracks one bounded spin.
type spinner struct {
	polls int
	start time.Time
}

// more reports whether the spin may go on; it pauses the CPU briefly before
// it returns true. Every pollsPerCheck polls it also yields: first to the
// process's runnable goroutines (runtime.Gosched), so that a program with
// other work to do (a server's HTTP goroutines, which a pass's spinning
// helpers and callers would otherwise keep off both cores until the pass
// ends) does it in the gaps instead of the spinner burning them; then the
// thread to the OS, so that on an oversubscribed machine a spinner gives
// its time slice to runnable threads (the very goroutine it waits for,
// perhaps). With nothing else runnable both yields return at once.
//
// A spinner that yielded to a goroutine may come back late, when its P
// has run out of other work: a helper then joins the next loop late or
// not at all (the caller does the loop's indices alone, see job), a
// waiting caller resumes once the helpers have left. Either way the cores
// were doing useful work meanwhile; the results do not depend on it.
func (s *spinner) more() bool {
	if s.polls == 0 {
		s.start = time.Now()
	}
	s.polls++
	if s.polls%pollsPerCheck == 0 {
		if time.Since(s.start) > spinFor {
			return false
		}
		runtime.Gosched()
		osYield()
	}
	spinPause()
	return true
}
