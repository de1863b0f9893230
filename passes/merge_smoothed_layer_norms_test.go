package passes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/interp"
)

// smoothedFFN is a quantised post-LN FFN block as SmoothQuant and
// Quantize leave it (hidden 16): %h is the LayerNorm output the residual
// reads, %hs its smoothed twin, read by the FFN input projection. ACT is
// replaced by the projections' activation attributes, and the other
// upper-case words by the variations the negative cases make.
const smoothedFFN = `graph "ffn" opset 17 {
  input %x: f32[batch, seq, 16]
  init %g: f32[16] = elided("sha256:00000000000000a1")
  init %b: f32[16] = elided("sha256:00000000000000a2")
  init %gs: f32[16] = elided("sha256:00000000000000a3")
  init %bs: f32[16] = elided("sha256:00000000000000a4")
  init %w1: i8[16, 32] = elided("sha256:00000000000000a5")
  init %s1: f32[32] = splat(0.004)
  init %w2: i8[32, 16] = elided("sha256:00000000000000a6")
  init %s2: f32[16] = splat(0.003)
  %h = LayerNormalization(%x, %g, %b) {axis=-1, epsilon=1e-12} @ln
  %hs = LayerNormalization(TWIN_X, %gs, TWIN_BETA) {axis=TWIN_AXIS, epsilon=TWIN_EPS} @twin
  %f = sqc.QLinear(%hs, %w1, %s1) {ACT, act="gelu"} @ffn_in
  %o = sqc.QLinear(%f, %w2, %s2, _, RESIDUAL) {ACT} @ffn_out
  %y = LayerNormalization(%o, %g, %b) {axis=-1, epsilon=1e-12} @ln2
  output %y: f32[batch, seq, 16]
}`

// smoothedFFNVariant is the block with the given replacements of the
// defaults (the SmoothQuant twin, static activations).
func smoothedFFNVariant(t *testing.T, repl ...string) *compiler.Graph {
	t.Helper()
	def := map[string]string{
		"TWIN_X": "%x", "TWIN_BETA": "%bs", "TWIN_AXIS": "-1", "TWIN_EPS": "1e-12", "RESIDUAL": "%h", "ACT": staticAct,
	}
	for i := 0; i < len(repl); i += 2 {
		def[repl[i]] = repl[i+1]
	}
	var pairs []string
	for k, v := range def {
		pairs = append(pairs, k, v)
	}
	return parseGraph(t, strings.NewReplacer(pairs...).Replace(smoothedFFN))
}

func ffnInputs() []map[string]*compiler.Tensor {
	return []map[string]*compiler.Tensor{{"x": randomF32(5, 2, 5, 16)}, {"x": randomF32(6, 3, 17, 16)}}
}

func TestMergeSmoothedLayerNorms(t *testing.T) {
	for mode, act := range map[string]string{"static": staticAct, "dynamic": `act_mode="dynamic"`} {
		t.Run(mode, func(t *testing.T) {
			g := smoothedFFNVariant(t, "ACT", act)
			merged := applyPass(t, g, MergeSmoothedLayerNorms)
			wantOps(t, merged, map[string]int{opLayerNormDual: 1, "LayerNormalization": 1, opQLinear: 2})
			d := merged.Nodes[slicesIndexOp(merged, opLayerNormDual)]
			if d.Name != "ln" || !slices.Equal(d.Inputs, []string{"x", "g", "gs", "b", "bs"}) || !slices.Equal(d.Outputs, []string{"h", "hs"}) ||
				d.AttrFloat("epsilon", 0) != 1e-12 || slicesIndexOp(merged, opLayerNormDual) != 0 {
				t.Fatalf("merged node %s, want %%h, %%hs = sqc.LayerNormDual(%%x, %%g, %%gs, %%b, %%bs) {epsilon=1e-12} @ln first", nodeText(merged, d))
			}
			if runPasses(t, merged.Clone(), MergeSmoothedLayerNorms) {
				t.Error("a second run changed the graph")
			}
			// The FP32 interpreter: each output is the LayerNorm it
			// replaces, bit for bit.
			for _, in := range ffnInputs() {
				wantEquivalent(t, g, merged, in, 0)
			}
			// compiler/exec: the same bits, and in static mode one fused
			// step where there were two LayerNorm steps.
			pu, pm := execProgram(t, g), execProgram(t, merged)
			for i, in := range ffnInputs() {
				wantSameBits(t, fmt.Sprintf("batch %d", i), execRun(t, pm, in), execRun(t, pu, in))
			}
			before, after := layerNormSteps(pu), layerNormSteps(pm)
			want := []string{"nn.LayerNormDual", "nn.LayerNorm"}
			if mode == "dynamic" { // the twin is quantised per row, from f32
				want = []string{"nn.LayerNorm", "nn.LayerNorm", "nn.LayerNorm"}
			}
			if !slices.Equal(after, want) || len(before) != 3 {
				t.Errorf("LayerNorm steps %v before merging, %v after; want 3, then %v\n%s", before, after, want, pm)
			}
		})
	}
}

