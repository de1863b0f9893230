package onnx

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpus in testdata/fuzz")

// fuzzWeights is the external data file FuzzDecode provides next to its
// model path: W of tinyModel, at offset 0.
func fuzzWeights() []byte { return f32Raw("W", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8).RawData }

// decodeSeeds are the FuzzDecode seed inputs, by file name: small valid
// models covering each feature the decoder has, and corrupt ones.
func decodeSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	add := func(name string, m *onnxpb.ModelProto) { seeds[name] = marshal(t, m) }

	add("valid_tiny", tinyModel())

	m := tinyModel()
	m.Graph.Initializer[0].RawData = nil
	m.Graph.Initializer[0].DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	m.Graph.Initializer[0].ExternalData = kv("location", "weights.bin", "offset", "0", "length", "32")
	add("valid_external", m)

	m = tinyModel()
	m.Graph.Node[0].Attribute[0].Type = nil
	m.Graph.Node[1] = node("Constant", "axes", nil, []string{"axes"}, intAttr("value_int", 1))
	m.Graph.Node = append(m.Graph.Node,
		node("Constant", "fs", nil, []string{"fs"}, floatsAttrOf("value_floats", 1, 2)),
		node("Cast", "cast", []string{"y"}, []string{"c"}, intAttr("to", 7)),
		node("Where", "w", []string{"b", "y", "y"}, []string{"wy"}))
	m.Graph.Initializer = append(m.Graph.Initializer,
		&onnxpb.TensorProto{Name: proto.String("b"), DataType: proto.Int32(9), Dims: []int64{2}, Int32Data: []int32{1, 0}},
		&onnxpb.TensorProto{Name: proto.String("i8"), DataType: proto.Int32(3), Dims: []int64{3}, RawData: []byte{1, 2, 0xff}},
		&onnxpb.TensorProto{Name: proto.String("d"), DataType: proto.Int32(11), Dims: []int64{1}, DoubleData: []float64{2.5}})
	m.Graph.Output = append(m.Graph.Output, tensorInfo("c", onnxpb.TensorProto_INT64), tensorInfo("wy", onnxpb.TensorProto_FLOAT))
	add("valid_forms", m)

	m = tinyModel()
	n := m.Graph.Node
	m.Graph.Node = []*onnxpb.NodeProto{n[4], n[3], n[2], n[1], n[0]}
	add("valid_unsorted", m)

	m = tinyModel()
	m.Graph.Node = append(m.Graph.Node, node("LSTM", "", []string{"y"}, []string{"r"}))
	add("bad_unsupported_op", m)

	add("valid_contrib", contribSeed())
	m = contribSeed()
	extra := node("BiasGelu", "unused", []string{"x", "beta"}, nil) // no output to name its result
	extra.Domain = proto.String(contribDomain)
	m.Graph.Node = append(m.Graph.Node, extra)
	add("bad_contrib_no_output", m)
	m = contribSeed()
	m.Graph.Node[2].Attribute = nil // Attention without num_heads
	add("bad_contrib_attention", m)

	add("valid_functions", functionSeed())
	m = functionSeed()
	m.Graph.Node[1].Attribute = nil // 3-D Attention without head counts
	add("bad_function_attention", m)

	m = tinyModel()
	m.Graph.Node[4].Input[1] = "ghost"
	add("bad_missing_tensor", m)

	m = tinyModel()
	m.Graph.Initializer[0].DataType = proto.Int32(10) // 32 bytes for 8 values
	add("bad_float16_size", m)
	add("valid_float16", onnxconverterCommon.convert(t, tinyModel()))

	m = tinyModel()
	m.Graph.Initializer[0].ExternalData = kv("location", "../weights.bin")
	m.Graph.Initializer[0].DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	m.Graph.Initializer[0].RawData = nil
	add("bad_external_escape", m)

	tiny := seeds["valid_tiny"]
	seeds["bad_truncated"] = tiny[:len(tiny)/2]
	seeds["bad_garbage"] = []byte("not an onnx model \x00\x01\x02\xff")
	seeds["bad_empty"] = []byte{}
	return seeds
}

// TestFuzzSeedCorpus keeps testdata/fuzz/FuzzDecode in step with
// decodeSeeds; run with -update to rewrite it.
func TestFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	for name, data := range decodeSeeds(t) {
		want := []byte("go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n")
		path := filepath.Join(dir, name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("seed %s is stale or missing (run go test -run TestFuzzSeedCorpus -update): %v", path, err)
		}
	}
}

// TestSeedsDecodeAsNamed checks that the valid_ seeds load and the bad_
// ones fail, so the corpus exercises what its names say.
func TestSeedsDecodeAsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), fuzzWeights(), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, data := range decodeSeeds(t) {
		g, err := Decode(data, filepath.Join(dir, "seed.onnx"))
		valid := strings.HasPrefix(name, "valid_")
		if valid && err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !valid && err == nil {
			t.Errorf("%s: decoded without error", name)
		}
		if err == nil {
			if problem := checkGraph(g); problem != "" {
				t.Errorf("%s: %s", name, problem)
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), fuzzWeights(), 0o644); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "fuzz.onnx")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{{}, {AllowAnyOpset: true, AllowNonFinite: true}} {
			g, err := DecodeWith(data, path, opts)
			if err != nil {
				if !errors.Is(err, compiler.ErrBadInput) {
					t.Fatalf("error is not bad input: %v", err)
				}
				continue
			}
			if problem := checkGraph(g); problem != "" {
				t.Fatal(problem)
			}
		}
	})
}

