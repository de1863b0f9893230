package roofline

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/pool"
)

// Point is one group of identical steps (same kernel, shape and fused
// epilogue) of a Program: where it sits on the roofline.
type Point struct {
	Label string `json:"label"`          // e.g. "GEMM 768x3072 +gelu ->u8"
	Kind  string `json:"kind"`           // exec.KindGEMM, exec.KindAttention, ...
	INT8  bool   `json:"int8,omitempty"` // the multiply-adds run on the INT8 GEMM kernels (exec.Cost.INT8)
	Count int    `json:"count"`          // steps in the group (one per layer, ...)
	// Ops and Bytes are per call: operations (2 per multiply-add) and the
	// least traffic (each operand read once, each result written once).
	Ops   float64 `json:"ops"`
	Bytes float64 `json:"bytes"`
	// Intensity is Ops/Bytes (ops per byte); 0 for pure data movement.
	Intensity float64 `json:"intensity"`
	// Seconds is the median time of one call; GOPS = Ops / Seconds / 1e9.
	Seconds float64 `json:"seconds"`
	GOPS    float64 `json:"gops"`
	// CPUSeconds is the process's CPU time per call (all threads, mean),
	// and CPUGOPS = Ops * threads / CPUSeconds / 1e9: the rate with every
	// thread on a core of its own. Unlike GOPS it does not drop when
	// other processes take the cores (it ignores time a thread waits
	// idle, so it is an upper bound of the unloaded wall-clock rate).
	// Zero where the OS does not report CPU time.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	CPUGOPS    float64 `json:"cpu_gops,omitempty"`
	// Share is the group's part of the replayed forward pass (Count *
	// Seconds over the sum over groups).
	Share float64 `json:"share"`
	// InPassSeconds is one call's time within whole passes (the mean over
	// the group's steps of each step's median over passes; 0 when not
	// measured). Above Seconds, the step pays inside a pass for what a
	// repeat alone does not: inputs that the previous steps left in
	// another core's cache or evicted, weights not in L2/L3, helpers that
	// went to sleep.
	InPassSeconds float64 `json:"in_pass_seconds,omitempty"`
	// Split is where a GEMM's time goes (kernel, epilogue, finish;
	// SplitGEMMs), nil where not measured or not a GEMM.
	Split *GEMMSplit `json:"gemm_split,omitempty"`
}

// Profile is the per-op timing of one Program at one shape.
type Profile struct {
	Batch, Seq int
	Points     []Point // by descending share
	// ReplayedSeconds is the sum over groups of Count * Seconds: the
	// forward pass as the replayed steps add up.
	ReplayedSeconds float64
	// InPassSeconds is the sum over steps of each one's median time within
	// whole passes, and Passes the number of passes timed (0: not
	// measured; see ProfileOptions.PassBudget).
	InPassSeconds float64
	Passes        int
	// OutsideSeconds is the median over those passes of a whole RunInto
	// (outputs copied out) minus the step-by-step pass run next to it
	// (which copies none): what a pass spends beyond its steps. Binding
	// the inputs is in step 0 of both. It is measured pass by pass rather
	// than as the forward time minus InPassSeconds, which would report the
	// noise between two separate measurements as time outside the steps.
	OutsideSeconds float64
	// Loops is the parallel loops of one whole pass (the Program's worker
	// pool's Stats over the passes timed whole), and LoopWaitSeconds what
	// the pass's callers waited, per pass, for a helper's last block after
	// running out of their own: the imbalance at the loops' ends. A share
	// of what lies between steps if one parallel region spanned several.
	Loops           float64
	LoopWaitSeconds float64
}

// ProfileOptions control ProfileProgram.
type ProfileOptions struct {
	Batch, Seq int           // the inputs' shape, recorded in the Profile
	PerOp      time.Duration // time spent per distinct step (DefaultPerOp when 0)
	// PassBudget is the time spent on whole passes timed step by step
	// (at least MinPasses of them); 0 skips them.
	PassBudget time.Duration
}

// MinPasses is the fewest passes timed step by step when
// ProfileOptions.PassBudget is set.
const MinPasses = 5

// DefaultPerOp is the timing budget of one distinct step: enough calls
// for a stable median without making bert-large's profile slow.
const DefaultPerOp = 150 * time.Millisecond

