package qgemm

import (
	"sync/atomic"
	"time"
)

// Profile is where an Engine built with Options.Profile spent its time
// since New, summed over its workers (so at T threads it adds up to about
// T times the wall time of the GEMMs): kernel calls, epilogues run after
// them, fused calls (kernel and epilogue in one call, the AMX variant's),
// and row finishes (Epilogue.Finish, e.g. the LayerNorm of
// nn.LinearLayerNorm). Serial calls (GEMMSerial, KernelSerial,
// EpilogueSerial) count too. sqc roofline reads it to split each GEMM's
// time.
type Profile struct {
	Blocks                          int64 // macro-blocks and serial calls timed
	Kernel, Epilogue, Fused, Finish time.Duration
}

// Sub returns p - q: what ran between two reads of Engine.Profile.
func (p Profile) Sub(q Profile) Profile {
	return Profile{Blocks: p.Blocks - q.Blocks, Kernel: p.Kernel - q.Kernel, Epilogue: p.Epilogue - q.Epilogue,
		Fused: p.Fused - q.Fused, Finish: p.Finish - q.Finish}
}

// Total is the time of every part.
func (p Profile) Total() time.Duration { return p.Kernel + p.Epilogue + p.Fused + p.Finish }

// Profile returns what the Engine has timed so far, and false when it was
// built without Options.Profile (and times nothing). Read between GEMMs:
// a call still running is partly counted.
func (e *Engine) Profile() (Profile, bool) {
	p := e.prof
	if p == nil {
		return Profile{}, false
	}
	d := func(part profPart) time.Duration { return time.Duration(p.ns[part].Load()) }
	return Profile{Blocks: p.blocks.Load(), Kernel: d(profKernel), Epilogue: d(profEpilogue), Fused: d(profFused), Finish: d(profFinish)}, true
}

// profPart is one of the parts a Profile splits time into.
type profPart int

const (
	profKernel profPart = iota
	profEpilogue
	profFused
	profFinish
	profParts
)

// profiler accumulates an Engine's Profile. Its methods do nothing on a
// nil profiler (an Engine without Options.Profile), so the driver calls
// them unconditionally and pays a nil check per block when not profiling;
// with it, two clock reads and an atomic add per part of a block (~50 ns,
// against the 10-100 µs of a BERT GEMM's macro-block).
type profiler struct {
	blocks atomic.Int64
	ns     [profParts]atomic.Int64
}

// start returns the time a block's first part starts (zero without p).
func (p *profiler) start() time.Time {
	if p == nil {
		return time.Time{}
	}
	return time.Now()
}

// lap adds the time since *t to part and moves *t to now (inlined to a
// nil check where there is no profiler).
func (p *profiler) lap(part profPart, t *time.Time) {
	if p != nil {
		p.add(part, t)
	}
}

func (p *profiler) add(part profPart, t *time.Time) {
	now := time.Now()
	p.ns[part].Add(int64(now.Sub(*t)))
	*t = now
}

// done counts one block (or serial call) timed.
func (p *profiler) done() {
	if p != nil {
		p.blocks.Add(1)
	}
}
