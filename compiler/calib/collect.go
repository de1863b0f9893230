package calib

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// Batch is one interpreter run's graph inputs, by input name.
type Batch = map[string]*compiler.Tensor

// DefaultMaskInput is the graph input whose zeros mark padding tokens.
const DefaultMaskInput = "attention_mask"

// DefaultSeed seeds the row sampler when Options.Seed is 0.
const DefaultSeed = 0x5eed

// ErrNoData is returned when calibration gets no batch or no token.
var ErrNoData = errors.New("no calibration data")

// Options control Collect. The zero value collects channel ranges only.
type Options struct {
	// MaskInput names the [batch, sequence] graph input whose zero entries
	// are padding; default DefaultMaskInput. A graph without it has no
	// padding to skip.
	MaskInput string
	// Percentile, when > 0, also builds a histogram per value so that
	// ValueStats.Range can cut the tails (e.g. 99.99).
	Percentile float64
	// SampleRows, when > 0, keeps a uniform reservoir sample of this many
	// rows (tokens) of every value, for the SmoothQuant alpha search. Every
	// value of one shape class samples the same tokens, since each sampler
	// starts from the same seed and sees the same valid rows.
	SampleRows int
	// Seed seeds the row sampler (DefaultSeed when 0): results are a pure
	// function of the graph, the batches in order, and the options.
	Seed uint64
	// Threads bounds the interpreter's goroutines (0: GOMAXPROCS).
	Threads int
	// Progress, if set, is called after each batch with the sequences done
	// and the total.
	Progress func(done, total int)
}

// Targets returns the values Collect observes in g: every float32 value
// read as the activation input (input 0) of an sqc.Linear, in graph order.
func Targets(g *compiler.Graph) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Op != "sqc.Linear" || len(n.Inputs) == 0 || seen[n.Inputs[0]] {
			continue
		}
		x := n.Inputs[0]
		if v, ok := g.ValueInfo(x); ok && v.DType != compiler.Float32 {
			continue
		}
		if _, isWeight := g.Initializers[x]; isWeight {
			continue
		}
		seen[x] = true
		out = append(out, x)
	}
	return out
}

// Collect runs g in FP32 over batches and returns the statistics of
// Targets(g). g is not modified.
func Collect(g *compiler.Graph, batches []Batch, opts Options) (*Stats, error) {
	if len(batches) == 0 {
		return nil, fmt.Errorf("calib: %w: no batches", ErrNoData)
	}
	if opts.MaskInput == "" {
		opts.MaskInput = DefaultMaskInput
	}
	if opts.Seed == 0 {
		opts.Seed = DefaultSeed
	}
	it, err := interp.New(g)
	if err != nil {
		return nil, err
	}
	targets := map[string]*collector{}
	for _, name := range Targets(g) {
		targets[name] = &collector{name: name, opts: &opts}
	}
	total := 0
	for _, b := range batches {
		total += batchRows(b, opts.MaskInput)
	}
	stats := &Stats{Values: map[string]*ValueStats{}}
	done := 0
	for _, b := range batches {
		mask, seq := tokenMask(b, opts.MaskInput)
		rows := batchRows(b, opts.MaskInput)
		// OnValue reports node outputs only; a graph input read by a Linear
		// is observed here.
		for _, in := range g.Inputs {
			if c := targets[in.Name]; c != nil && b[in.Name] != nil {
				if err := c.observe(b[in.Name], rows, seq, mask); err != nil {
					return nil, err
				}
			}
		}
		ropts := &interp.Options{Threads: opts.Threads, OnValue: func(name string, t *compiler.Tensor) error {
			c := targets[name]
			if c == nil {
				return nil
			}
			return c.observe(t, rows, seq, mask)
		}}
		if _, err := it.Run(b, ropts); err != nil {
			return nil, fmt.Errorf("calibration run %d: %w", stats.Batches+1, err)
		}
		stats.Batches++
		stats.Sequences += rows
		for _, m := range mask {
			if m {
				stats.Tokens++
			}
		}
		if mask == nil {
			stats.Tokens += rows * seq
		}
		done += rows
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if stats.Tokens == 0 {
		return nil, fmt.Errorf("calib: %w: every token is padding", ErrNoData)
	}
	for name, c := range targets {
		if c.stats != nil {
			stats.Values[name] = c.stats
		}
	}
	return stats, nil
}

// batchRows is the batch size: dim 0 of the mask input, else of any input.
func batchRows(b Batch, maskName string) int {
	if m := b[maskName]; m != nil && len(m.Shape) > 0 {
		return int(m.Shape[0])
	}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		if t := b[name]; t != nil && len(t.Shape) > 0 {
			return int(t.Shape[0])
		}
	}
	return 0
}

