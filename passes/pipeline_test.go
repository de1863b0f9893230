package passes

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
)

const reluChain = `graph "chain" opset 17 {
  input %x: f32[batch, 4]
  %a = Identity(%x)
  %b = Relu(%a)
  %dead = Neg(%x)
  output %b: f32[batch, 4]
}`

// recorder makes passes that log their runs into *ran.
func recorder(ran *[]string, names ...string) []Pass {
	var list []Pass
	for _, name := range names {
		list = append(list, Pass{Name: name, Run: func(*compiler.Graph) (bool, error) {
			*ran = append(*ran, name)
			return false, nil
		}})
	}
	return list
}

func TestRunStopAfter(t *testing.T) {
	g := parseGraph(t, reluChain)
	var ran []string
	if err := Run(g, recorder(&ran, "A", "B", "C"), Options{StopAfter: "B"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"A", "B"}) {
		t.Errorf("ran %v, want [A B]", ran)
	}
	ran = nil
	err := Run(g, recorder(&ran, "A"), Options{StopAfter: "Nope"})
	if !errors.Is(err, compiler.ErrInvalidRequest) || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("unknown StopAfter: err = %v", err)
	}
	if len(ran) != 0 {
		t.Errorf("passes ran despite a bad StopAfter: %v", ran)
	}
}

func TestRunCheckIRNamesTheBreakingPass(t *testing.T) {
	breaker := Pass{Name: "BreakGraph", Run: func(g *compiler.Graph) (bool, error) {
		g.Nodes = append(g.Nodes, &compiler.Node{Name: "bad", Op: "NoSuchOp", Inputs: []string{"x"}, Outputs: []string{"z"}})
		return true, nil
	}}
	g := parseGraph(t, reluChain)
	err := Run(g, []Pass{EliminateDeadNodes, breaker}, Options{CheckIR: true})
	if err == nil || !strings.Contains(err.Error(), "BreakGraph") {
		t.Fatalf("err = %v, want one naming BreakGraph", err)
	}
	g = parseGraph(t, reluChain)
	if err := Run(g, []Pass{breaker}, Options{}); err != nil {
		t.Fatalf("without CheckIR the driver must not verify: %v", err)
	}
}

func TestRunPassErrorIsWrapped(t *testing.T) {
	cause := errors.New("boom")
	failing := Pass{Name: "Explode", Run: func(*compiler.Graph) (bool, error) { return false, cause }}
	err := Run(parseGraph(t, reluChain), []Pass{failing}, Options{})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "Explode") {
		t.Errorf("err = %v", err)
	}
}

func TestRunDumpsAndLogs(t *testing.T) {
	dir := t.TempDir()
	g := parseGraph(t, reluChain)
	var logs []string
	opts := Options{CheckIR: true, DumpDir: dir, Log: func(pass string, changed bool, summary string) {
		if changed {
			logs = append(logs, pass+": "+summary)
		}
	}}
	if err := Run(g, []Pass{EliminateDeadNodes, FoldConstants}, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"EliminateDeadNodes: nodes 3 -> 1: Identity -1, Neg -1"}
	if !slices.Equal(logs, want) {
		t.Errorf("logs = %q, want %q", logs, want)
	}
	for _, name := range []string{"00-Input.txt", "01-EliminateDeadNodes.txt", "02-FoldConstants.txt"} {
		text, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		dumped, err := compiler.ParseText(string(text))
		if err != nil {
			t.Fatalf("%s does not parse: %v", name, err)
		}
		if name != "00-Input.txt" && len(dumped.Nodes) != 1 {
			t.Errorf("%s has %d nodes, want 1", name, len(dumped.Nodes))
		}
	}
}

func TestToFixpoint(t *testing.T) {
	g := parseGraph(t, reluChain)
	rounds := 0
	shrinking := ToFixpoint(Pass{Name: "CountDown", Run: func(*compiler.Graph) (bool, error) {
		rounds++
		return rounds < 3, nil
	}})
	changed, err := shrinking.Run(g)
	if err != nil || !changed || rounds != 3 {
		t.Errorf("changed=%v err=%v rounds=%d, want true, nil, 3", changed, err, rounds)
	}
	forever := ToFixpoint(Pass{Name: "Loop", Run: func(*compiler.Graph) (bool, error) { return true, nil }})
	if _, err := forever.Run(g); err == nil || !strings.Contains(err.Error(), "Loop") {
		t.Errorf("non-converging pass: err = %v", err)
	}
}

