package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
)

// SmoothQuant migrates activation outliers into the weights (Xiao et al.,
// "SmoothQuant", 2023) so that per-tensor or per-token INT8 activations
// lose less. For a group of Linears reading one activation X (Q, K and V
// read the same LayerNorm output), with channel j of X:
//
//	s_j = max|X_j|^alpha / max|W_j|^(1-alpha)
//
// max|X_j| from calibration, max|W_j| the largest weight of input row j
// over the group (s_j = 1 where either is 0, else clamped to
// [smoothMinScale, smoothMaxScale]). Every weight row j is multiplied by
// s_j and X_j is divided by s_j at compile time, by the node producing X,
// so the FP32 graph computes the same function with no extra op (except
// the LayerNorm twin below):
//
//   - LayerNormalization (Q/K/V and the FFN input): gamma and beta are
//     divided by s. In BERT's post-LN blocks the LayerNorm output is also
//     the residual stream, which must stay unscaled; then the group reads a
//     second LayerNormalization of the same input with the smoothed
//     gamma/beta. Run on its own, the twin was a second LayerNorm pass
//     over the same rows (about 5% of the INT8 encoder's time on both
//     SST-2 models); MergeSmoothedLayerNorms, later in QuantPipeline,
//     merges each pair into one sqc.LayerNormDual, whose kernel writes the
//     residual (gamma, beta) and the u8 operand (gamma/s, beta/s) from one
//     pass over the row.
//   - sqc.Attention (the attention output projection): softmax(QK^T)·V is
//     linear in each channel of V, so column j of the V projection's weight
//     and bias is divided by s_j.
//   - anything else (the FFN output projection after GELU, which is not
//     homogeneous): no producer can absorb 1/s, and the group is left
//     unsmoothed. Measured on the shared SST-2 models (256 calibration
//     sentences, 512 sampled tokens, each Linear alone): the FFN output
//     projections reach 38.7-45.7 dB SQNR with static activations
//     unsmoothed (43.3-50.7 dB dynamic), inside the 34.8-54.8 dB of the
//     smoothable Linears before smoothing; smoothing them would add
//     3-6 dB (static), but INT8 accuracy already equals FP32 on both models
//     without it. The alternative, folding 1/s into the quantise step,
//     needs a per-input-channel multiplier in sqc.QLinear's quantisation
//     (one multiply per element either way, so free at run time); until
//     the op has one, sqc skips these groups rather than run an extra Mul
//     over the largest activation of the block.
//
// alpha = 0 is defined as no smoothing (s = 1; the formula's 1/max|W_j|
// would move all range into the weights). With QuantOptions.AutoAlpha the
// alpha of each group is chosen from QuantOptions.AlphaGrid by replaying the
// calibration sample (calib.Options.SampleRows) through a simulated INT8
// Linear — per-output-channel s8 weights, activations quantised as
// QuantOptions.Act says — and keeping the alpha with the least output
// error, summed over the group (relative squared error per Linear), as
// Intel Neural Compressor's auto-alpha search does per layer.
//
// The pass reads stats (a copy QuantPipeline owns) and records there the
// statistics of every activation it rescales, so the Quantize pass that
// follows sees the ranges of the smoothed values; Linears that QuantOptions
// keeps in FP32 are still rescaled when they share an activation with a
// quantised one (the function is unchanged either way), but a group with
// no quantised Linear is left alone.
func SmoothQuant(stats *calib.Stats, opts QuantOptions) Pass {
	return Pass{Name: "SmoothQuant", Run: func(g *compiler.Graph) (bool, error) {
		return smoothQuant(g, stats, opts)
	}}
}

// Bounds of a smoothing scale: SmoothQuant's reference implementation
// clamps at 1e-5 below; the upper bound keeps scaled weights and ranges
// far from float32 overflow for channels that are (almost) dead.
const (
	smoothMinScale = 1e-5
	smoothMaxScale = 1e5
)

