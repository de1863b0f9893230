package passes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
)

// Pipeline is the one ordered list of passes sqc runs on an FP32 graph.
// Later stages append to it: SmoothQuant and quantisation in
// INT8Pipeline, which takes the calibration statistics; kernel fusion,
// memory planning and weight packing after. Keep one entry per line.
// Every dependency between passes is a rule of passOrder (order.go), with
// its reason, which TestPipelinesRespectPassOrder checks this list
// against; the comments here say why the list reads as it does.
func Pipeline() []Pass {
	return []Pass{
		// Constants first: the fusions below recognise epsilons, 0.5, sqrt(2),
		// reshape targets and mask fill values as initializers, and folding
		// Constant nodes into initializers is what makes them so.
		FoldConstants,
		// A file ONNX Runtime quantised becomes the float model its
		// integer ops approximate, its weights dequantised, before any
		// matcher looks for MatMuls and Gathers of tables; it reads the
		// scales and zero points as the folded initializers they are.
		DequantizeIntegerOps,
		// Shape-proved simplifications read the folded starts, steps and
		// reshape targets, and leave Identity nodes and dead shape chains
		// for the sweep below.
		SimplifyShapeOps,
		// Casts to the dtype their input has (a float16 model's converter
		// Casts, once widened) leave Identity nodes for the sweep too.
		DropNoOpCasts,
		// Drop Identity nodes and what folding left unused, so the pattern
		// matchers see single-consumer chains.
		EliminateDeadNodes,
		// LayerNorm early: FuseEmbeddings and SmoothQuant need the
		// LayerNormalization it makes (passOrder). FuseGelu's and
		// FuseSilu's patterns are disjoint from it and from each other, so
		// their order is no rule.
		FuseLayerNorm,
		FuseGelu,
		FuseSilu,
		// Q, K and V of a fused QKV projection split per head (ModernBERT)
		// become column slices of it with a standard head split each, which
		// FuseRotary and FuseAttention read; the rotary embedding on split
		// heads becomes sqc.Rotary on unsplit ones, FuseAttention's form.
		UnpackQKVHeads,
		FuseRotary,
		// DeBERTa's export multiplies on [batch·heads, seq, d]; the
		// attention matchers read [batch, heads, seq, d].
		UnmergeBatchHeads,
		// The mask must be canonical before FuseAttention, which matches
		// "scores + additive mask" and nothing else.
		CanonicalizeAttentionMask,
		// DeBERTa's embeddings times the mask: the one Mul on hidden
		// states the kernels have no step for.
		DropPaddedRowMask,
		// A sliding window folded into the padding mask (ModernBERT's local
		// layers) becomes a bias beside it, FuseAttention's MPNet form.
		SplitSlidingWindowMask,
		FuseAttention,
		// DeBERTa's relative terms, which the fused attention adds to its
		// scores, become one op (their own MatMuls then never meet
		// FuseLinear, whose operands are weights).
		FuseDisentangledBias,
		// Whether a position bias may be read per sequence of a packed
		// batch is a fact about the fused attention's bias input.
		MarkPositionOnlyBias,
		// Linear after Attention and Gelu: those matchers start from the
		// MatMul/Add outputs and do not care, but running it last means the
		// Q/K/V projections feeding Attention are fused too, and Gemm heads
		// become Linear as well.
		FuseLinear,
		// Projections read only in column slices (ModernBERT's Wqkv and GLU
		// Wi) become one Linear per slice, which FuseQKV re-packs.
		SplitLinearColumns,
		// Mean pooling's masked sum over the tokens, so a packed batch can
		// sum each sequence's real tokens.
		FuseMaskedSum,
		// FuseEmbeddings runs after FuseLayerNorm (it matches the
		// LayerNormalization that ends the embeddings) and before the last
		// EliminateDeadNodes, which removes the position-id plumbing it
		// leaves unused.
		FuseEmbeddings,
		// One node per computation, once the fusions have made their
		// nodes: an export's per-layer copies of the same position
		// tables (and the tables FuseRotary gives each sqc.Rotary) become
		// one.
		DeduplicateNodes,
		// Trailing axes counted from the end, so a question answerer's
		// squeezed columns run padding-free (any time after the fold that
		// makes the axes initializers).
		NegateTrailingAxes,
		// Fusion strands the dynamic-shape chains (Shape -> Gather ->
		// Unsqueeze -> Concat) that fed the unfused reshapes; fold what is now
		// foldable and sweep the rest. The sweep is a rule (FuseEmbeddings
		// leaves its plumbing); the fold is a safety net that changes none
		// of the test models today.
		FoldConstants,
		EliminateDeadNodes,
	}
}

// INT8Pipeline is Pipeline() followed by QuantPipeline(stats, opts)
// (quantize.go): SmoothQuant, Quantize and a sweep, after canonicalisation
// because they rewrite the canonical Linear, LayerNormalization and
// Attention nodes. stats must come from calibrating the canonical graph
// (calib.Collect after RunPipeline): canonicalisation is deterministic, so
// its value names are those this list produces. Pipeline() itself stays
// the FP32 list, which needs no calibration data.
func INT8Pipeline(stats *calib.Stats, opts QuantOptions) []Pass {
	return append(Pipeline(), QuantPipeline(stats, opts)...)
}