// layerNormSteps lists the calls of p's LayerNorm steps in order, those
// run inside a GEMM included.
func layerNormSteps(p *exec.Program) []string {
	var calls []string
	for _, s := range p.Steps() {
		if g, ok := s.(*exec.GEMMStep); ok && g.Norm != nil { // run inside the GEMM
			s = g.Norm
		}
		if strings.HasPrefix(s.Call(), "nn.LayerNorm") {
			calls = append(calls, s.Call())
		}
	}
	return calls
}

func TestMergeSmoothedLayerNormsLeavesOthers(t *testing.T) {
	for _, c := range []struct {
		name string
		repl []string
	}{
		{"different input", []string{"TWIN_X", "%x2"}},
		{"different epsilon", []string{"TWIN_EPS", "1e-5"}},
		{"one beta", []string{"TWIN_BETA", "_"}},
		{"not the last axis", []string{"TWIN_AXIS", "1"}},
		{"no residual reader", []string{"RESIDUAL", "_"}},      // %h unread: nothing to merge with
		{"twin read as residual", []string{"RESIDUAL", "%hs"}}, // and %h unread
	} {
		t.Run(c.name, func(t *testing.T) {
			src := smoothedFFN
			if slices.Contains(c.repl, "%x2") {
				src = strings.Replace(src, "input %x: f32[batch, seq, 16]", "input %x: f32[batch, seq, 16]\n  input %x2: f32[batch, seq, 16]", 1)
			}
			def := map[string]string{"TWIN_X": "%x", "TWIN_BETA": "%bs", "TWIN_AXIS": "-1", "TWIN_EPS": "1e-12", "RESIDUAL": "%h", "ACT": staticAct}
			for i := 0; i < len(c.repl); i += 2 {
				def[c.repl[i]] = c.repl[i+1]
			}
			var pairs []string
			for k, v := range def {
				pairs = append(pairs, k, v)
			}
			g := parseGraph(t, strings.NewReplacer(pairs...).Replace(src))
			if runPasses(t, g, MergeSmoothedLayerNorms) {
				t.Errorf("merged:\n%s", g.Text())
			}
		})
	}
	t.Run("twin read in f32", func(t *testing.T) {
		g := smoothedFFNVariant(t)
		relu := &compiler.Node{Name: "relu", Op: "Relu", Inputs: []string{"hs"}, Outputs: []string{"r"}}
		g.Nodes = append(g.Nodes, relu)
		g.Outputs = append(g.Outputs, &compiler.Value{Name: "r", DType: compiler.Float32})
		if runPasses(t, g, MergeSmoothedLayerNorms) {
			t.Errorf("merged:\n%s", g.Text())
		}
	})
	t.Run("both read by QLinears only", func(t *testing.T) {
		g := smoothedFFNVariant(t, "RESIDUAL", "_")
		q := &compiler.Node{Name: "q2", Op: opQLinear, Inputs: []string{"h", "w1", "s1"}, Outputs: []string{"f2"},
			Attrs: map[string]compiler.Attr{"act_mode": compiler.StringAttr(compiler.QLinearDynamic)}}
		g.Nodes = append(g.Nodes, q)
		g.Outputs = append(g.Outputs, &compiler.Value{Name: "f2", DType: compiler.Float32})
		if runPasses(t, g, MergeSmoothedLayerNorms) {
			t.Errorf("merged:\n%s", g.Text())
		}
	})
	t.Run("twin is an output", func(t *testing.T) {
		g := smoothedFFNVariant(t)
		g.Outputs = append(g.Outputs, g.Values["hs"].Clone())
		if runPasses(t, g, MergeSmoothedLayerNorms) {
			t.Errorf("merged:\n%s", g.Text())
		}
	})
	t.Run("three LayerNorms", func(t *testing.T) {
		g := smoothedFFNVariant(t)
		third := &compiler.Node{Name: "third", Op: "LayerNormalization", Inputs: []string{"x", "g"}, Outputs: []string{"h3"}}
		g.Nodes = slices.Insert(g.Nodes, 2, third)
		g.Outputs = append(g.Outputs, &compiler.Value{Name: "h3", DType: compiler.Float32})
		if runPasses(t, g, MergeSmoothedLayerNorms) {
			t.Errorf("merged:\n%s", g.Text())
		}
	})
	t.Run("no twin", func(t *testing.T) {
		if runPasses(t, qattnGraph(t, staticAct, staticAct, staticAct), MergeSmoothedLayerNorms) {
			t.Error("changed a block without a smoothed twin")
		}
	})
}

