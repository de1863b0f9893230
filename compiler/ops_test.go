package compiler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The ops torch.onnx.export emits for HF BERT, DistilBERT, RoBERTa and
// MiniLM at opsets 11-17, and the sqc ops canonicalisation produces.
var requiredOps = []string{
	"Gather", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh", "Relu",
	"Sigmoid", "Neg", "Not", "ReduceMean", "ReduceSum", "LayerNormalization", "Softmax", "Transpose",
	"Reshape", "Unsqueeze", "Squeeze", "Cast", "Concat", "Slice", "Shape", "Constant",
	"ConstantOfShape", "Where", "Equal", "Less", "Greater", "Expand", "Range", "Identity", "CumSum",
	"sqc.Gelu", "sqc.Linear",
}

func TestOpTableComplete(t *testing.T) {
	for _, name := range requiredOps {
		if _, ok := LookupOp(name); !ok {
			t.Errorf("op %s missing from the table", name)
		}
	}
	if _, ok := LookupOp("Frobnicate"); ok {
		t.Error("LookupOp found an op that does not exist")
	}
	ops := Ops()
	if !slices.IsSortedFunc(ops, func(a, b *OpDef) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Ops() is not sorted by name")
	}
	for _, op := range ops {
		t.Run(op.Name, func(t *testing.T) {
			if got, _ := LookupOp(op.Name); got != op {
				t.Error("LookupOp and Ops disagree")
			}
			if op.Doc == "" || strings.Contains(op.Doc, "\n") || !strings.HasSuffix(op.Doc, ".") {
				t.Errorf("Doc must be one sentence-terminated line: %q", op.Doc)
			}
			sqc := strings.HasPrefix(op.Name, "sqc.")
			if sqc != (op.Domain == DomainSqc) || (!sqc && op.Domain != "") {
				t.Errorf("name %q does not match domain %q", op.Name, op.Domain)
			}
			if op.MinInputs < 0 || (op.MaxInputs != Variadic && op.MaxInputs < op.MinInputs) {
				t.Errorf("input arity %d..%d", op.MinInputs, op.MaxInputs)
			}
			if op.MinOutputs < 1 || op.MaxOutputs < op.MinOutputs {
				t.Errorf("output arity %d..%d", op.MinOutputs, op.MaxOutputs)
			}
			if op.Shape == nil {
				t.Error("no shape rule")
			}
			r := op.DTypes
			if len(r.Out) == 0 {
				t.Error("dtype rule names no output dtype")
			}
			if op.MaxInputs != 0 && len(r.In) == 0 {
				t.Error("dtype rule names no input dtypes")
			}
			if op.MaxInputs > 0 && len(r.In) < op.MaxInputs && op.MaxInputs != Variadic {
				t.Errorf("dtype rule covers %d of %d inputs", len(r.In), op.MaxInputs)
			}
			used := map[string]bool{}
			for _, v := range slices.Concat(r.In, r.Out) {
				used[v] = true
				if v == "attr" && r.OutFromAttr == nil {
					t.Error(`output "attr" without OutFromAttr`)
				}
			}
			for v := range r.Vars {
				if !used[v] {
					t.Errorf("type variable %s constrained but unused", v)
				}
			}
			for _, v := range r.Out {
				if _, err := ParseDType(v); err != nil && v != "attr" && !slices.Contains(r.In, v) {
					t.Errorf("output type %q is neither a dtype, attr nor an input variable", v)
				}
			}
			names := map[string]bool{}
			for _, a := range op.Attrs {
				if names[a.Name] || a.Kind < AttrInt || a.Kind > AttrTensor {
					t.Errorf("attribute %q repeated or of bad kind %d", a.Name, a.Kind)
				}
				names[a.Name] = true
			}
		})
	}
}

