package roofline

// WholeModel is the forward pass as one point: all its operations over
// its measured time, against the fastest compute ceiling measured (the
// AMX INT8 peak where the CPU has AMX): the figure issue 12's acceptance
// states as "the whole forward pass >= 25% of the 2-core AMX peak".
type WholeModel struct {
	Ops     float64 `json:"ops"`       // per forward pass, 2 per multiply-add
	GOPS    float64 `json:"gops"`      // Ops / forward time / 1e9
	Ceiling string  `json:"ceiling"`   // name of the compute ceiling
	Share   float64 `json:"of_peak"`   // GOPS / that ceiling's value
	Between float64 `json:"between"`   // share of the forward time outside the replayed steps
	Forward float64 `json:"forward_s"` // the forward time it divides by (seconds)
	// Where Between goes, when the profile timed steps within passes
	// (Profile.Passes > 0), as shares of the forward time: InPass is what
	// the steps take within passes; Outside what a pass spends beyond its
	// steps (copying outputs; Profile.OutsideSeconds, measured pass by
	// pass); Refill is InPass minus the replayed steps: what steps lose
	// inside a pass against a repeat alone (caches refilled between steps,
	// helpers waking). Between = Outside + Refill up to noise (the forward
	// time and the passes timed step by step are separate measurements).
	InPass  float64 `json:"in_pass,omitempty"`
	Outside float64 `json:"outside,omitempty"`
	Refill  float64 `json:"refill,omitempty"`
	// Loops is the parallel loops per pass and LoopWait the share of the
	// forward time their callers spent waiting for a helper's last block
	// (Profile.Loops, Profile.LoopWaitSeconds): the hand-offs and tails
	// one parallel region per layer could save, the rest of Refill being
	// caches.
	Loops    float64 `json:"loops_per_pass,omitempty"`
	LoopWait float64 `json:"loop_wait,omitempty"`
}

// Whole sums the profile's operations (each point's Ops times its Count)
// and relates them to the forward time forwardSec: its rate, its share of
// the fastest compute ceiling in cs, and the share of forwardSec that the
// replayed steps do not account for (barriers, waking workers, caches
// refilled between steps).
func Whole(p *Profile, cs []Ceiling, forwardSec float64) WholeModel {
	w := WholeModel{Forward: forwardSec}
	for _, pt := range p.Points {
		w.Ops += pt.Ops * float64(pt.Count)
	}
	if forwardSec <= 0 {
		return w
	}
	w.GOPS = w.Ops / forwardSec / 1e9
	// Steps replayed one at a time can add up to more than the pass
	// (noise, caches left cold by the replay): then nothing measurable
	// is between steps, not a negative share.
	w.Between = max(0, 1-p.ReplayedSeconds/forwardSec)
	if p.Passes > 0 {
		w.InPass = p.InPassSeconds / forwardSec
		w.Outside = max(0, p.OutsideSeconds) / forwardSec
		w.Refill = (p.InPassSeconds - p.ReplayedSeconds) / forwardSec
		w.Loops, w.LoopWait = p.Loops, p.LoopWaitSeconds/forwardSec
	}
	best := 0.0
	for _, c := range cs {
		if c.Kind == Compute && c.Value > best {
			best, w.Ceiling = c.Value, c.Name
		}
	}
	if best > 0 {
		w.Share = w.GOPS / best
	}
	return w
}