// TestMergeSmoothedLayerNormsOnDemoModel quantises the embedded demo model
// with the pass switched off and on: compiler/exec gives the same bits
// and runs one LayerNorm step per LayerNorm of the FP32 model instead of
// one more per smoothed twin; the INT8 interpreter gives the same bits.
func TestMergeSmoothedLayerNormsOnDemoModel(t *testing.T) {
	m := demoFusionModel(t)
	stats, err := calib.Collect(m.g, m.calib, calib.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fp32LNs := OpHistogram(m.g)["LayerNormalization"]
	list := func() []Pass { return QuantPipeline(stats, QuantOptions{Alpha: 0.5}) }
	unmerged := m.g.Clone()
	runPasses(t, unmerged, without(list(), []string{MergeSmoothedLayerNorms.Name})...)
	merged := m.g.Clone()
	runPasses(t, merged, list()...)
	h := OpHistogram(merged)
	if h[opLayerNormDual] == 0 || h[opLayerNormDual]+h["LayerNormalization"] != fp32LNs {
		t.Errorf("after merging: %d LayerNormDual, %d LayerNormalization; want every twin merged, %d in all", h[opLayerNormDual], h["LayerNormalization"], fp32LNs)
	}
	pu, pm := execProgram(t, unmerged), execProgram(t, merged)
	if u, g := len(layerNormSteps(pu)), len(layerNormSteps(pm)); u != fp32LNs+h[opLayerNormDual] || g != fp32LNs {
		t.Errorf("%d LayerNorm steps unmerged, %d merged; want %d and %d", u, g, fp32LNs+h[opLayerNormDual], fp32LNs)
	}
	iu, err := interp.New(unmerged)
	if err != nil {
		t.Fatal(err)
	}
	im, err := interp.New(merged)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range m.inputs {
		what := fmt.Sprintf("batch %d", i)
		wantSameBits(t, "exec "+what, execRun(t, pm, in), execRun(t, pu, in))
		want, err := iu.Run(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := im.Run(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantSameBits(t, "interpreter "+what, got, want)
	}
}