func TestPipelineIsWellFormed(t *testing.T) {
	for i, p := range Pipeline() {
		if p.Name == "" || p.Run == nil {
			t.Errorf("pass %d is incomplete: %+v", i, p)
		}
		if c := p.Name[0]; c < 'A' || c > 'Z' {
			t.Errorf("pass %q: names are CamelCase verbs", p.Name)
		}
	}
}

func TestINT8PipelineFollowsCanonicalisation(t *testing.T) {
	fp32 := Pipeline()
	list := INT8Pipeline(nil, QuantOptions{Act: compiler.QLinearDynamic})
	for i, p := range fp32 {
		if list[i].Name != p.Name {
			t.Fatalf("pass %d is %s, want the FP32 pipeline's %s first", i, list[i].Name, p.Name)
		}
	}
	if rest := list[len(fp32):]; len(rest) < 2 || rest[0].Name != "SmoothQuant" || rest[1].Name != "Quantize" {
		t.Errorf("after canonicalisation: %v, want SmoothQuant then Quantize", passNames(rest))
	}
	// Dynamic activations without smoothing need no calibration: the
	// whole list runs on a canonical graph and quantises it.
	g := outlierBlock(t)
	runPasses(t, g, list...)
	if h := OpHistogram(g); h[opQLinear] == 0 || h[opLinear] != 0 {
		t.Errorf("after the INT8 pipeline: %d QLinear, %d Linear; want every Linear quantised", h[opQLinear], h[opLinear])
	}
}

// TestCheckIRVerifiesQuantisedGraphs: from Quantize on, CheckIR verifies
// at compiler.VerifyQuantized, so a later pass that loses a static
// QLinear's zero point is named; on its own (the structural level, which
// takes the default zero point) the same pass passes.
func TestCheckIRVerifiesQuantisedGraphs(t *testing.T) {
	loseZeroPoint := Pass{Name: "LoseZeroPoint", Run: func(g *compiler.Graph) (bool, error) {
		for _, n := range g.Nodes {
			if n.Op == opQLinear {
				delete(n.Attrs, "act_zero_point")
			}
		}
		return true, nil
	}}
	g := parseGraph(t, `graph "lin" opset 17 {
  input %x: f32[batch, sequence, 4]
  init %w: f32[4, 3] = splat(0.5)
  %y = sqc.Linear(%x, %w) @dense
  output %y: f32[batch, sequence, 3]
}`)
	quantized := g.Clone()
	if err := Run(quantized, []Pass{staticQuantize(t, g)}, Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	if err := Run(quantized.Clone(), []Pass{loseZeroPoint}, Options{CheckIR: true}); err != nil {
		t.Fatalf("structural level: %v", err)
	}
	err := Run(g, []Pass{staticQuantize(t, g), loseZeroPoint, EliminateDeadNodes}, Options{CheckIR: true})
	if err == nil || !strings.Contains(err.Error(), "pass LoseZeroPoint left an invalid graph") || !strings.Contains(err.Error(), "no act_zero_point") {
		t.Errorf("err = %v, want LoseZeroPoint caught at the quantised level", err)
	}
}

// staticQuantize is Quantize with static statistics of g's one Linear
// input, x in [-1, 3].
func staticQuantize(t *testing.T, g *compiler.Graph) Pass {
	t.Helper()
	x := compiler.NewTensor(compiler.Float32, 1, 2, 4)
	copy(x.F32, []float32{-1, 0, 1, 2, 3, 0.5, -0.5, 1.5})
	stats, err := calib.Collect(g, []calib.Batch{{"x": x}}, calib.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Quantize(stats, QuantOptions{})
}

// TestQuantPipelineLevels: CheckIR verifies every pass from Quantize on at
// the quantised level, and none before it (SmoothQuant's graph is FP32).
func TestQuantPipelineLevels(t *testing.T) {
	seen := false
	for _, p := range INT8Pipeline(nil, QuantOptions{}) {
		seen = seen || p.Name == "Quantize"
		if want := map[bool]compiler.VerifyLevel{false: compiler.VerifyStructure, true: compiler.VerifyQuantized}[seen]; p.Level != want && p.Name != EliminateDeadNodes.Name {
			t.Errorf("pass %s has level %d, want %d", p.Name, p.Level, want)
		}
	}
}