// DefaultAlphaGrid is the auto-alpha search grid: 0 (no smoothing) to 1 in
// steps of 0.05. The search costs one INT8 GEMM of the sampled rows per
// Linear and grid point, well under a second per layer.
func DefaultAlphaGrid() []float64 {
	grid := make([]float64, 21)
	for i := range grid {
		grid[i] = float64(i) / 20
	}
	return grid
}

// smoothGroup is the Linears reading one activation and the node that will
// absorb 1/s.
type smoothGroup struct {
	x       string
	linears []*compiler.Node
	// One absorber: a LayerNormalization, or an sqc.Attention whose V
	// input comes from vproj.
	ln, attn, vproj *compiler.Node
	// sharedLN: the LayerNorm output has readers outside the group.
	sharedLN bool
}

func smoothQuant(g *compiler.Graph, stats *calib.Stats, opts QuantOptions) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	if !opts.AutoAlpha && opts.Alpha == 0 {
		return false, nil
	}
	if !opts.AutoAlpha && (opts.Alpha < 0 || opts.Alpha > 1 || math.IsNaN(opts.Alpha)) {
		return false, fmt.Errorf("%w: alpha %g is outside [0, 1]", compiler.ErrInvalidRequest, opts.Alpha)
	}
	if stats == nil {
		return false, fmt.Errorf("%w: SmoothQuant needs calibration statistics", compiler.ErrInvalidRequest)
	}
	keep, err := opts.keeper(g)
	if err != nil {
		return false, err
	}
	groups := smoothGroups(g, keep)
	var search *searcher
	if opts.AutoAlpha && len(groups) > 0 {
		if opts.Kernels == nil {
			return false, fmt.Errorf("%w: automatic alpha needs QuantOptions.Kernels to evaluate candidates on", compiler.ErrInvalidRequest)
		}
		search = &searcher{pool: opts.Kernels.Pool, gemm: opts.Kernels.GEMM}
	}
	nm := g.Namer()
	changed := false
	for _, grp := range groups {
		cur.n = grp.linears[0]
		if grp.ln == nil && grp.attn == nil {
			opts.report(SmoothReport{Input: grp.x, Nodes: nodeNames(grp.linears), Absorber: grp.absorberName(), MinScale: 1, MaxScale: 1})
			continue
		}
		xs := stats.Values[grp.x]
		if xs == nil {
			return changed, fmt.Errorf("%w: no calibration statistics for %q, the input of %s", compiler.ErrMissingTensor, grp.x, nodeNames(grp.linears))
		}
		alpha := opts.Alpha
		if opts.AutoAlpha {
			if alpha, err = search.searchAlpha(g, grp, xs, opts); err != nil {
				return changed, err
			}
		}
		rep := SmoothReport{Input: grp.x, Nodes: nodeNames(grp.linears), Absorber: grp.absorberName(), Alpha: alpha, MinScale: 1, MaxScale: 1}
		if alpha == 0 {
			opts.report(rep)
			continue
		}
		s := smoothScales(g, grp.linears, xs.AbsMax(), alpha)
		rep.MinScale, rep.MaxScale = slices.Min(s), slices.Max(s)
		rep.Smoothed = true
		scaled, err := xs.Scaled(s)
		if err != nil {
			return changed, err
		}
		for _, lin := range grp.linears {
			w := g.Initializers[lin.Inputs[1]]
			nw := w.Clone()
			scaleRows(nw, s)
			lin.Inputs[1] = nm.Fresh(lin.Inputs[1] + "/smooth")
			g.Initializers[lin.Inputs[1]] = nw
		}
		newX := grp.x
		switch {
		case grp.ln != nil:
			newX = absorbLayerNorm(g, nm, grp, s)
		case grp.attn != nil:
			absorbValueProjection(g, nm, grp.vproj, s)
		}
		stats.Values[newX] = scaled
		opts.report(rep)
		changed = true
	}
	if changed {
		removeDead(g)
	}
	return changed, nil
}