// tokenMask returns which [batch, sequence] positions are real tokens (nil
// when the batch has no mask input) and the sequence length.
func tokenMask(b Batch, maskName string) ([]bool, int) {
	m := b[maskName]
	if m == nil || len(m.Shape) != 2 {
		for _, name := range slices.Sorted(maps.Keys(b)) {
			if t := b[name]; t != nil && len(t.Shape) == 2 {
				return nil, int(t.Shape[1])
			}
		}
		return nil, 1 // no [batch, sequence] input: one token per row
	}
	keep := make([]bool, m.Len())
	for i := range keep {
		switch m.DType {
		case compiler.Int64:
			keep[i] = m.I64[i] != 0
		case compiler.Int32:
			keep[i] = m.I32[i] != 0
		case compiler.Float32:
			keep[i] = m.F32[i] != 0
		case compiler.Bool:
			keep[i] = m.Bool[i]
		default:
			keep[i] = true
		}
	}
	return keep, int(m.Shape[1])
}

// collector accumulates one value's statistics.
type collector struct {
	name  string
	opts  *Options
	stats *ValueStats
	rng   *rand.Rand
	seen  int // valid rows offered to the reservoir so far
}

// observe folds one batch's tensor in. Rows of a [batch, seq, ..., C]
// tensor are skipped where the token is padding; other shapes count every
// row.
func (c *collector) observe(t *compiler.Tensor, batch, seq int, mask []bool) error {
	if t.DType != compiler.Float32 || len(t.Shape) == 0 {
		return nil
	}
	ch := int(t.Shape[len(t.Shape)-1])
	if ch == 0 {
		return nil
	}
	if c.stats == nil {
		c.stats = &ValueStats{Channels: ch, ChannelMin: make([]float32, ch), ChannelMax: make([]float32, ch)}
		for j := range ch {
			c.stats.ChannelMin[j] = float32(math.Inf(1))
			c.stats.ChannelMax[j] = float32(math.Inf(-1))
		}
		if c.opts.Percentile > 0 {
			c.stats.Hist = newHistogram(HistogramBins)
		}
		c.rng = rand.New(rand.NewPCG(c.opts.Seed, 0))
	}
	s := c.stats
	if s.Channels != ch {
		return fmt.Errorf("calib: %s has %d channels in this batch, %d before", c.name, ch, s.Channels)
	}
	rows := len(t.F32) / ch
	// perToken: rows map onto [batch, seq] tokens, `inner` rows per token.
	perToken := mask != nil && len(t.Shape) >= 3 && int(t.Shape[0]) == batch && int(t.Shape[1]) == seq
	inner := 1
	if perToken {
		inner = rows / max(batch*seq, 1)
	}
	var valid []float32 // the valid elements, for the histogram
	collectValid := s.Hist != nil
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for r := range rows {
		if perToken && !mask[r/inner] {
			continue
		}
		row := t.F32[r*ch : (r+1)*ch]
		for j, x := range row {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("calib: %s has a non-finite value %g (row %d, channel %d): the FP32 model overflows on this calibration input", c.name, x, r, j)
			}
			s.ChannelMin[j] = min(s.ChannelMin[j], x)
			s.ChannelMax[j] = max(s.ChannelMax[j], x)
			lo, hi = min(lo, x), max(hi, x)
		}
		if collectValid {
			valid = append(valid, row...)
		}
		c.sample(row)
	}
	if collectValid && len(valid) > 0 {
		s.Hist.add(valid, lo, hi)
	}
	return nil
}

// sample offers one row to the reservoir (Vitter's algorithm R).
func (c *collector) sample(row []float32) {
	k := c.opts.SampleRows
	if k <= 0 {
		return
	}
	ch := len(row)
	t := c.seen
	c.seen++
	if t < k {
		c.stats.Rows = append(c.stats.Rows, row...)
		return
	}
	if j := c.rng.IntN(t + 1); j < k {
		copy(c.stats.Rows[j*ch:(j+1)*ch], row)
	}
}