// Options control RunPipeline.
type Options struct {
	// CheckIR verifies the graph after every pass and fails naming the
	// pass that broke it: g.Verify(), and from the first pass whose Level
	// is compiler.VerifyQuantized (Quantize) on, g.VerifyAt at that level.
	// Tests always set it.
	CheckIR bool
	// Level is the verifier level the given graph meets already (a
	// quantised graph for the passes after QuantPipeline): CheckIR
	// verifies at least at it.
	Level compiler.VerifyLevel
	// StopAfter, if set, stops the pipeline after the first pass with this
	// name (for `sqc inspect --after PASS`). An unknown name is an error.
	StopAfter string
	// DumpDir, if set, receives g.Text() after each pass as NN-PassName.txt
	// (NN counts from 01; 00-Input.txt is the graph as given), for
	// `sqc inspect --dump-all DIR`.
	DumpDir string
	// Log, if set, is told after every pass whether it changed the graph,
	// with a one-line summary of what changed (node counts and op deltas).
	Log func(pass string, changed bool, summary string)
}

// RunPipeline runs Pipeline() on g in place.
func RunPipeline(g *compiler.Graph, opts Options) error {
	return Run(g, Pipeline(), opts)
}

// Run runs the given passes on g in order, in place, under opts. It is
// RunPipeline for an arbitrary list (tests use it to run one pass with the
// same checking and dumping as the real pipeline). A panic inside a pass
// is returned as a *PanicError (compiler.ErrInternal) naming the pass.
func Run(g *compiler.Graph, list []Pass, opts Options) error {
	if opts.StopAfter != "" && !hasPass(list, opts.StopAfter) {
		return fmt.Errorf("%w: no pass named %q (passes: %s)", compiler.ErrInvalidRequest, opts.StopAfter, passNames(list))
	}
	// Passes match on value shapes (head splits, channel counts), so they
	// start from a graph whose Values are inferred; each pass keeps the
	// entries of values it creates up to date.
	if err := g.InferShapes(); err != nil {
		return fmt.Errorf("shape inference before the passes: %w", err)
	}
	if opts.DumpDir != "" {
		if err := os.MkdirAll(opts.DumpDir, 0o755); err != nil {
			return fmt.Errorf("dump directory: %w", err)
		}
		if err := dump(g, opts.DumpDir, 0, "Input"); err != nil {
			return err
		}
	}
	level := opts.Level
	for i, p := range list {
		before := opHistogram(g)
		changed, err := runPass(p, g)
		var pe *PanicError
		switch {
		case errors.As(err, &pe):
			return err // names the pass already
		case err != nil:
			return fmt.Errorf("pass %s: %w", p.Name, err)
		}
		level = max(level, p.Level)
		if opts.CheckIR {
			if err := g.VerifyAt(level); err != nil {
				return fmt.Errorf("pass %s left an invalid graph: %w", p.Name, err)
			}
		}
		if opts.Log != nil {
			opts.Log(p.Name, changed, histogramDelta(before, opHistogram(g)))
		}
		if opts.DumpDir != "" {
			if err := dump(g, opts.DumpDir, i+1, p.Name); err != nil {
				return err
			}
		}
		if p.Name == opts.StopAfter {
			return nil
		}
	}
	return nil
}

func dump(g *compiler.Graph, dir string, step int, name string) error {
	path := filepath.Join(dir, fmt.Sprintf("%02d-%s.txt", step, name))
	if err := os.WriteFile(path, []byte(g.Text()), 0o644); err != nil {
		return fmt.Errorf("dump after %s: %w", name, err)
	}
	return nil
}

func hasPass(list []Pass, name string) bool {
	for _, p := range list {
		if p.Name == name {
			return true
		}
	}
	return false
}

func passNames(list []Pass) string {
	seen := map[string]bool{}
	var names []string
	for _, p := range list {
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// OpHistogram counts g's nodes by op.
func OpHistogram(g *compiler.Graph) map[string]int { return opHistogram(g) }

func opHistogram(g *compiler.Graph) map[string]int {
	h := map[string]int{}
	for _, n := range g.Nodes {
		h[n.Op]++
	}
	return h
}

// histogramDelta summarises a pass's effect as "nodes 476 -> 339: Constant
// -137, Linear +32", ops sorted by name.
func histogramDelta(before, after map[string]int) string {
	total := func(h map[string]int) int {
		t := 0
		for _, c := range h {
			t += c
		}
		return t
	}
	ops := map[string]bool{}
	for op := range before {
		ops[op] = true
	}
	for op := range after {
		ops[op] = true
	}
	var names []string
	for op := range ops {
		if before[op] != after[op] {
			names = append(names, op)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "nodes %d -> %d", total(before), total(after))
	for i, op := range names {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %+d", op, after[op]-before[op])
	}
	return b.String()
}

func errNoFixpoint(pass string, rounds int) error {
	return fmt.Errorf("pass %s still changing the graph after %d rounds", pass, rounds)
}
