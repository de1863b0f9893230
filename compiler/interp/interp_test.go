package interp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// smallGraph is y = Relu(x + bias) with x: f32[batch, 3] and a second input
// mask: i64[batch, seq] that only feeds a Shape node, so that symbolic dims
// are shared between inputs.
func smallGraph() *compiler.Graph {
	g := compiler.NewGraph("small")
	g.Opset = 17
	g.Meta["source"] = "small.onnx"
	g.Inputs = []*compiler.Value{
		{Name: "x", DType: compiler.Float32, Shape: compiler.Shape{{Size: -1, Param: "batch"}, {Size: 3}}},
		{Name: "mask", DType: compiler.Int64, Shape: compiler.Shape{{Size: -1, Param: "batch"}, {Size: -1, Param: "seq"}}},
	}
	g.Initializers["bias"] = f32(sh(3), 1, -10, 0)
	g.Nodes = []*compiler.Node{
		{Name: "add", Op: "Add", Inputs: []string{"x", "bias"}, Outputs: []string{"t"}},
		{Name: "relu", Op: "Relu", Inputs: []string{"t"}, Outputs: []string{"y"}},
		{Name: "shape", Op: "Shape", Inputs: []string{"mask"}, Outputs: []string{"s"}},
	}
	g.Outputs = []*compiler.Value{{Name: "y", DType: compiler.Float32}, {Name: "s", DType: compiler.Int64}}
	return g
}

