package onnx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// wantBad checks that err is bad input naming file and every string in
// names, with cause target.
func wantBad(t *testing.T, err error, target error, file string, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", target)
	}
	if !errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("error is not ErrBadInput: %v", err)
	}
	if !errors.Is(err, target) {
		t.Errorf("error does not wrap %q: %v", target, err)
	}
	for _, s := range append([]string{file}, names...) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not mention %q: %v", s, err)
		}
	}
}

func TestTruncatedTinyModel(t *testing.T) {
	data := marshal(t, tinyModel())
	for cut := range len(data) {
		_, err := Decode(data[:cut], "tiny.onnx")
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: no error", cut, len(data))
		}
		if !errors.Is(err, compiler.ErrTruncated) && !errors.Is(err, compiler.ErrMalformed) {
			t.Fatalf("cut at %d: want truncated or malformed, got %v", cut, err)
		}
		if !strings.HasPrefix(err.Error(), "tiny.onnx: ") {
			t.Fatalf("cut at %d: error does not start with the file name: %v", cut, err)
		}
	}
}

func TestTruncatedRealModel(t *testing.T) {
	src := filepath.Join(sharedDir(t), "models", "sst2-distilbert-tiny", "model.onnx")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, cut := range []int{0, 1, 7, 100, 4096, len(data) / 3, len(data) / 2, len(data) - 100, len(data) - 1} {
		path := filepath.Join(dir, "cut.onnx")
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		wantBad(t, err, compiler.ErrTruncated, path)
		if err != nil && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d: message does not say truncated: %v", cut, err)
		}
	}
}

func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := [][]byte{
		[]byte("this is not an ONNX model\n"),
		[]byte("\x00\x00\x00\x00"),
		[]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		[]byte(`{"model": "json"}`),
	}
	for _, n := range []int{1, 2, 3, 16, 100, 1000, 100000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		inputs = append(inputs, b)
	}
	for i, data := range inputs {
		_, err := Decode(data, "garbage.onnx")
		if err == nil {
			t.Errorf("input %d (%d bytes): no error", i, len(data))
			continue
		}
		if !errors.Is(err, compiler.ErrBadInput) || !strings.HasPrefix(err.Error(), "garbage.onnx: ") {
			t.Errorf("input %d: %v", i, err)
		}
		if _, _, err := DecodeTensor(data); err == nil && len(data) > 100 {
			t.Errorf("input %d: random bytes decoded as a tensor", i)
		}
	}
}

func TestUnsupportedOpsAllReported(t *testing.T) {
	m := tinyModel()
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.microsoft"), Version: proto.Int64(1)})
	m.Graph.Node = append(m.Graph.Node,
		node("LSTM", "rnn", []string{"y"}, []string{"r"}),
		&onnxpb.NodeProto{OpType: proto.String("GroupQueryAttention"), Domain: proto.String("com.microsoft"), Name: proto.String("attn"), Input: []string{"y"}, Output: []string{"a"}},
		node("FancyOp", "", []string{"y"}, []string{"f"}),
	)
	_, err := Decode(marshal(t, m), "ops.onnx")
	wantBad(t, err, compiler.ErrUnsupportedOp, "ops.onnx",
		"LSTM (opset 14) in node rnn", "com.microsoft.GroupQueryAttention (opset 1) in node attn", "FancyOp (opset 14) in node #7",
		"made by its transformer optimizer", "sqc reads those of its BERT fusions (Attention, BiasGelu,")
	var list *UnsupportedOpsError
	if !errors.As(err, &list) || len(list.Nodes) != 3 {
		t.Fatalf("want an UnsupportedOpsError listing 3 nodes, got %v", err)
	}
	if list.Nodes[1] != (UnsupportedNode{Node: "attn", Op: "GroupQueryAttention", Domain: "com.microsoft", Opset: 1}) {
		t.Errorf("node 1 = %+v", list.Nodes[1])
	}
}

// TestUnsupportedOpsGrouped: a model ONNX Runtime's static quantiser
// made in its QOperator format (QLinearMatMuls, a QLinearConv) gets one
// line per op with a few node names, and the advice to give sqc the FP32
// model or the dynamically quantised one.
func TestUnsupportedOpsGrouped(t *testing.T) {
	m := tinyModel()
	for i := range 5 {
		m.Graph.Node = append(m.Graph.Node, node("QLinearMatMul", fmt.Sprintf("mmi%d", i), []string{"y", "y"}, []string{fmt.Sprintf("i%d", i)}))
	}
	m.Graph.Node = append(m.Graph.Node, node("QLinearConv", "ql", []string{"y"}, []string{"q"}))
	_, err := Decode(marshal(t, m), "model_quantized.onnx")
	wantBad(t, err, compiler.ErrUnsupportedOp, "model_quantized.onnx",
		"in 6 node(s)", "QLinearMatMul (opset 14) in 5 nodes: mmi0, mmi1, mmi2 and 2 more", "QLinearConv (opset 14) in node ql",
		"quantised already", "give it the FP32 export", "dynamically quantised")
	if strings.Contains(err.Error(), "mmi3") {
		t.Errorf("the message names more than %d nodes of one op: %v", unsupportedNamesShown, err)
	}
	var list *UnsupportedOpsError
	if !errors.As(err, &list) || len(list.Nodes) != 6 {
		t.Fatalf("want an UnsupportedOpsError listing all 6 nodes, got %v", err)
	}
}