func FuzzDecodeTensor(f *testing.F) {
	f.Add(marshal(f, f32Raw("x", []int64{2}, 1, 2)))
	f.Add(marshal(f, i64Typed("i", []int64{3}, 1, 2, 3)))
	f.Add(marshal(f, &onnxpb.TensorProto{DataType: proto.Int32(9), Dims: []int64{2}, Int32Data: []int32{1, 0}}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, tensor, err := DecodeTensor(data)
		if err != nil {
			if !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error is not bad input: %v", err)
			}
			return
		}
		if err := tensor.Check(); err != nil {
			t.Fatalf("decoded tensor fails Check: %v", err)
		}
	})
}

// checkGraph verifies what the loader promises about a graph it returns,
// or says what is wrong.
func checkGraph(g *compiler.Graph) string {
	defined := map[string]bool{"": true}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for name, t := range g.Initializers {
		if err := t.Check(); err != nil {
			return fmt.Sprintf("initializer %s: %v", name, err)
		}
		defined[name] = true
	}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if !defined[in] {
				return fmt.Sprintf("node %d (%s): input %q not defined before it", i, n.Op, in)
			}
		}
		for name, a := range n.Attrs {
			if a.Kind == compiler.AttrTensor {
				if err := a.Tensor.Check(); err != nil {
					return fmt.Sprintf("node %d (%s) attribute %s: %v", i, n.Op, name, err)
				}
			}
		}
		if n.Op == "Constant" {
			if a, ok := n.Attrs["value"]; !ok || len(n.Attrs) != 1 || a.Kind != compiler.AttrTensor {
				return fmt.Sprintf("node %d: Constant not normalized: %v", i, slices.Sorted(maps.Keys(n.Attrs)))
			}
		}
		for _, out := range n.Outputs {
			defined[out] = true
		}
	}
	for _, out := range g.Outputs {
		if !defined[out.Name] {
			return fmt.Sprintf("graph output %q is not defined", out.Name)
		}
	}
	return ""
}

// contribSeed is a small model of ONNX Runtime's fused ops (contrib.go):
// x f32[batch, 3, 4] through SkipLayerNormalization, BiasGelu, Attention
// and FusedMatMul.
func contribSeed() *onnxpb.ModelProto {
	ms := func(op string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n := node(op, op, in, out, attrs...)
		n.Domain = proto.String(contribDomain)
		return n
	}
	m := model(14, &onnxpb.GraphProto{
		Name: proto.String("contrib"),
		Node: []*onnxpb.NodeProto{
			ms("SkipLayerNormalization", []string{"x", "x", "gamma", "beta"}, []string{"s"}),
			ms("BiasGelu", []string{"s", "beta"}, []string{"g"}),
			ms("Attention", []string{"g", "wqkv", "bqkv"}, []string{"a"}, intAttr("num_heads", 2)),
			ms("FusedMatMul", []string{"a", "w"}, []string{"y"}, floatAttr("alpha", 0.5)),
		},
		Initializer: []*onnxpb.TensorProto{
			f32Raw("gamma", []int64{4}, 1, 1, 1, 1), f32Raw("beta", []int64{4}, 0, 0.5, 0, -0.5),
			f32Raw("wqkv", []int64{4, 12}, make([]float32, 48)...), f32Raw("bqkv", []int64{12}, make([]float32, 12)...),
			f32Raw("w", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8),
		},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", onnxpb.TensorProto_FLOAT, "batch", 3, 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_FLOAT, "batch", 3, 2)},
	})
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(contribDomain), Version: proto.Int64(1)})
	return m
}

// functionSeed is a small opset-23 model with the ONNX function ops the
// frontend expands: Gelu, then 3-D self-attention with a boolean mask.
func functionSeed() *onnxpb.ModelProto {
	return model(23, &onnxpb.GraphProto{
		Name: proto.String("functions"),
		Node: []*onnxpb.NodeProto{
			node("Gelu", "gelu", []string{"x"}, []string{"g"}, strAttr("approximate", "tanh")),
			node("Attention", "attention", []string{"g", "g", "g", "mask"}, []string{"y"}, intAttr("q_num_heads", 2), intAttr("kv_num_heads", 2)),
		},
		Input: []*onnxpb.ValueInfoProto{tensorInfo("x", onnxpb.TensorProto_FLOAT, "batch", 3, 4),
			tensorInfo("mask", onnxpb.TensorProto_BOOL, "batch", 1, 1, 3)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_FLOAT, "batch", 3, 4)},
	})
}
