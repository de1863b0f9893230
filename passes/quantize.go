package passes

import (
	"fmt"
	"math"
	"regexp"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// QuantOptions configure SmoothQuant and Quantize (see QuantPipeline).
type QuantOptions struct {
	// Alpha is SmoothQuant's migration strength in [0, 1]; 0 turns
	// smoothing off. Ignored when AutoAlpha is set.
	Alpha float64
	// AutoAlpha searches each smoothing group's alpha over AlphaGrid
	// (DefaultAlphaGrid when nil); it needs calibration row samples
	// (calib.Options.SampleRows).
	AutoAlpha bool
	AlphaGrid []float64
	// Kernels are the worker pool and INT8 GEMM engine the auto-alpha
	// search runs the real INT8 path on; AutoAlpha needs them. The passes
	// start no workers and ask the OS for no CPU permissions themselves:
	// whoever runs the pipeline owns the engine (NewKernels, Close).
	Kernels *Kernels
	// Act is how activations are quantised: compiler.QLinearStatic (one
	// scale and zero point per tensor, from calibration; the default) or
	// compiler.QLinearDynamic (per token, at run time).
	Act string
	// Percentile, when > 0, takes static ranges from the central
	// Percentile% of each activation's histogram instead of its min/max.
	// Smoothing rescales channels, which a histogram cannot follow, so the
	// ranges of smoothed activations are then recollected by Recalibrate.
	Percentile float64
	// Recalibrate, if set, collects statistics of the graph as it is (the
	// smoothed FP32 graph); Quantize calls it when Percentile needs
	// histograms the given statistics lack.
	Recalibrate func(g *compiler.Graph) (*calib.Stats, error)
	// KeepFP32 is a regular expression; Linears whose node name or output
	// name it matches (anywhere: use ^...$ to anchor) stay FP32. The
	// classifier head stays FP32 regardless: every Linear whose input has
	// rank 2 ([batch, hidden], after the sequence was pooled) runs once per
	// sequence, where INT8 saves nothing worth its error. Embeddings are
	// lookups (Gather) and are never quantised.
	KeepFP32 string
	// Attention is the precision of the attention matmuls: AttentionINT8
	// ("" too: the default, QuantizeAttention) or AttentionFP32.
	Attention string
	// Report, if set, receives what the passes did.
	Report *QuantReport
}

// QuantReport records the decisions of SmoothQuant and Quantize, for
// `sqc eval --layers` and tests.
type QuantReport struct {
	Smooth    []SmoothReport
	Quantized []QuantizedReport
	KeptFP32  []string // node names of Linears left in FP32
}

// SmoothReport is one smoothing group.
type SmoothReport struct {
	Input    string   // the activation the group reads (before smoothing)
	Nodes    []string // its Linears
	Absorber string   // "LayerNorm", "V projection"
	Alpha    float64  // the alpha used (0: not smoothed)
	Smoothed bool
	// MinScale and MaxScale are the range of s (1, 1 when not smoothed).
	MinScale, MaxScale float32
}

// QuantizedReport is one Linear turned into sqc.QLinear.
type QuantizedReport struct {
	Node, Input, Output string
	ActMode             string
	ActScale            float32 // static only
	ActZeroPoint        int32   // static only
}

func (o *QuantOptions) report(r SmoothReport) {
	if o.Report != nil {
		o.Report.Smooth = append(o.Report.Smooth, r)
	}
}

func (o *QuantOptions) actMode() (string, error) {
	switch o.Act {
	case "", compiler.QLinearStatic:
		return compiler.QLinearStatic, nil
	case compiler.QLinearDynamic:
		return compiler.QLinearDynamic, nil
	}
	return "", fmt.Errorf("%w: activation mode %q, want %q or %q", compiler.ErrInvalidRequest, o.Act, compiler.QLinearStatic, compiler.QLinearDynamic)
}

// keeper returns the predicate telling which Linears stay FP32.
func (o *QuantOptions) keeper(g *compiler.Graph) (func(*compiler.Node) bool, error) {
	var re *regexp.Regexp
	if o.KeepFP32 != "" {
		var err error
		if re, err = regexp.Compile(o.KeepFP32); err != nil {
			return nil, fmt.Errorf("%w: keep-fp32 pattern: %v", compiler.ErrInvalidRequest, err)
		}
	}
	return func(n *compiler.Node) bool {
		if re != nil && (re.MatchString(n.Name) || re.MatchString(n.Outputs[0])) {
			return true
		}
		x := valueInfo(g, n.Inputs[0])
		return x != nil && x.Shape != nil && len(x.Shape) <= 2
	}, nil
}

// QuantPipeline returns the passes that turn a canonical FP32 graph (after
// Pipeline()) into an INT8 one, given calibration statistics of that
// canonical graph (calib.Collect): SmoothQuant, then Quantize, then a
// sweep of the FP32 weights they replaced. stats is not modified: the
// passes share a copy in which SmoothQuant records the statistics of the
// activations it rescales.
func QuantPipeline(stats *calib.Stats, opts QuantOptions) []Pass {
	var work *calib.Stats
	if stats != nil {
		work = stats.Clone()
	}
	return []Pass{
		// Smoothing first: it rewrites FP32 weights and LayerNorm
		// parameters, which Quantize then rounds to INT8.
		SmoothQuant(work, opts),
		Quantize(work, opts),
		QuantizeAttention(opts), // quantize_attention.go: int8 = 1 on sqc.Attention, unless opts.Attention is fp32
		// The two commute (passOrder has no rule for them): the Q, K
		// and V projections FuseQKV merges are read by the Attention
		// alone, so they have no epilogue to fuse, and the merged
		// QLinear feeds only the packed Attention.
		FuseQLinearEpilogues, // fuse_qlinear_epilogues.go: GELU and residual Add into the QLinear epilogue
		FuseQKV,              // fuse_qkv.go: one QLinear for Q, K and V, read by a packed Attention
		// After SmoothQuant, which makes the LayerNorm twins, and after
		// Quantize, whose sqc.QLinear readers are what marks the twin
		// (its output feeds only quantised GEMMs). The two fusions above
		// neither read nor move LayerNorms, so it could run before them;
		// running it last keeps their inputs the graphs they were
		// written and tested against.
		MergeSmoothedLayerNorms, // merge_smoothed_layer_norms.go: one sqc.LayerNormDual per LayerNorm and smoothed twin
		// Quantisation of the activations made explicit, once the QLinears
		// and LayerNorms are final (passOrder): every quantise and every
		// u8 write the INT8 engine runs is then a node or an attribute.
		MaterializeQuantize, // materialize_quantize.go: an sqc.Quantize before each QLinear's f32 input
		DeduplicateQuantize, // deduplicate_quantize.go: one per value and parameters
		WriteU8Directly,     // write_u8_directly.go: QLinear, INT8 Attention and LayerNormDual write their readers' u8 form
		ShortenGeluForU8,    // shorten_gelu_for_u8.go: a GELU epilogue writing u8 evaluated to u8 precision
		// Last of the rewrites: it marks the LayerNorm forms WriteU8Directly
		// makes (passOrder).
		FuseLayerNormIntoQLinear, // fuse_layer_norm_into_qlinear.go: the LayerNorm after dense + residual runs inside that GEMM
		EliminateDeadNodes,       // a safety net: each pass above sweeps what it replaced already
	}
}

// Quantize replaces every sqc.Linear with a constant f32 [K, N] weight,
// except those QuantOptions keeps FP32, by sqc.QLinear (see
// compiler/ops_sqc_quant.go for its exact arithmetic):
//
//   - weights: s8, symmetric per output channel: w_scale[n] =
//     max_k |W[k, n]| / 127 (1 for an all-zero column), w_q =
//     roundEven(W / w_scale), within [-127, 127] so that negating never
//     overflows;
//   - activations: static (QuantOptions.Act "static") u8 with a zero
//     point, one scale per tensor from the calibration range [lo, hi]
//     widened to contain 0 (scale = (hi - lo)/255, zero point =
//     roundEven(-lo/scale)); or dynamic per token, computed at run time.
//
// The attention matmuls (Q·K^T and P·V inside sqc.Attention) stay FP32
// here; QuantizeAttention (by default; not with QuantOptions.Attention =
// AttentionFP32) makes them INT8 with dynamic per-token and per-channel
// scales, which the
// measurement below finds cleaner than the Linears. The per-tensor scheme
// measured here is not offered. Measured on the shared SST-2 models over
// the dev set's sentence lengths (bert-mini / distilbert-tiny):
//
//   - work: they are 1.9% / 3.7% of the encoder's multiply-adds, and the
//     FP32 attention kernel takes about 6% / 8% of the INT8 encoder's time
//     (4.5-6.8% / 7.8-8.0% over runs on a shared 2-core machine; cmd/sqc
//     BenchmarkINT8AttentionShare), so INT8 attention could save a few
//     percent at most;
//   - accuracy: an INT8 attention (Q, K, V s8 per tensor, the softmax
//     output P u8 in steps of 1/255) alone gives 40.9 / 41.0 dB SQNR at
//     the attention outputs, against 44.6 / 48.5 dB for all the INT8
//     Linears before it together, so it would more than double the noise
//     there; P's grid is the main cause (41.9 / 42.0 dB on its own):
//     softmax probabilities span orders of magnitude that steps of 1/255
//     flatten.
//
// TestAttentionStaysFP32Measurement (quantize_attention_test.go)
// reproduces the figures and fails if the premises stop holding.
func Quantize(stats *calib.Stats, opts QuantOptions) Pass {
	return Pass{Name: "Quantize", Level: compiler.VerifyQuantized, Run: func(g *compiler.Graph) (bool, error) {
		return quantize(g, stats, opts)
	}}
}

func quantize(g *compiler.Graph, stats *calib.Stats, opts QuantOptions) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	mode, err := opts.actMode()
	if err != nil {
		return false, err
	}
	keep, err := opts.keeper(g)
	if err != nil {
		return false, err
	}
	var targets []*compiler.Node
	for _, n := range g.Nodes {
		if n.Op != opLinear || !constWeight(g, n) {
			continue
		}
		if keep(n) {
			if opts.Report != nil {
				opts.Report.KeptFP32 = append(opts.Report.KeptFP32, n.Name)
			}
			continue
		}
		targets = append(targets, n)
	}
	if len(targets) == 0 {
		return false, nil
	}
	if mode == compiler.QLinearStatic {
		if stats, err = staticStats(g, stats, targets, opts); err != nil {
			return false, err
		}
	}
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range targets {
		cur.n = n
		wq, ws := QuantizeWeights(g.Initializers[n.Inputs[1]])
		wName, sName := nm.Fresh(n.Inputs[1]+"/q"), nm.Fresh(n.Inputs[1]+"/scale")
		g.Initializers[wName], g.Initializers[sName] = wq, ws
		inputs := []string{n.Inputs[0], wName, sName}
		if len(n.Inputs) > 2 && n.Inputs[2] != "" {
			inputs = append(inputs, n.Inputs[2])
		}
		q := &compiler.Node{
			Name:    n.Name,
			Op:      opQLinear,
			Inputs:  inputs,
			Outputs: []string{n.Outputs[0]},
			Attrs:   map[string]compiler.Attr{"act_mode": compiler.StringAttr(mode)},
		}
		rep := QuantizedReport{Node: n.Name, Input: n.Inputs[0], Output: n.Outputs[0], ActMode: mode}
		if mode == compiler.QLinearStatic {
			lo, hi, err := stats.Values[n.Inputs[0]].Range(opts.Percentile)
			if err != nil {
				return false, fmt.Errorf("range of %q, the input of %s: %w", n.Inputs[0], n.Name, err)
			}
			scale, zp := StaticQuantParams(lo, hi)
			q.Attrs["act_scale"] = compiler.FloatAttr(scale)
			q.Attrs["act_zero_point"] = compiler.IntAttr(int64(zp))
			rep.ActScale, rep.ActZeroPoint = scale, zp
		}
		if opts.Report != nil {
			opts.Report.Quantized = append(opts.Report.Quantized, rep)
		}
		repl[n] = q
	}
	replaceNodes(g, repl)
	removeDead(g)
	return true, nil
}