func TestSupportedOpList(t *testing.T) {
	for _, op := range []string{"Gather", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh",
		"Relu", "Sigmoid", "Neg", "Not", "ReduceMean", "ReduceSum", "LayerNormalization", "Softmax", "Transpose",
		"Reshape", "Unsqueeze", "Squeeze", "Cast", "Concat", "Slice", "Shape", "Constant", "ConstantOfShape",
		"Where", "Equal", "Less", "Greater", "Expand", "Range", "Identity"} {
		if !supportedOp("", op) || !supportedOp("ai.onnx", op) {
			t.Errorf("%s is not supported", op)
		}
		if supportedOp("com.microsoft", op) != (op == "LayerNormalization") {
			t.Errorf("com.microsoft.%s: supported %v; only LayerNormalization is, of these (ONNX Runtime registers it there too)", op, supportedOp("com.microsoft", op))
		}
	}
	for _, op := range []string{"LSTM", "Conv", "If", "Loop", "", "sqc.Linear"} {
		if supportedOp("", op) {
			t.Errorf("%q is supported", op)
		}
	}
}

func TestMissingTensors(t *testing.T) {
	m := tinyModel()
	m.Graph.Initializer = m.Graph.Initializer[1:] // drop W
	m.Graph.Node[4].Input[1] = "ghost"
	m.Graph.Output = append(m.Graph.Output, tensorInfo("nowhere", onnxpb.TensorProto_FLOAT))
	_, err := Decode(marshal(t, m), "missing.onnx")
	wantBad(t, err, compiler.ErrMissingTensor, "missing.onnx", "tensor W", "node gemm (Gemm)", "tensor ghost", "node mul (Mul)", "tensor nowhere")
}

func TestDuplicates(t *testing.T) {
	m := tinyModel()
	m.Graph.Initializer = append(m.Graph.Initializer, f32Raw("W", []int64{1}, 0))
	_, err := Decode(marshal(t, m), "dup.onnx")
	wantBad(t, err, compiler.ErrDuplicate, "dup.onnx", "initializer W")

	m = tinyModel()
	m.Graph.Node[2].Output[0] = "z" // Unsqueeze rewrites Gemm's output
	_, err = Decode(marshal(t, m), "dup.onnx")
	wantBad(t, err, compiler.ErrDuplicate, "dup.onnx", `"z"`, "node gemm")

	m = tinyModel()
	m.Graph.Node[0].Attribute = append(m.Graph.Node[0].Attribute, intAttr("transB", 1))
	_, err = Decode(marshal(t, m), "dup.onnx")
	wantBad(t, err, compiler.ErrDuplicate, "dup.onnx", "node gemm (Gemm) attribute transB")
}

func TestInitializerChecks(t *testing.T) {
	cases := []struct {
		name   string
		tensor *onnxpb.TensorProto
		target error
		says   []string
	}{
		{"short raw", f32Raw("W", []int64{4, 2}, 1, 2, 3), compiler.ErrShapeMismatch, []string{"12 bytes", "needs 32"}},
		{"short typed", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(1), Dims: []int64{4, 2}, FloatData: []float32{1}}, compiler.ErrShapeMismatch, []string{"float_data holds 1"}},
		{"nan", f32Raw("W", []int64{4, 2}, 1, 2, 3, float32(math.NaN()), 5, 6, 7, 8), compiler.ErrNonFinite, []string{"element 3"}},
		{"inf", f32Raw("W", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, float32(math.Inf(-1))), compiler.ErrNonFinite, []string{"-Inf"}},
		{"short float16", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(10), Dims: []int64{4, 2}, RawData: make([]byte, 12)}, compiler.ErrShapeMismatch, []string{"12 bytes", "float16[4 2] needs 16"}},
		{"complex64", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(14), Dims: []int64{1}, RawData: make([]byte, 8)}, ErrUnsupportedDType, []string{"complex64"}},
		{"string", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(8), Dims: []int64{1}, StringData: [][]byte{[]byte("a")}}, ErrUnsupportedDType, []string{"string"}},
		{"negative dim", f32Raw("W", []int64{-4, 2}), compiler.ErrMalformed, []string{"negative dimension"}},
		{"overflowing dims", f32Raw("W", []int64{1 << 40, 1 << 40}), compiler.ErrMalformed, []string{"overflow"}},
		{"wrong typed field", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(1), Dims: []int64{2}, Int64Data: []int64{1, 2}}, compiler.ErrMalformed, []string{"int64_data"}},
		{"raw and typed", &onnxpb.TensorProto{Name: proto.String("W"), DataType: proto.Int32(1), Dims: []int64{1}, FloatData: []float32{1}, RawData: make([]byte, 4)}, compiler.ErrMalformed, []string{"both"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := tinyModel()
			m.Graph.Initializer[0] = c.tensor
			_, err := Decode(marshal(t, m), "w.onnx")
			wantBad(t, err, c.target, "w.onnx", append([]string{"initializer W"}, c.says...)...)
		})
	}
	m := tinyModel()
	m.Graph.Initializer[0] = cases[2].tensor
	g, err := DecodeWith(marshal(t, m), "w.onnx", Options{AllowNonFinite: true})
	if err != nil || !math.IsNaN(float64(g.Initializers["W"].F32[3])) {
		t.Errorf("AllowNonFinite: %v", err)
	}
}