// smoothGroups finds, in graph order, every activation read by Linears
// with constant f32 [K, N] weights of which at least one is quantised, and
// the producer that can absorb a per-channel scale, if any (groups without
// one are returned too, for the report). A Linear reading a value twice (x
// and weight) or a value that is a graph output is not grouped.
func smoothGroups(g *compiler.Graph, keep func(*compiler.Node) bool) []*smoothGroup {
	ix := newIndex(g)
	var out []*smoothGroup
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Op != opLinear || seen[n.Inputs[0]] {
			continue
		}
		x := n.Inputs[0]
		seen[x] = true
		grp := &smoothGroup{x: x}
		others, quantised := 0, false
		for _, c := range ix.consumers[x] {
			if c.Op == opLinear && c.Inputs[0] == x && constWeight(g, c) && !slices.Contains(c.Inputs[1:], x) {
				if !slices.Contains(grp.linears, c) {
					grp.linears = append(grp.linears, c)
					quantised = quantised || !keep(c)
				}
				continue
			}
			others++
		}
		if !quantised || ix.isOutput[x] {
			continue
		}
		p := ix.producer[x]
		switch {
		case p == nil:
			// A graph input: nothing to absorb 1/s (reported unsmoothed).
		case p.Op == "LayerNormalization" && p.Outputs[0] == x && lastAxisAffine(g, p):
			grp.ln, grp.sharedLN = p, others > 0
		case p.Op == opAttention && others == 0:
			if v := valueProjection(ix, p); v != nil {
				grp.attn, grp.vproj = p, v
			}
		}
		out = append(out, grp)
	}
	return out
}

// valueProjection returns the Linear computing attn's V input if its
// output channels can absorb a scale: constant weight and bias, and V read
// by attn alone, as V only.
func valueProjection(ix *index, attn *compiler.Node) *compiler.Node {
	vName := attn.Inputs[2]
	v := ix.producedBy(vName, opLinear)
	if v == nil || !constWeight(ix.g, v) || ix.uses(vName) != 1 || slices.Contains(attn.Inputs[:2], vName) {
		return nil
	}
	if len(attn.Inputs) > 3 && attn.Inputs[3] == vName {
		return nil
	}
	if len(v.Inputs) > 2 && v.Inputs[2] != "" && ix.g.Initializers[v.Inputs[2]] == nil {
		return nil
	}
	return v
}

func (grp *smoothGroup) absorberName() string {
	switch {
	case grp.ln != nil:
		return "LayerNorm"
	case grp.attn != nil:
		return "V projection"
	}
	return "none"
}

// constWeight reports whether lin's weight is an f32 [K, N] initializer and
// its bias, if any, an initializer too.
func constWeight(g *compiler.Graph, lin *compiler.Node) bool {
	w := g.Initializers[lin.Inputs[1]]
	return w != nil && w.DType == compiler.Float32 && len(w.Shape) == 2
}

// lastAxisAffine reports whether ln normalises only the last axis with an
// f32 initializer scale of that axis's size and an initializer bias (or
// none), so that scaling channels of its output means scaling gamma and
// beta.
func lastAxisAffine(g *compiler.Graph, ln *compiler.Node) bool {
	x := valueInfo(g, ln.Inputs[0])
	if x == nil || x.Shape == nil || len(ln.Inputs) < 2 {
		return false
	}
	rank := int64(len(x.Shape))
	if axis := ln.AttrInt("axis", -1); axis != -1 && axis != rank-1 {
		return false
	}
	gamma := g.Initializers[ln.Inputs[1]]
	if gamma == nil || gamma.DType != compiler.Float32 || len(gamma.Shape) != 1 {
		return false
	}
	if len(ln.Inputs) > 2 && ln.Inputs[2] != "" {
		beta := g.Initializers[ln.Inputs[2]]
		if beta == nil || beta.DType != compiler.Float32 || beta.Len() != gamma.Len() {
			return false
		}
	}
	return true
}