func TestRunSmallGraph(t *testing.T) {
	it, err := New(smallGraph())
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	out, err := it.Run(map[string]*compiler.Tensor{
		"x":    f32(sh(2, 3), 1, 2, 3, -4, 20, 5),
		"mask": i64(sh(2, 4), 1, 1, 1, 0, 1, 1, 0, 0),
	}, &Options{OnValue: func(name string, t *compiler.Tensor) error {
		seen = append(seen, fmt.Sprintf("%s%v", name, t.Shape))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := diff(out["y"], f32(sh(2, 3), 2, 0, 3, 0, 10, 5), 0); msg != "" {
		t.Error("y:", msg)
	}
	if msg := diff(out["s"], i64(sh(2), 2, 4), 0); msg != "" {
		t.Error("s:", msg)
	}
	if want := []string{"t[2 3]", "y[2 3]", "s[2]"}; !slices.Equal(seen, want) {
		t.Errorf("OnValue saw %v, want %v", seen, want)
	}
}

func TestRunRejectsBadInputs(t *testing.T) {
	it, err := New(smallGraph())
	if err != nil {
		t.Fatal(err)
	}
	x := f32(sh(2, 3), 1, 2, 3, 4, 5, 6)
	mask := i64(sh(2, 1), 1, 1)
	cases := []struct {
		name   string
		inputs map[string]*compiler.Tensor
		want   string
	}{
		{"missing input", map[string]*compiler.Tensor{"x": x}, "input mask: invalid run request: missing"},
		{"wrong dtype", map[string]*compiler.Tensor{"x": i64(sh(2, 3), 1, 2, 3, 4, 5, 6), "mask": mask}, "dtype i64, the graph wants f32"},
		{"wrong rank", map[string]*compiler.Tensor{"x": f32(sh(6), 1, 2, 3, 4, 5, 6), "mask": mask}, "shape [6], the graph wants [batch, 3]"},
		{"wrong static dim", map[string]*compiler.Tensor{"x": f32(sh(3, 2), 1, 2, 3, 4, 5, 6), "mask": mask}, "shape [3 2], the graph wants [batch, 3]"},
		{"symbolic dims disagree", map[string]*compiler.Tensor{"x": x, "mask": i64(sh(1, 2), 1, 1)}, "dim 0 (batch) is 1 but x has batch = 2"},
		{"unknown input", map[string]*compiler.Tensor{"x": x, "mask": mask, "token_type_ids": mask}, "input token_type_ids: invalid run request: not a graph input"},
		{"inconsistent tensor", map[string]*compiler.Tensor{"x": f32(sh(2, 3), 1), "mask": mask}, "holds 1 elements, shape needs 6"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := it.Run(c.inputs, nil)
			if !errors.Is(err, compiler.ErrInvalidRequest) || !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error %v, want ErrInvalidRequest and ErrBadInput", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestNodeErrorsNameTheNode(t *testing.T) {
	g := smallGraph()
	g.Initializers["bias"] = f32(sh(2), 1, 2) // does not broadcast with [batch, 3]
	it, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	_, err = it.Run(map[string]*compiler.Tensor{"x": f32(sh(1, 3), 1, 2, 3), "mask": i64(sh(1, 1), 1)}, nil)
	if !errors.Is(err, compiler.ErrShapeMismatch) || !errors.Is(err, compiler.ErrBadInput) {
		t.Fatalf("error %v, want a shape mismatch", err)
	}
	if !strings.HasPrefix(err.Error(), `small.onnx: node "add" (Add): `) {
		t.Errorf("error %q does not start with the file and node", err)
	}
}

func TestOnValueErrorStopsTheRun(t *testing.T) {
	stop := errors.New("enough")
	calls := 0
	_, err := Run(smallGraph(), map[string]*compiler.Tensor{"x": f32(sh(1, 3), 1, 2, 3), "mask": i64(sh(1, 1), 1)},
		&Options{OnValue: func(string, *compiler.Tensor) error { calls++; return stop }})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("error %v after %d calls, want %v after 1", err, calls, stop)
	}
}

func TestNewRejectsBadGraphs(t *testing.T) {
	cases := []struct {
		name string
		edit func(g *compiler.Graph)
		want error
		msg  string
	}{
		{"unsupported ops are all listed", func(g *compiler.Graph) {
			g.Nodes[0].Op = "Foo"
			g.Nodes[2].Op = "Bar"
		}, compiler.ErrUnsupportedOp, `node "add" (Foo), node "shape" (Bar)`},
		{"undefined input", func(g *compiler.Graph) { g.Nodes[1].Inputs[0] = "nope" }, compiler.ErrMissingTensor, `input "nope"`},
		{"use before definition", func(g *compiler.Graph) { g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0] }, compiler.ErrMissingTensor, `input "t"`},
		{"value defined twice", func(g *compiler.Graph) { g.Nodes[2].Outputs[0] = "t" }, compiler.ErrDuplicate, `output "t"`},
		{"output shadows an initializer", func(g *compiler.Graph) { g.Nodes[2].Outputs[0] = "bias" }, compiler.ErrDuplicate, `output "bias"`},
		{"too many inputs", func(g *compiler.Graph) { g.Nodes[1].Inputs = append(g.Nodes[1].Inputs, "x") }, compiler.ErrMalformed, "2 inputs, Relu takes 1"},
		{"required input empty", func(g *compiler.Graph) { g.Nodes[0].Inputs[1] = "" }, compiler.ErrMissingTensor, "required input 1"},
		{"too many outputs", func(g *compiler.Graph) { g.Nodes[1].Outputs = append(g.Nodes[1].Outputs, "z") }, compiler.ErrMalformed, "2 outputs"},
		{"graph output never produced", func(g *compiler.Graph) { g.Outputs[0].Name = "zz" }, compiler.ErrMissingTensor, "output zz"},
		{"broken initializer", func(g *compiler.Graph) { g.Initializers["bias"] = f32(sh(4), 1) }, compiler.ErrMalformed, "initializer bias"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := smallGraph()
			c.edit(g)
			_, err := New(g)
			if !errors.Is(err, c.want) || !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "small.onnx: ") {
				t.Errorf("error %q does not name small.onnx and %q", err, c.msg)
			}
		})
	}
	if _, err := New(nil); !errors.Is(err, compiler.ErrInvalidRequest) {
		t.Errorf("New(nil): %v", err)
	}
}

func TestDeclaredDTypeIsChecked(t *testing.T) {
	g := smallGraph()
	g.Values["t"] = &compiler.Value{Name: "t", DType: compiler.Int64}
	_, err := Run(g, map[string]*compiler.Tensor{"x": f32(sh(1, 3), 1, 2, 3), "mask": i64(sh(1, 1), 1)}, nil)
	if !errors.Is(err, compiler.ErrDTypeMismatch) || !strings.Contains(err.Error(), `node "add" (Add)`) {
		t.Fatalf("error %v, want a dtype mismatch naming node add", err)
	}
}

// TestOutputsAreCopies: a graph output that is an initializer seen
// through Identity and Reshape must not let the caller write into the graph.
func TestOutputsAreCopies(t *testing.T) {
	g := compiler.NewGraph("copies")
	g.Initializers["w"] = f32(sh(2), 1, 2)
	g.Initializers["shape"] = i64(sh(2), 1, 2)
	g.Nodes = []*compiler.Node{
		{Op: "Identity", Inputs: []string{"w"}, Outputs: []string{"a"}},
		{Op: "Reshape", Inputs: []string{"a", "shape"}, Outputs: []string{"b"}},
	}
	g.Outputs = []*compiler.Value{{Name: "a"}, {Name: "b"}, {Name: "w"}}
	out, err := Run(g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "w"} {
		out[name].F32[0] = 99
	}
	if g.Initializers["w"].F32[0] != 1 {
		t.Fatal("writing to an output changed the initializer")
	}
	if !slices.Equal(out["b"].Shape, []int64{1, 2}) {
		t.Errorf("b shape %v", out["b"].Shape)
	}
}

// TestInitializerInputDefaults: an input that is also an initializer (old
// ONNX IR versions list them as inputs) may be omitted or overridden.
func TestInitializerInputDefaults(t *testing.T) {
	g := compiler.NewGraph("defaults")
	g.Inputs = []*compiler.Value{{Name: "w", DType: compiler.Float32}}
	g.Initializers["w"] = f32(sh(1), 1)
	g.Nodes = []*compiler.Node{{Op: "Neg", Inputs: []string{"w"}, Outputs: []string{"y"}}}
	g.Outputs = []*compiler.Value{{Name: "y"}}
	it, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	out, err := it.Run(nil, nil)
	if err != nil || out["y"].F32[0] != -1 {
		t.Fatalf("default: %v %v", out, err)
	}
	out, err = it.Run(map[string]*compiler.Tensor{"w": f32(sh(1), 5)}, nil)
	if err != nil || out["y"].F32[0] != -5 {
		t.Fatalf("override: %v %v", out, err)
	}
}

// TestConcurrentRuns runs one Interpreter from several goroutines (run
// with -race to check for shared state).
func TestConcurrentRuns(t *testing.T) {
	g := compiler.NewGraph("concurrent")
	g.Inputs = []*compiler.Value{{Name: "x", DType: compiler.Float32}}
	g.Initializers["w"] = f32(sh(3, 2), 1, 2, 3, 4, 5, 6)
	g.Nodes = []*compiler.Node{
		{Op: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
		{Op: "Softmax", Inputs: []string{"h"}, Outputs: []string{"y"}},
	}
	g.Outputs = []*compiler.Value{{Name: "y"}}
	it, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	input := func(i int) *compiler.Tensor {
		v := make([]float32, 30)
		for j := range v {
			v[j] = float32((i*7+j)%11) / 10
		}
		return f32(sh(10, 3), v...)
	}
	want := make([]*compiler.Tensor, 16)
	for i := range want {
		out, err := it.Run(map[string]*compiler.Tensor{"x": input(i)}, &Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = out["y"]
	}
	var wg sync.WaitGroup
	errs := make([]string, len(want))
	for i := range want {
		wg.Go(func() {
			out, err := it.Run(map[string]*compiler.Tensor{"x": input(i)}, &Options{Threads: 2})
			if err != nil {
				errs[i] = err.Error()
				return
			}
			errs[i] = diff(out["y"], want[i], 0)
		})
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Errorf("run %d: %s", i, e)
		}
	}
}

func TestOpsList(t *testing.T) {
	for _, op := range []string{"Gather", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf",
		"Tanh", "Relu", "Sigmoid", "Neg", "Not", "ReduceMean", "ReduceSum", "LayerNormalization", "Softmax",
		"Transpose", "Reshape", "Unsqueeze", "Squeeze", "Cast", "Concat", "Slice", "Shape", "Constant",
		"ConstantOfShape", "Where", "Equal", "Less", "Greater", "Expand", "Range", "Identity", "Gelu", "Linear"} {
		if !Supports(op) {
			t.Errorf("no kernel for %s", op)
		}
	}
	if !slices.IsSorted(Ops()) || Supports("Foo") {
		t.Error("Ops is not sorted or Supports accepts Foo")
	}
}

func TestMaxElements(t *testing.T) {
	g, feed := nodeGraph("ConstantOfShape", 17, nil, 1, i64(sh(2), 1000, 1000))
	if _, err := Run(g, feed, &Options{MaxElements: 999_999}); !errors.Is(err, compiler.ErrShapeMismatch) {
		t.Errorf("MaxElements 999999: error %v, want a shape mismatch", err)
	}
	if _, err := Run(g, feed, &Options{MaxElements: 1_000_000}); err != nil {
		t.Errorf("MaxElements 1000000: %v", err)
	}
}
