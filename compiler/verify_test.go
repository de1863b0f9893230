package compiler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func parseBody(t *testing.T, opset int, body string) *Graph {
	t.Helper()
	g, err := ParseText(fmt.Sprintf("graph \"t\" opset %d {\n%s\n}\n", opset, body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return g
}

func TestVerifyValid(t *testing.T) {
	g := parseBody(t, 14, `
input %x: f32[batch, 8]
init %w: f32[8, 2] = splat(1)
%y = MatMul(%x, %w) @mm
%z = Relu(%y) @relu
output %z: f32[batch, 2]`)
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyCatches has one case per class of error; each must be reported
// naming the node (or value) and matching its sentinel.
func TestVerifyCatches(t *testing.T) {
	const x = "input %x: f32[batch, 8]\n"
	cases := []struct {
		name  string
		opset int
		body  string
		is    error  // sentinel the error must match, nil for none
		want  string // substring of the message
	}{
		{"unknown op", 14, x + "%y = Frobnicate(%x) @n1\noutput %y: f32[*]", ErrUnsupportedOp, `node "n1" (Frobnicate)`},
		{"too few inputs", 14, x + "%y = Add(%x) @a\noutput %y: f32[*]", nil, `node "a" (Add): takes 2 inputs, has 1`},
		{"too many outputs", 14, x + "%y, %z = Relu(%x) @r\noutput %y: f32[*]", nil, `has 1 outputs, has 2`},
		{"required input omitted", 14, x + "%y = Gemm(_, %x) @g\noutput %y: f32[*]", nil, `required input 0 is omitted`},
		{"undefined input", 14, x + "%y = Relu(%nope) @r\noutput %y: f32[*]", ErrMissingTensor, `node "r" (Relu): missing tensor: input "nope" is not defined`},
		{"not topological", 14, x + "%z = Relu(%y) @second\n%y = Relu(%x) @first\noutput %z: f32[*]", nil, `node "second" (Relu): input "y" is used before node "first" (Relu) defines it`},
		{"cycle", 14, x + "%a = Add(%x, %b) @r1\n%b = Relu(%a) @r2\noutput %b: f32[*]", ErrCyclicGraph, `node "r1" (Add) -> node "r2" (Relu)`},
		{"self loop", 14, x + "%a = Add(%x, %a) @loop\noutput %a: f32[*]", ErrCyclicGraph, `node "loop" (Add)`},
		{"duplicate producer", 14, x + "%y = Relu(%x) @r1\n%y = Neg(%x) @r2\noutput %y: f32[*]", ErrDuplicate, `node "r2" (Neg): duplicate name: output "y" is also produced by node "r1" (Relu)`},
		{"output shadows input", 14, x + "%x = Relu(%x) @r\noutput %x: f32[*]", ErrDuplicate, `output "x" is also a graph input`},
		{"duplicate graph input", 14, x + x + "output %x: f32[*]", ErrDuplicate, `input "x"`},
		{"dtype rule", 14, x + "input %i: i64[batch, 8]\n%y = Add(%x, %i) @add\noutput %y: f32[*]", ErrDTypeMismatch, `node "add" (Add): dtype mismatch: input 1 is i64 but an earlier T input is f32`},
		{"dtype not allowed", 14, "input %i: i64[3]\n%y = Sqrt(%i) @s\noutput %y: i64[*]", ErrDTypeMismatch, `T must be one of f32, f64`},
		{"declared dtype", 14, x + "%y: i64[batch, 8] = Relu(%x) @r\noutput %y: i64[*]", ErrDTypeMismatch, `output "y" declared i64, op gives f32`},
		{"graph output dtype", 14, x + "%y = Relu(%x) @r\noutput %y: i64[*]", ErrDTypeMismatch, `output "y": dtype mismatch: declared i64, computed f32`},
		{"attribute kind", 14, x + "%y = Softmax(%x) {axis=1.0} @s\noutput %y: f32[*]", nil, `attribute "axis" is float, want int`},
		{"unknown attribute", 14, x + "%y = Relu(%x) {alpha=0.1} @r\noutput %y: f32[*]", nil, `unknown attribute "alpha"`},
		{"missing attribute", 14, x + "%y = Concat(%x, %x) @c\noutput %y: f32[*]", nil, `missing required attribute "axis"`},
		{"Cast to unsupported", 14, x + "%y = Cast(%x) {to=10} @c\noutput %y: f32[*]", ErrUnsupportedOp, `Cast to ONNX type 10`},
		{"Unsqueeze attr at 13", 13, x + "%y = Unsqueeze(%x) {axes=[0]} @u\noutput %y: f32[*]", nil, `opset 13 takes axes as input 1`},
		{"Unsqueeze input at 11", 11, x + "init %a: i64[1] = [0]\n%y = Unsqueeze(%x, %a) @u\noutput %y: f32[*]", nil, `opset 11 takes axes as an attribute`},
		{"ReduceMean input at 17", 17, x + "init %a: i64[1] = [0]\n%y = ReduceMean(%x, %a) @m\noutput %y: f32[*]", nil, `opset 17 takes axes as an attribute`},
		{"Slice attrs at 10", 10, x + "%y = Slice(%x) {ends=[1], starts=[0]} @s\noutput %y: f32[*]", nil, `takes starts/ends/axes as inputs`},
		{"Transpose bad perm", 14, x + "%y = Transpose(%x) {perm=[0, 0]} @t\noutput %y: f32[*]", nil, `perm [0 0] is not a permutation`},
		{"Constant two values", 14, "%y = Constant() {value_float=1.0, value_int=1} @k\noutput %y: f32[*]", nil, `exactly one value attribute`},
		{"output not produced", 14, x + "output %nowhere: f32[*]", ErrMissingTensor, `output "nowhere": missing tensor: graph output is not produced`},
		{"unnamed output", 14, x + "output %\"\": f32[*]", nil, `output #0: unnamed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := parseBody(t, c.opset, c.body).Verify()
			if err == nil {
				t.Fatal("Verify accepted the graph")
			}
			if !errors.Is(err, ErrBadInput) {
				t.Errorf("error does not match ErrBadInput: %v", err)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not match %v: %v", c.is, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestVerifyInitializers(t *testing.T) {
	cases := []struct {
		name string
		t    *Tensor
		is   error
	}{
		{"short data", &Tensor{DType: Float32, Shape: []int64{2, 3}, F32: make([]float32, 5)}, ErrShapeMismatch},
		{"wrong slice", &Tensor{DType: Int64, Shape: []int64{2}, F32: make([]float32, 2)}, ErrShapeMismatch},
		{"negative dim", &Tensor{DType: Float32, Shape: []int64{-1}}, ErrShapeMismatch},
		{"nil", nil, ErrMissingTensor},
		{"no dtype", &Tensor{Shape: []int64{}}, ErrDTypeMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := parseBody(t, 14, "input %x: f32[2, 3]\n%y = Add(%x, %w) @add\noutput %y: f32[2, 3]")
			g.Initializers["w"] = c.t
			err := g.Verify()
			if !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), `initializer "w"`) {
				t.Fatalf("got %v, want %v naming initializer \"w\"", err, c.is)
			}
		})
	}
	// An initializer doubling as a graph input must agree in dtype.
	g := parseBody(t, 14, "input %w: i64[2, 3]\ninit %w: f32[2, 3] = splat(0)\noutput %w: f32[*]")
	if err := g.Verify(); !errors.Is(err, ErrDTypeMismatch) {
		t.Fatalf("input/initializer dtype clash: %v", err)
	}
}

// TestVerifyReportsAll checks that independent problems are all reported.
func TestVerifyReportsAll(t *testing.T) {
	g := parseBody(t, 14, `
input %x: f32[4]
%a = Frobnicate(%x) @one
%b = Add(%x) @two
%c = Relu(%missing) @three
output %c: f32[4]`)
	err := g.Verify()
	for _, want := range []string{`node "one"`, `node "two"`, `node "three"`} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
		t.Errorf("want 3 joined errors, got %v", err)
	}
}

// TestVerifyOpsetZero: an unspecified opset accepts either axes form.
func TestVerifyOpsetZero(t *testing.T) {
	g := parseBody(t, 0, `
input %x: f32[4]
init %a: i64[1] = [0]
%y = Unsqueeze(%x, %a) @input_form
%z = Unsqueeze(%x) {axes=[0]} @attr_form
output %y: f32[1, 4]
output %z: f32[1, 4]`)
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
}