// ProfileProgram runs p once on inputs and times each distinct step (by
// its exec.Cost label) by repeating it in place (exec.Program.Replay; see
// the package comment), on p's worker pool and GEMM engine.
func ProfileProgram(p *exec.Program, inputs map[string]*compiler.Tensor, o ProfileOptions) (*Profile, error) {
	if o.Batch < 1 || o.Seq < 1 {
		return nil, fmt.Errorf("roofline: batch %d x sequence %d", o.Batch, o.Seq)
	}
	if o.PerOp == 0 {
		o.PerOp = DefaultPerOp
	}
	prof := &Profile{Batch: o.Batch, Seq: o.Seq}
	groups := map[string]*Point{}
	var order []string
	var labels []string // by step index
	err := p.Replay(inputs, func(i int, s exec.Step, c exec.Cost, again func() error) error {
		labels = append(labels, c.Label)
		if g, ok := groups[c.Label]; ok {
			g.Count++
			return nil
		}
		secs, cpu, err := timeCall(again, o.PerOp)
		if err != nil {
			return fmt.Errorf("roofline: replay of step #%d %s: %w", i, s.Call(), err)
		}
		pt := &Point{Label: c.Label, Kind: c.Kind, INT8: c.INT8, Count: 1, Ops: c.Ops, Bytes: c.Bytes, Seconds: secs, CPUSeconds: cpu}
		if c.Bytes > 0 && c.Ops > 0 {
			pt.Intensity = c.Ops / c.Bytes
		}
		if secs > 0 {
			pt.GOPS = c.Ops / secs / 1e9
		}
		if cpu > 0 {
			pt.CPUGOPS = c.Ops * float64(p.Workers()) / cpu / 1e9
		}
		groups[c.Label] = pt
		order = append(order, c.Label)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, l := range order {
		prof.ReplayedSeconds += float64(groups[l].Count) * groups[l].Seconds
	}
	if o.PassBudget > 0 {
		steps, passes, outside, loops, err := timeInPass(p, inputs, len(labels), o.PassBudget)
		if err != nil {
			return nil, err
		}
		prof.Passes, prof.OutsideSeconds = passes, outside
		prof.Loops = float64(loops.Loops) / float64(passes)
		prof.LoopWaitSeconds = loops.CallerWait.Seconds() / float64(passes)
		for i, secs := range steps {
			g := groups[labels[i]]
			g.InPassSeconds += secs / float64(g.Count)
			prof.InPassSeconds += secs
		}
	}
	for _, l := range order {
		g := groups[l]
		if prof.ReplayedSeconds > 0 {
			g.Share = float64(g.Count) * g.Seconds / prof.ReplayedSeconds
		}
		prof.Points = append(prof.Points, *g)
	}
	sort.SliceStable(prof.Points, func(i, j int) bool { return prof.Points[i].Share > prof.Points[j].Share })
	return prof, nil
}

// timeInPass runs whole passes of p (at least MinPasses, about budget)
// and returns each step's median time within them: from the end of the
// previous step (for step 0, from the start of the pass, input binding
// included) to its own end. Each traced pass follows a RunInto timed
// whole; outside is the median of their differences (Profile.OutsideSeconds),
// loops the worker pool's Stats over the RunInto passes.
func timeInPass(p *exec.Program, inputs map[string]*compiler.Tensor, steps int, budget time.Duration) (med []float64, passes int, outside float64, loops pool.Stats, err error) {
	per := make([][]float64, steps) // [step][pass]
	var diffs []float64
	outputs := map[string]*compiler.Tensor{} // reused: RunInto allocates nothing after the first pass
	start := time.Now()
	for passes < MinPasses || time.Since(start) < budget {
		s0 := p.PoolStats()
		t := time.Now()
		if err := p.RunInto(inputs, outputs); err != nil {
			return nil, 0, 0, loops, fmt.Errorf("roofline: timing a whole pass: %w", err)
		}
		run := time.Since(t).Seconds()
		s1 := p.PoolStats().Sub(s0)
		loops.Loops += s1.Loops
		loops.Items += s1.Items
		loops.CallerWait += s1.CallerWait
		t = time.Now()
		last := t
		err := p.Trace(inputs, func(i int) error {
			now := time.Now()
			if i < steps {
				per[i] = append(per[i], now.Sub(last).Seconds())
			}
			last = now
			return nil
		})
		if err != nil {
			return nil, 0, 0, loops, fmt.Errorf("roofline: timing a pass step by step: %w", err)
		}
		diffs = append(diffs, run-time.Since(t).Seconds())
		passes++
		if passes >= 10000 {
			break
		}
	}
	med = make([]float64, steps)
	for i, ts := range per {
		if len(ts) != passes {
			return nil, 0, 0, loops, fmt.Errorf("roofline: step %d ran %d times in %d passes", i, len(ts), passes)
		}
		slices.Sort(ts)
		med[i] = ts[len(ts)/2]
	}
	slices.Sort(diffs)
	return med, passes, diffs[len(diffs)/2], loops, nil
}

// timeCall returns the median seconds of run after one warm-up call,
// over at least 3 calls and about budget, and the mean process CPU
// seconds per call (0 if unknown).
func timeCall(run func() error, budget time.Duration) (secs, cpu float64, err error) {
	if err := run(); err != nil {
		return 0, 0, err
	}
	var ts []float64
	cpu0 := processCPU()
	start := time.Now()
	for len(ts) < 3 || time.Since(start) < budget {
		t := time.Now()
		if err := run(); err != nil {
			return 0, 0, err
		}
		ts = append(ts, time.Since(t).Seconds())
		if len(ts) >= 100000 {
			break
		}
	}
	if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
		cpu = (cpu1 - cpu0).Seconds() / float64(len(ts))
	}
	slices.Sort(ts)
	return ts[len(ts)/2], cpu, nil
}