// opQLinear is the quantised Linear (compiler/ops_sqc_quant.go).
const opQLinear = "sqc.QLinear"

// staticStats returns statistics holding a range for the input of every
// target: stats itself, or, when a percentile range needs histograms that
// smoothing invalidated, a recollection on g.
func staticStats(g *compiler.Graph, stats *calib.Stats, targets []*compiler.Node, opts QuantOptions) (*calib.Stats, error) {
	if stats == nil {
		return nil, fmt.Errorf("%w: static activation quantisation needs calibration statistics (or use dynamic)", compiler.ErrInvalidRequest)
	}
	recollect := false
	for _, n := range targets {
		v := stats.Values[n.Inputs[0]]
		if v == nil {
			return nil, fmt.Errorf("%w: no calibration statistics for %q, the input of %s", compiler.ErrMissingTensor, n.Inputs[0], n.Name)
		}
		if opts.Percentile > 0 && v.Hist == nil {
			recollect = true
		}
	}
	if !recollect {
		return stats, nil
	}
	if opts.Recalibrate == nil {
		return nil, fmt.Errorf("%w: percentile ranges of smoothed activations need a recalibration (QuantOptions.Recalibrate)", compiler.ErrInvalidRequest)
	}
	fresh, err := opts.Recalibrate(g)
	if err != nil {
		return nil, fmt.Errorf("recalibrating the smoothed graph: %w", err)
	}
	for _, n := range targets {
		if v := fresh.Values[n.Inputs[0]]; v == nil || v.Hist == nil {
			return nil, fmt.Errorf("%w: recalibration gave no histogram for %q", compiler.ErrMissingTensor, n.Inputs[0])
		}
	}
	return fresh, nil
}