// inferText parses a graph body, infers shapes and returns the graph.
func inferText(t *testing.T, opset int, body string) (*Graph, error) {
	t.Helper()
	g, err := ParseText(fmt.Sprintf("graph \"t\" opset %d {\n%s\n}\n", opset, body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return g, g.InferShapes()
}

// TestShapeRules covers every op's shape rule, including symbolic dims and
// the opset-dependent forms.
func TestShapeRules(t *testing.T) {
	const x = "input %x: f32[batch, sequence, 8]\n"
	cases := []struct {
		name  string
		opset int
		body  string
		want  string // type of %y
	}{
		{"Add broadcast", 14, x + "input %b: f32[8]\n%y = Add(%x, %b)", "f32[batch, sequence, 8]"},
		{"Add sym vs 1", 14, "input %a: f32[batch, 1, sequence]\ninput %b: f32[4, 1]\n%y = Add(%a, %b)", "f32[batch, 4, sequence]"},
		{"Sub", 14, x + "%y = Sub(%x, %x)", "f32[batch, sequence, 8]"},
		{"Mul", 14, "input %a: f32[2, 1]\ninput %b: f32[1, 3]\n%y = Mul(%a, %b)", "f32[2, 3]"},
		{"Div", 14, x + "input %s: f32[]\n%y = Div(%x, %s)", "f32[batch, sequence, 8]"},
		{"Pow mixed dtypes", 14, x + "input %e: i64[]\n%y = Pow(%x, %e)", "f32[batch, sequence, 8]"},
		{"Equal", 14, x + "%y = Equal(%x, %x)", "bool[batch, sequence, 8]"},
		{"Less", 14, x + "input %s: f32[]\n%y = Less(%x, %s)", "bool[batch, sequence, 8]"},
		{"Greater", 14, x + "input %s: f32[]\n%y = Greater(%s, %x)", "bool[batch, sequence, 8]"},
		{"GreaterOrEqual", 14, x + "input %s: f32[]\n%y = GreaterOrEqual(%x, %s)", "bool[batch, sequence, 8]"},
		{"LessOrEqual", 14, x + "input %s: f32[]\n%y = LessOrEqual(%s, %x)", "bool[batch, sequence, 8]"},
		{"And broadcast", 14, "input %a: bool[batch, 1, 1, sequence]\ninput %b: bool[1, 1, sequence, 1]\n%y = And(%a, %b)", "bool[batch, 1, sequence, sequence]"},
		{"Or", 14, "input %a: bool[batch]\ninput %b: bool[]\n%y = Or(%a, %b)", "bool[batch]"},
		{"Max variadic", 14, "input %a: i64[batch, 1, 1, 1]\ninput %b: i64[1, 1, 1, sequence]\ninput %c: i64[]\n%y = Max(%a, %b, %c)", "i64[batch, 1, 1, sequence]"},
		{"IsNaN", 14, x + "%y = IsNaN(%x)", "bool[batch, sequence, 8]"},
		{"Min", 14, "input %a: i64[1, sequence, 1]\ninput %b: i64[]\n%y = Min(%a, %b)", "i64[1, sequence, 1]"},
		{"Abs i64", 14, "input %a: i64[sequence, sequence]\n%y = Abs(%a)", "i64[sequence, sequence]"},
		{"Log", 14, x + "%y = Log(%x)", "f32[batch, sequence, 8]"},
		{"Tile by batch", 14, "input %a: f32[1, 6, 8]\ninput %b: i64[batch, sequence]\n%s = Shape(%b)\ninit %zero: i64[1] = [0]\ninit %one: i64[1] = [1]\ninit %two: i64[1] = [2]\n%n = Slice(%s, %zero, %one)\n%r = Concat(%n, %one, %two) {axis=0}\n%y = Tile(%a, %r)", "f32[batch, 6, 16]"},
		{"Tile unknown counts", 14, "input %a: f32[4, 6]\ninput %r: i64[2]\n%y = Tile(%a, %r)", "f32[?, ?]"},
		{"Ceil", 14, x + "%y = Ceil(%x)", "f32[batch, sequence, 8]"},
		{"Floor", 14, x + "%y = Floor(%x)", "f32[batch, sequence, 8]"},
		{"Sign i64", 14, "input %a: i64[sequence, sequence]\n%y = Sign(%a)", "i64[sequence, sequence]"},
		{"GatherElements", 14, "input %buf: i64[1, 512]\ninput %i: i64[1, sequence]\n%y = GatherElements(%buf, %i) {axis=1}", "i64[1, sequence]"},
		{"GatherND pairs", 14, "input %m: bool[batch, sequence]\ninput %i: i64[batch, 1, 1, sequence, 2]\n%y = GatherND(%m, %i)", "bool[batch, 1, 1, sequence]"},
		{"GatherND rows batch_dims", 14, x + "input %i: i64[batch, 5, 1]\n%y = GatherND(%x, %i) {batch_dims=1}", "f32[batch, 5, 8]"},
		{"Sqrt", 14, x + "%y = Sqrt(%x)", "f32[batch, sequence, 8]"},
		{"Erf", 14, x + "%y = Erf(%x)", "f32[batch, sequence, 8]"},
		{"Tanh", 14, x + "%y = Tanh(%x)", "f32[batch, sequence, 8]"},
		{"Sin", 14, x + "%y = Sin(%x)", "f32[batch, sequence, 8]"},
		{"Cos", 14, x + "%y = Cos(%x)", "f32[batch, sequence, 8]"},
		{"Relu", 14, x + "%y = Relu(%x)", "f32[batch, sequence, 8]"},
		{"Sigmoid", 14, x + "%y = Sigmoid(%x)", "f32[batch, sequence, 8]"},
		{"Neg", 14, x + "%y = Neg(%x)", "f32[batch, sequence, 8]"},
		{"Not", 14, "input %m: bool[batch]\n%y = Not(%m)", "bool[batch]"},
		{"Identity", 14, x + "%y = Identity(%x)", "f32[batch, sequence, 8]"},
		{"Where", 14, x + "input %c: bool[batch, 1, 1]\ninput %o: f32[]\n%y = Where(%c, %o, %x)", "f32[batch, sequence, 8]"},
		{"Cast", 14, x + "%y = Cast(%x) {to=7}", "i64[batch, sequence, 8]"},
		{"MatMul batched", 14, x + "input %w: f32[8, 3]\n%y = MatMul(%x, %w)", "f32[batch, sequence, 3]"},
		{"MatMul broadcast batch", 14, "input %a: f32[batch, 4, sequence, 6]\ninput %b: f32[batch, 4, 6, sequence]\n%y = MatMul(%a, %b)", "f32[batch, 4, sequence, sequence]"},
		{"MatMul vector", 14, "input %a: f32[5]\ninput %b: f32[batch, 5, 3]\n%y = MatMul(%a, %b)", "f32[batch, 3]"},
		{"Gemm transB", 14, "input %a: f32[batch, 8]\ninput %w: f32[2, 8]\ninput %c: f32[2]\n%y = Gemm(%a, %w, %c) {transB=1}", "f32[batch, 2]"},
		{"Gemm transA", 14, "input %a: f32[8, batch]\ninput %w: f32[8, 2]\n%y = Gemm(%a, %w) {transA=1}", "f32[batch, 2]"},
		{"Gather embedding", 14, "input %ids: i64[batch, sequence]\ninput %e: f32[100, 8]\n%y = Gather(%e, %ids)", "f32[batch, sequence, 8]"},
		{"Gather axis 1 scalar", 14, x + "input %i: i64[]\n%y = Gather(%x, %i) {axis=1}", "f32[batch, 8]"},
		{"ReduceMean attr", 14, x + "%y = ReduceMean(%x) {axes=[-1]}", "f32[batch, sequence, 1]"},
		{"ReduceMean keepdims 0", 14, x + "%y = ReduceMean(%x) {axes=[1], keepdims=0}", "f32[batch, 8]"},
		{"ReduceMean input opset 18", 18, x + "init %a: i64[1] = [-1]\n%y = ReduceMean(%x, %a)", "f32[batch, sequence, 1]"},
		{"ReduceSum input opset 13", 13, x + "init %a: i64[2] = [0, 2]\n%y = ReduceSum(%x, %a) {keepdims=0}", "f32[sequence]"},
		{"ReduceSum all", 13, x + "%y = ReduceSum(%x) {keepdims=0}", "f32[]"},
		{"ReduceSum noop", 13, x + "%y = ReduceSum(%x) {noop_with_empty_axes=1}", "f32[batch, sequence, 8]"},
		{"ReduceSum attr opset 11", 11, x + "%y = ReduceSum(%x) {axes=[2]}", "f32[batch, sequence, 1]"},
		{"LayerNormalization", 17, x + "input %s: f32[8]\n%y, %mean = LayerNormalization(%x, %s) {axis=-1, epsilon=1e-12}", "f32[batch, sequence, 8]"},
		{"LayerNormalization mean", 17, x + "input %s: f32[8]\n%z, %y = LayerNormalization(%x, %s) {axis=-1}", "f32[batch, sequence, 1]"},
		{"Softmax", 14, x + "%y = Softmax(%x) {axis=-1}", "f32[batch, sequence, 8]"},
		{"Softmax opset 11 default axis", 11, x + "%y = Softmax(%x)", "f32[batch, sequence, 8]"},
		{"Transpose perm", 14, x + "%y = Transpose(%x) {perm=[0, 2, 1]}", "f32[batch, 8, sequence]"},
		{"Transpose default", 14, x + "%y = Transpose(%x)", "f32[8, sequence, batch]"},
		{"Reshape copy and infer", 14, x + "init %s: i64[4] = [0, 0, 2, -1]\n%y = Reshape(%x, %s)", "f32[batch, sequence, 2, 4]"},
		{"Reshape symbolic -1", 14, "input %a: f32[batch, sequence, 4, 64]\ninit %s: i64[3] = [0, 0, -1]\n%y = Reshape(%a, %s)", "f32[batch, sequence, 256]"},
		{"Reshape -1 gets a symbol", 14, "input %a: f32[batch, 4, 64]\ninit %s: i64[2] = [-1, 256]\n%y = Reshape(%a, %s)", "f32[batch, 256]"},
		{"Reshape unknown target", 14, x + "input %s: i64[3]\n%y = Reshape(%x, %s)", "f32[?, ?, ?]"},
		{"Unsqueeze input opset 13", 13, x + "init %a: i64[2] = [1, -1]\n%y = Unsqueeze(%x, %a)", "f32[batch, 1, sequence, 8, 1]"},
		{"Unsqueeze attr opset 11", 11, x + "%y = Unsqueeze(%x) {axes=[0]}", "f32[1, batch, sequence, 8]"},
		{"Squeeze axes", 13, "input %a: f32[batch, 1, 8]\ninit %ax: i64[1] = [1]\n%y = Squeeze(%a, %ax)", "f32[batch, 8]"},
		{"Squeeze all", 13, "input %a: f32[1, batch, 1, 8]\n%y = Squeeze(%a)", "f32[batch, 8]"},
		{"Squeeze attr opset 11", 11, "input %a: f32[batch, 1]\n%y = Squeeze(%a) {axes=[1]}", "f32[batch]"},
		{"Concat", 14, "input %a: f32[batch, 3]\ninput %b: f32[batch, 5]\n%y = Concat(%a, %b) {axis=-1}", "f32[batch, 8]"},
		{"Concat symbolic", 14, "input %a: f32[batch, 3]\ninput %b: f32[sequence, 3]\n%y = Concat(%a, %b) {axis=0}", "f32[?, 3]"},
		{"Concat symbol plus empty", 14, "input %a: f32[batch, 3]\ninput %b: f32[0, 3]\n%y = Concat(%a, %b) {axis=0}", "f32[batch, 3]"},
		{"Slice to end", 14, x + "init %s: i64[1] = [2]\ninit %e: i64[1] = [9223372036854775807]\ninit %a: i64[1] = [2]\n%y = Slice(%x, %s, %e, %a)", "f32[batch, sequence, 6]"},
		{"Slice negative step", 14, x + "init %s: i64[1] = [-1]\ninit %e: i64[1] = [-9223372036854775807]\ninit %a: i64[1] = [2]\ninit %st: i64[1] = [-2]\n%y = Slice(%x, %s, %e, %a, %st)", "f32[batch, sequence, 4]"},
		{"Slice symbolic end", 14, "init %buf: i64[1, 512] = arange(0, 1)\ninput %ids: i64[batch, sequence]\n%sh = Shape(%ids)\ninit %one: i64[1] = [1]\ninit %two: i64[1] = [2]\ninit %zero: i64[1] = [0]\n%e = Slice(%sh, %one, %two)\n%y = Slice(%buf, %zero, %e, %one)", "i64[1, sequence]"},
		{"Slice attr opset 9", 9, "input %a: f32[batch, 5, 8]\n%y = Slice(%a) {axes=[1], ends=[3], starts=[1]}", "f32[batch, 2, 8]"},
		{"Slice symbolic dim", 9, x + "%y = Slice(%x) {axes=[1], ends=[3], starts=[1]}", "f32[batch, ?, 8]"},
		{"Shape", 14, x + "%y = Shape(%x)", "i64[3]"},
		{"Shape start end", 15, x + "%y = Shape(%x) {end=-1, start=1}", "i64[1]"},
		{"Constant tensor", 14, "%y = Constant() {value=tensor<f32[2, 2]> [1, 2, 3, 4]}", "f32[2, 2]"},
		{"Constant value_ints", 14, "%y = Constant() {value_ints=[1, 2, 3]}", "i64[3]"},
		{"Constant value_float", 14, "%y = Constant() {value_float=2.5}", "f32[]"},
		{"ConstantOfShape from Shape", 14, x + "%s = Shape(%x)\n%y = ConstantOfShape(%s) {value=tensor<i64[1]> [1]}", "i64[batch, sequence, 8]"},
		{"ConstantOfShape default f32", 14, "init %s: i64[2] = [2, 3]\n%y = ConstantOfShape(%s)", "f32[2, 3]"},
		{"Expand", 14, "input %m: i64[batch, 1, 1, sequence]\ninit %s: i64[4] = [1, 4, 1, 1]\n%y = Expand(%m, %s)", "i64[batch, 4, 1, sequence]"},
		{"Range const", 14, "init %a: i64[] = [2]\ninit %b: i64[] = [11]\ninit %c: i64[] = [3]\n%y = Range(%a, %b, %c)", "i64[3]"},
		{"Range float", 14, "init %a: f32[] = [0]\ninit %b: f32[] = [1]\ninit %c: f32[] = [0.25]\n%y = Range(%a, %b, %c)", "f32[4]"},
		{"CumSum", 14, "input %m: i32[batch, sequence]\ninit %ax: i64[] = [1]\n%y = CumSum(%m, %ax)", "i32[batch, sequence]"},
		{"DynamicQuantizeLinear", 14, x + "%y, %s, %z = DynamicQuantizeLinear(%x)", "u8[batch, sequence, 8]"},
		{"DynamicQuantizeLinear scale", 14, x + "%q, %y, %z = DynamicQuantizeLinear(%x)", "f32[]"},
		{"MatMulInteger", 14, x + "%q, %s, %z = DynamicQuantizeLinear(%x)\ninit %w: i8[8, 3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]\ninit %wz: i8[] = [0]\n%y = MatMulInteger(%q, %w, %z, %wz)", "i32[batch, sequence, 3]"},
		{"DequantizeLinear", 14, "input %q: u8[batch, 4]\ninit %s: f32[4] = [1, 2, 3, 4]\ninit %z: u8[4] = [1, 2, 3, 4]\n%y = DequantizeLinear(%q, %s, %z) {axis=1}", "f32[batch, 4]"},
		{"QuantizeLinear", 14, x + "init %s: f32[] = [0.5]\ninit %z: i8[] = [3]\n%y = QuantizeLinear(%x, %s, %z)", "i8[batch, sequence, 8]"},
		{"QuantizeLinear u8", 14, x + "init %s: f32[] = [0.5]\n%y = QuantizeLinear(%x, %s)", "u8[batch, sequence, 8]"},
		{"sqc.Gelu", 14, x + "%y = sqc.Gelu(%x)", "f32[batch, sequence, 8]"},
		{"sqc.Silu", 14, x + "%y = sqc.Silu(%x)", "f32[batch, sequence, 8]"},
		{"Einsum outer", 14, "input %p: f32[sequence]\ninput %f: f32[4]\n%y = Einsum(%p, %f) {equation=\"i, j -> ij\"}", "f32[sequence, 4]"},
		{"sqc.Linear", 14, x + "input %w: f32[8, 3]\ninput %b: f32[3]\n%y = sqc.Linear(%x, %w, %b)", "f32[batch, sequence, 3]"},
		{"sqc.Linear no bias", 14, x + "input %w: f32[8, 3]\n%y = sqc.Linear(%x, %w)", "f32[batch, sequence, 3]"},
		{"unknown rank flows", 14, "input %a: f32[*]\n%y = Relu(%a)", "f32[*]"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := inferText(t, c.opset, c.body)
			if err != nil {
				t.Fatalf("InferShapes: %v", err)
			}
			if err := g.Verify(); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			v := g.Values["y"]
			if v == nil {
				t.Fatal("no value for %y")
			}
			if got := typeString(v.DType, v.Shape); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			for _, n := range g.Nodes {
				covered[n.Op] = true
			}
		})
	}
	for _, op := range Ops() {
		if op.Domain == "" && !covered[op.Name] {
			t.Errorf("no shape-rule case for %s", op.Name)
		}
	}
}

func TestShapeRuleErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
	}{
		{"MatMul inner mismatch", "input %a: f32[batch, 3]\ninput %b: f32[4, 2]\n%y = MatMul(%a, %b)", ErrShapeMismatch},
		{"broadcast mismatch", "input %a: f32[3]\ninput %b: f32[4]\n%y = Add(%a, %b)", ErrShapeMismatch},
		{"Reshape two -1", "input %a: f32[4]\ninit %s: i64[2] = [-1, -1]\n%y = Reshape(%a, %s)", ErrShapeMismatch},
		{"Reshape element count", "input %a: f32[4]\ninit %s: i64[1] = [5]\n%y = Reshape(%a, %s)", ErrShapeMismatch},
		{"axis out of range", "input %a: f32[4]\n%y = Softmax(%a) {axis=1}", ErrShapeMismatch},
		{"Gather index out of range", "init %d: i64[2] = [1, 2]\ninit %i: i64[] = [2]\n%y = Gather(%d, %i)", ErrShapeMismatch},
		{"Squeeze non-1", "input %a: f32[batch, 3]\ninit %ax: i64[1] = [1]\n%y = Squeeze(%a, %ax)", ErrShapeMismatch},
		{"Transpose perm rank", "input %a: f32[2, 3]\n%y = Transpose(%a) {perm=[0, 1, 2]}", ErrShapeMismatch},
		{"declared conflicts", "input %a: f32[batch, 3]\n%y: f32[batch, 4] = Relu(%a)", ErrShapeMismatch},
		{"dtype rule", "input %a: f32[3]\ninput %b: i64[3]\n%y = Add(%a, %b)", ErrDTypeMismatch},
		{"unknown op", "input %a: f32[3]\n%y = Frobnicate(%a)", ErrUnsupportedOp},
		{"Einsum of a matrix", "input %a: f32[3, 2]\ninput %b: f32[4]\n%y = Einsum(%a, %b) {equation=\"i,j->ij\"}", ErrShapeMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := inferText(t, 14, c.body)
			if !errors.Is(err, c.want) || !errors.Is(err, ErrBadInput) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestSymbolicFolding checks the integer folds that resolve torch's shape
// arithmetic, including symbolic elements.
func TestSymbolicFolding(t *testing.T) {
	body := `
input %x: f32[batch, sequence, 8]
%s = Shape(%x)
init %i0: i64[] = [0]
init %i2: i64[] = [2]
init %two: i64[] = [2]
init %neg: i64[1] = [-1]
%b = Gather(%s, %i0)
%d = Gather(%s, %i2)
%half = Div(%d, %two)
%dbl = Mul(%half, %two)
%b1 = Mul(%b, %two)
%back = Div(%b1, %two)
init %three: i64[] = [3]
%third = Div(%b1, %three)
%same = Sub(%b, %b)
%eq = Equal(%s, %neg)
%lt = Less(%s, %neg)
%nb = Not(%eq)
%c = Cast(%s) {to=7}
%y = Concat(%s, %neg) {axis=0}
`
	g, err := inferText(t, 14, body)
	if err != nil {
		t.Fatal(err)
	}
	// InferShapes keeps contents private: observe them through
	// ConstantOfShape and Expand, whose output shapes are the contents.
	if got := typeString(g.Values["y"].DType, g.Values["y"].Shape); got != "i64[4]" {
		t.Fatalf("Concat of shape and [-1]: %s", got)
	}
	cases := []struct {
		target string
		want   string
	}{
		{"%half", "f32[4]"},
		{"%dbl", "f32[8]"},
		// batch·2 is the scaled symbol, and divided by 2 batch again;
		// divided by 3 it is no symbol inference can name.
		{"%b1", `f32["2·batch"]`},
		{"%back", "f32[batch]"},
		{"%third", "f32[?]"},
		{"%same", "f32[0]"},
	}
	for _, c := range cases {
		g, err := inferText(t, 14, body+"init %zero: i64[1] = [0]\n%t = Unsqueeze("+c.target+", %zero)\n%z = ConstantOfShape(%t)\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := typeString(g.Values["z"].DType, g.Values["z"].Shape); got != c.want {
			t.Errorf("ConstantOfShape(Unsqueeze(%s)) = %s, want %s", c.target, got, c.want)
		}
	}
	// Expand by Where(Equal(shape, -1), 1, shape) resolves to the shape.
	g, err = inferText(t, 14, body+`
init %four: i64[1] = [3]
%ones = ConstantOfShape(%four) {value=tensor<i64[1]> [1]}
%w = Where(%eq, %ones, %s)
input %m: f32[batch, 1, 1]
%z = Expand(%m, %w)
%w2 = Where(%nb, %s, %ones)
%z2 = Expand(%m, %w2)
%w3 = Where(%lt, %ones, %s)
%z3 = Expand(%m, %w3)
%k = Reshape(%x, %c)
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"z": "f32[batch, sequence, 8]", "z2": "f32[batch, sequence, 8]",
		"z3": "f32[batch, sequence, 8]", "k": "f32[batch, sequence, 8]"} {
		if got := typeString(g.Values[name].DType, g.Values[name].Shape); got != want {
			t.Errorf("%%%s = %s, want %s", name, got, want)
		}
	}
}
