package pool

import (
	"sync/atomic"
	"time"
)

// Stats counts a Pool's parallel loops (the Run calls that spread over
// helpers; one-worker and one-index loops run inline and are not counted)
// and how long their callers waited, for profiles such as `sqc
// roofline`'s: a forward pass's loops are its steps, and what a caller
// spends waiting for the helpers after running out of indices is what the
// loops' last blocks cost in imbalance (the helpers' own idle time at a
// loop's end, spent spinning for the next ticket, is not counted). The
// clock is read only while a caller waits, so counting costs Run nothing
// measurable.
type Stats struct {
	Loops int64 // Run calls spread over helpers
	Items int64 // indices those loops ran
	// CallerWait is the time callers spent waiting for helpers to finish
	// the last indices, having run out of their own.
	CallerWait time.Duration
}

// Sub is s minus an earlier snapshot of the same pool.
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{
		Loops: s.Loops - earlier.Loops, Items: s.Items - earlier.Items,
		CallerWait: s.CallerWait - earlier.CallerWait,
	}
}

// stats are a Pool's counters (Pool.Stats), updated by Run callers.
type stats struct {
	loops, items, callerWait atomic.Int64
}

// Stats returns the pool's counters since New.
func (p *Pool) Stats() Stats {
	return Stats{
		Loops: p.stats.loops.Load(), Items: p.stats.items.Load(),
		CallerWait: time.Duration(p.stats.callerWait.Load()),
	}
}