func TestOpsetRange(t *testing.T) {
	for _, opset := range []int64{10, 24} {
		m := tinyModel()
		m.OpsetImport[0].Version = proto.Int64(opset)
		_, err := Decode(marshal(t, m), "opset.onnx")
		wantBad(t, err, ErrUnsupportedOpset, "opset.onnx", "opset "+strconv.FormatInt(opset, 10), "11 to 23")
		g, err := DecodeWith(marshal(t, m), "opset.onnx", Options{AllowAnyOpset: true})
		if err != nil || g.Opset != opset {
			t.Errorf("AllowAnyOpset, opset %d: %v", opset, err)
		}
	}
	// The opsets torch.onnx's dynamo exporter writes (18 and 20 by default,
	// 23 for the Attention op) load as they are.
	for _, opset := range []int64{18, 20, 23} {
		m := tinyModel()
		m.OpsetImport[0].Version = proto.Int64(opset)
		if g, err := Decode(marshal(t, m), "opset.onnx"); err != nil || g.Opset != opset {
			t.Errorf("opset %d: %v", opset, err)
		}
	}
	m := tinyModel()
	m.OpsetImport[0].Domain = proto.String("ai.onnx")
	if g, err := Decode(marshal(t, m), ""); err != nil || g.Opset != 14 {
		t.Errorf("ai.onnx domain alias: opset %v, %v", g, err)
	}
	m.OpsetImport = nil
	_, err := Decode(marshal(t, m), "noopset.onnx")
	wantBad(t, err, compiler.ErrMalformed, "noopset.onnx", "no opset")
}

func TestGraphStructure(t *testing.T) {
	// Out-of-order nodes are sorted, keeping file order among ready nodes.
	m := tinyModel()
	n := m.Graph.Node
	m.Graph.Node = []*onnxpb.NodeProto{n[4], n[2], n[3], n[1], n[0]}
	g, err := Decode(marshal(t, m), "order.onnx")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.Name)
	}
	if got, want := strings.Join(names, " "), "half axes gemm unsq mul"; got != want {
		t.Errorf("sorted order %q, want %q", got, want)
	}

	// A cycle is an error.
	m = tinyModel()
	m.Graph.Node[0].Input[0] = "y"
	_, err = Decode(marshal(t, m), "cycle.onnx")
	wantBad(t, err, compiler.ErrCyclicGraph, "cycle.onnx")

	// No graph at all.
	_, err = Decode(marshal(t, &onnxpb.ModelProto{IrVersion: proto.Int64(8)}), "empty.onnx")
	wantBad(t, err, compiler.ErrMalformed, "empty.onnx", "no graph")

	// Non-tensor input types and graph-valued attributes are unsupported.
	m = tinyModel()
	m.Graph.Input[0].Type = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{}}}
	_, err = Decode(marshal(t, m), "seq.onnx")
	wantBad(t, err, ErrUnsupportedFeature, "seq.onnx", "input x", "sequence")

	m = tinyModel()
	m.Graph.Node[4].Attribute = []*onnxpb.AttributeProto{{Name: proto.String("body"), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: &onnxpb.GraphProto{}}}
	_, err = Decode(marshal(t, m), "graph.onnx")
	wantBad(t, err, ErrUnsupportedFeature, "graph.onnx", "node mul (Mul) attribute body", "GRAPH")

	// Constant with two values.
	m = tinyModel()
	m.Graph.Node[1].Attribute = append(m.Graph.Node[1].Attribute, intAttr("value_int", 3))
	_, err = Decode(marshal(t, m), "const.onnx")
	wantBad(t, err, compiler.ErrMalformed, "const.onnx", "node axes (Constant)", "exactly one")

	// Inputs that are initializers are weights, not graph inputs.
	m = tinyModel()
	m.Graph.Input = append(m.Graph.Input, tensorInfo("W", onnxpb.TensorProto_FLOAT, 4, 2))
	g, err = Decode(marshal(t, m), "")
	if err != nil || len(g.Inputs) != 1 {
		t.Errorf("initializer listed as input: %v, inputs %v", err, g)
	}

	// An attribute without a type is inferred from its value (old files).
	m = tinyModel()
	m.Graph.Node[0].Attribute[0].Type = nil
	g, err = Decode(marshal(t, m), "")
	if err != nil || g.Nodes[0].Attrs["transB"].Kind != compiler.AttrInt {
		t.Errorf("untyped attribute: %v", err)
	}
}