// smoothScales computes s for the group from the activation's per-channel
// max|X| and the weights' per-input-row max|W| over the group.
func smoothScales(g *compiler.Graph, linears []*compiler.Node, absX []float32, alpha float64) []float32 {
	absW := make([]float32, len(absX))
	for _, lin := range linears {
		w := g.Initializers[lin.Inputs[1]]
		n := int(w.Shape[1])
		for j := range absW {
			for _, v := range w.F32[j*n : (j+1)*n] {
				absW[j] = max(absW[j], float32(math.Abs(float64(v))))
			}
		}
	}
	s := make([]float32, len(absX))
	for j := range s {
		if absX[j] == 0 || absW[j] == 0 {
			s[j] = 1
			continue
		}
		v := math.Pow(float64(absX[j]), alpha) / math.Pow(float64(absW[j]), 1-alpha)
		s[j] = float32(min(max(v, smoothMinScale), smoothMaxScale))
	}
	return s
}

// scaleRows multiplies row j of the [K, N] tensor w by s[j].
func scaleRows(w *compiler.Tensor, s []float32) {
	n := int(w.Shape[1])
	for j, sj := range s {
		row := w.F32[j*n : (j+1)*n]
		for i := range row {
			row[i] *= sj
		}
	}
}

// divideChannels returns a copy of the f32 vector t divided elementwise by s.
func divideChannels(t *compiler.Tensor, s []float32) *compiler.Tensor {
	c := t.Clone()
	for j := range c.F32 {
		c.F32[j] /= s[j]
	}
	return c
}

// absorbLayerNorm folds 1/s into the group's LayerNorm and returns the
// name of the smoothed value the group now reads.
func absorbLayerNorm(g *compiler.Graph, nm *compiler.Namer, grp *smoothGroup, s []float32) string {
	ln := grp.ln
	target := ln
	x := grp.x
	if grp.sharedLN {
		target = &compiler.Node{
			Name:    nm.Fresh(ln.Name + "/smooth"),
			Op:      ln.Op,
			Inputs:  slices.Clone(ln.Inputs),
			Outputs: []string{nm.Fresh(x + "/smooth")},
		}
		if ln.Attrs != nil {
			target.Attrs = ln.Clone().Attrs
		}
		if v := g.Values[x]; v != nil {
			c := v.Clone()
			c.Name = target.Outputs[0]
			g.Values[c.Name] = c
		}
		at := slices.Index(g.Nodes, ln)
		g.Nodes = slices.Insert(g.Nodes, at+1, target)
		x = target.Outputs[0]
		for _, lin := range grp.linears {
			lin.Inputs[0] = x
		}
	}
	gamma := nm.Fresh(ln.Inputs[1] + "/smooth")
	g.Initializers[gamma] = divideChannels(g.Initializers[ln.Inputs[1]], s)
	target.Inputs[1] = gamma
	if len(target.Inputs) > 2 && target.Inputs[2] != "" {
		beta := nm.Fresh(target.Inputs[2] + "/smooth")
		g.Initializers[beta] = divideChannels(g.Initializers[target.Inputs[2]], s)
		target.Inputs[2] = beta
	}
	return x
}

// absorbValueProjection divides column j of the V projection's weight and
// bias by s[j].
func absorbValueProjection(g *compiler.Graph, nm *compiler.Namer, v *compiler.Node, s []float32) {
	w := g.Initializers[v.Inputs[1]].Clone()
	n := int(w.Shape[1])
	for i := range w.F32 {
		w.F32[i] /= s[i%n]
	}
	v.Inputs[1] = nm.Fresh(v.Inputs[1] + "/smooth")
	g.Initializers[v.Inputs[1]] = w
	if len(v.Inputs) > 2 && v.Inputs[2] != "" {
		b := nm.Fresh(v.Inputs[2] + "/smooth")
		g.Initializers[b] = divideChannels(g.Initializers[v.Inputs[2]], s)
		v.Inputs[2] = b
	}
}

func nodeNames(nodes []*compiler.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}
