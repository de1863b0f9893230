package realbatch

import (
	"fmt"
	"io"
	"time"
)

// Target is one column of the comparison: a mode of a worker, sent the
// batches' lengths or not.
type Target struct {
	Worker *Process
	Mode   string
	// Padded sends no lengths: the worker runs batch x longest whatever it
	// can do with lengths.
	Padded bool
}

// Label names the target in the report: worker/mode, with " padded" for
// a padded target.
func (t Target) Label() string {
	l := t.Worker.Name + "/" + t.Mode
	if t.Padded {
		l += " padded"
	}
	return l
}

// Options configure Run.
type Options struct {
	Batches [][]int // token counts per sequence, per batch
	Targets []Target
	Rounds  int // timed passes over all batches (at least 1)
	// Warmup makes one untimed pass over all batches first: ONNX Runtime
	// plans memory per input shape on a shape's first run, and sqc sizes
	// its arena for a new batch shape once.
	Warmup bool
	// Gap is a pause before each call, so that the spinning threads of the
	// previous call's worker park first (run.sh uses 50 ms with 2 threads).
	Gap time.Duration
	// Progress, if set, gets a line per round.
	Progress io.Writer
	// Record, if set, is called with every timed call.
	Record func(Call)
}

// Call is one timed forward pass.
type Call struct {
	Round  int     `json:"round"`
	Batch  int     `json:"batch"`
	Target string  `json:"target"`
	Ms     float64 `json:"ms"`
}

// Times holds Ms[target][batch][round], in Options' order.
type Times struct {
	Labels []string
	Ms     [][][]float64
}

// Run makes the calls: for every round, every batch, every target, in an
// order that rotates with the round and the batch, so that no target is
// always first after a gap or last before one.
func Run(o Options) (*Times, error) {
	if o.Rounds < 1 {
		return nil, fmt.Errorf("rounds %d: want at least 1", o.Rounds)
	}
	if len(o.Targets) == 0 || len(o.Batches) == 0 {
		return nil, fmt.Errorf("%d targets and %d batches: want at least one of each", len(o.Targets), len(o.Batches))
	}
	for _, t := range o.Targets {
		if !t.Worker.HasMode(t.Mode) {
			return nil, fmt.Errorf("worker %s has no mode %q (it offers %v)", t.Worker.Name, t.Mode, t.Worker.Modes)
		}
	}
	for i, b := range o.Batches {
		if len(b) == 0 {
			return nil, fmt.Errorf("batch %d is empty", i)
		}
	}
	times := &Times{Ms: make([][][]float64, len(o.Targets))}
	for i, t := range o.Targets {
		times.Labels = append(times.Labels, t.Label())
		times.Ms[i] = make([][]float64, len(o.Batches))
		for b := range o.Batches {
			times.Ms[i][b] = make([]float64, o.Rounds)
		}
	}
	first := 0
	if o.Warmup {
		first = -1
	}
	n := len(o.Targets)
	for r := first; r < o.Rounds; r++ {
		start := time.Now()
		for b, batch := range o.Batches {
			for k := range n {
				ti := (k + r + 1 + b) % n
				t := o.Targets[ti]
				time.Sleep(o.Gap)
				ms, err := t.Worker.Run(t.Mode, batch, !t.Padded)
				if err != nil {
					return nil, fmt.Errorf("round %d, batch %d: %w", r+1, b, err)
				}
				if r < 0 {
					continue
				}
				times.Ms[ti][b][r] = ms
				if o.Record != nil {
					o.Record(Call{Round: r + 1, Batch: b, Target: times.Labels[ti], Ms: ms})
				}
			}
		}
		if o.Progress != nil {
			what := fmt.Sprintf("round %d/%d", r+1, o.Rounds)
			if r < 0 {
				what = "warm-up round"
			}
			fmt.Fprintf(o.Progress, "realbatch: %s took %.1f s\n", what, time.Since(start).Seconds())
		}
	}
	return times, nil
}