// StaticQuantParams returns the u8 scale and zero point of the range
// [lo, hi] widened to contain 0, with the formulas of dynamic per-token
// quantisation (nn.RowQuantParams), so both modes share one convention:
// scale = (hi - lo)/255 (1 if 0), zero point = clamp(roundEven(-lo/scale),
// 0, 255).
func StaticQuantParams(lo, hi float32) (scale float32, zeroPoint int32) {
	return nn.RowQuantParams([]float32{min(lo, 0), max(hi, 0)})
}

// QuantizeWeights quantises an f32 [K, N] weight to s8 per output column
// (see Quantize) and returns the i8 [K, N] weight and the f32 [N] scales.
func QuantizeWeights(w *compiler.Tensor) (wq, scale *compiler.Tensor) {
	k, n := int(w.Shape[0]), int(w.Shape[1])
	wq = compiler.NewTensor(compiler.Int8, int64(k), int64(n))
	scale = compiler.NewTensor(compiler.Float32, int64(n))
	for c := range n {
		var m float32
		for r := range k {
			m = max(m, float32(math.Abs(float64(w.F32[r*n+c]))))
		}
		s := m / 127
		if s == 0 {
			s = 1
		}
		scale.F32[c] = s
		for r := range k {
			q := math.RoundToEven(float64(w.F32[r*n+c]) / float64(s))
			wq.I8[r*n+c] = int8(min(max(q, -127), 127))
		}
	}
	return wq, scale
}
