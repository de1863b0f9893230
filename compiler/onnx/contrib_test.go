package onnx

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// contribBERT writes sst2-bert-mini (config cfg, weights st) as ONNX
// Runtime's transformer optimizer leaves a BERT classifier: one
// EmbedLayerNormalization, per layer an Attention with packed QKV weights,
// SkipLayerNormalization with the dense bias folded in, BiasGelu, and the
// pooler as FusedGemm with Tanh. The layers read their mask in each form
// the optimizer writes: EmbedLayerNormalization's mask_index (layer 0),
// ReduceSum of the cast mask (1), the raw int32 mask with
// mask_filter_value given (2) and with the default one (3): -10000 both,
// so that the layers share one mask as in the torch export. Layer 3 is
// MultiHeadAttention on separate projections, the optimizer's opt-in form. Layer 1's
// SkipLayerNormalization takes the residual as input and the projection as
// skip, the other layers the reverse.
func contribBERT(t *testing.T, cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto {
	t.Helper()
	var inits []*onnxpb.TensorProto
	w := func(name string) *compiler.Tensor {
		x, err := st.Weight(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	add := func(name string, x *compiler.Tensor) string {
		inits = append(inits, f32Raw(name, x.Shape, x.F32...))
		return name
	}
	param := func(name string) string { return add(name, w(name)) }
	// transposed is a Linear's [out, in] weight as [in, out].
	transposed := func(name string) *compiler.Tensor {
		x := w(name)
		out, in := x.Shape[0], x.Shape[1]
		y := compiler.NewTensor(compiler.Float32, in, out)
		for o := range out {
			for i := range in {
				y.F32[i*out+o] = x.F32[o*in+i]
			}
		}
		return y
	}
	ms := func(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n := node(op, name, in, out, attrs...)
		n.Domain = proto.String(contribDomain)
		return n
	}
	eps := floatAttr("epsilon", float32(cfg.LayerNormEps))
	toInt32 := intAttr("to", int64(onnxpb.TensorProto_INT32))
	nodes := []*onnxpb.NodeProto{
		node("Cast", "ids32", []string{"input_ids"}, []string{"ids32"}, toInt32),
		node("Cast", "types32", []string{"token_type_ids"}, []string{"types32"}, toInt32),
		node("Cast", "mask32", []string{"attention_mask"}, []string{"mask32"}, toInt32),
		ms("EmbedLayerNormalization", "embed", []string{"ids32", "types32",
			param("bert.embeddings.word_embeddings.weight"), param("bert.embeddings.position_embeddings.weight"),
			param("bert.embeddings.token_type_embeddings.weight"),
			param("bert.embeddings.LayerNorm.weight"), param("bert.embeddings.LayerNorm.bias"), "mask32"},
			[]string{"x0", "mask_index"}, eps),
		node("ReduceSum", "mask_count", []string{"mask32", add("axis1", &compiler.Tensor{DType: compiler.Int64, Shape: []int64{1}, I64: []int64{1}})},
			[]string{"mask_count"}, intAttr("keepdims", 0)),
	}
	inits[len(inits)-1] = i64Typed("axis1", []int64{1}, 1)
	x := "x0"
	h := int64(cfg.HiddenSize)
	for l := range cfg.NumLayers {
		p := "bert.encoder.layer." + strconv.Itoa(l)
		qkv := compiler.NewTensor(compiler.Float32, h, 3*h)
		bias := compiler.NewTensor(compiler.Float32, 3*h)
		for k, part := range []string{"query", "key", "value"} {
			wt := transposed(p + ".attention.self." + part + ".weight")
			for r := range h {
				copy(qkv.F32[r*3*h+int64(k)*h:], wt.F32[r*h:(r+1)*h])
			}
			copy(bias.F32[int64(k)*h:], w(p+".attention.self."+part+".bias").F32)
		}
		attn := []*onnxpb.AttributeProto{intAttr("num_heads", int64(cfg.NumHeads))}
		mask := []string{"mask_index", "mask_count", "mask32", "mask32"}[l%4]
		if l%4 == 2 {
			attn = append(attn, floatAttr("mask_filter_value", -10000))
		}
		s := func(suffix string) string { return fmt.Sprintf("l%d/%s", l, suffix) }
		ln := func(which string) (string, string) {
			return param(p + "." + which + ".LayerNorm.weight"), param(p + "." + which + ".LayerNorm.bias")
		}
		g1, b1 := ln("attention.output")
		g2, b2 := ln("output")
		skipIn := []string{s("attn_out"), x}
		if l == 1 {
			skipIn = []string{x, s("attn_out")}
		}
		if l == 3 {
			// The optimizer's opt-in form: the projections as MatMuls and
			// MultiHeadAttention with their biases and the raw mask.
			for _, part := range []string{"query", "key", "value"} {
				nodes = append(nodes, node("MatMul", s(part), []string{x, add(s(part+"_weight"), transposed(p+".attention.self."+part+".weight"))}, []string{s(part)}))
			}
			nodes = append(nodes, ms("MultiHeadAttention", s("MultiHeadAttention"), []string{s("query"), s("key"), s("value"), add(s("qkv_bias"), bias), mask},
				[]string{s("context")}, intAttr("num_heads", int64(cfg.NumHeads))))
		} else {
			nodes = append(nodes, ms("Attention", s("Attention"), []string{x, add(s("qkv_weight"), qkv), add(s("qkv_bias"), bias), mask}, []string{s("context")}, attn...))
		}
		nodes = append(nodes,
			node("MatMul", s("attn_out"), []string{s("context"), add(s("attn_out_weight"), transposed(p+".attention.output.dense.weight"))}, []string{s("attn_out")}),
			ms("SkipLayerNormalization", s("SkipLN1"), append(skipIn, g1, b1, param(p+".attention.output.dense.bias")), []string{s("x1")}, eps),
			node("MatMul", s("up"), []string{s("x1"), add(s("up_weight"), transposed(p+".intermediate.dense.weight"))}, []string{s("up")}),
			ms("BiasGelu", s("BiasGelu"), []string{s("up"), param(p + ".intermediate.dense.bias")}, []string{s("gelu")}),
			node("MatMul", s("down"), []string{s("gelu"), add(s("down_weight"), transposed(p+".output.dense.weight"))}, []string{s("down")}),
			ms("SkipLayerNormalization", s("SkipLN2"), []string{s("down"), s("x1"), g2, b2, param(p + ".output.dense.bias")}, []string{s("x2")}, eps),
		)
		x = s("x2")
	}
	nodes = append(nodes,
		node("Gather", "first_token", []string{x, "zero"}, []string{"first"}, intAttr("axis", 1)),
		ms("FusedGemm", "pooler", []string{"first", param("bert.pooler.dense.weight"), param("bert.pooler.dense.bias")}, []string{"pooled"},
			intAttr("transB", 1), strAttr("activation", "Tanh")),
		node("Gemm", "classifier", []string{"pooled", param("classifier.weight"), param("classifier.bias")}, []string{"logits"}, intAttr("transB", 1)),
	)
	inits = append(inits, i64Typed("zero", nil, 0))
	m := model(14, &onnxpb.GraphProto{
		Name: proto.String("contrib-bert"), Node: nodes, Initializer: inits,
		Input: []*onnxpb.ValueInfoProto{
			tensorInfo("input_ids", onnxpb.TensorProto_INT64, "batch", "sequence"),
			tensorInfo("attention_mask", onnxpb.TensorProto_INT64, "batch", "sequence"),
			tensorInfo("token_type_ids", onnxpb.TensorProto_INT64, "batch", "sequence"),
		},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("logits", onnxpb.TensorProto_FLOAT, "batch", 2)},
	})
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(contribDomain), Version: proto.Int64(1)})
	return m
}

// sharedBERT is write applied to the shared model name (its config and
// weights), serialized, with the model's directory (its reference is
// there); or, given in, to the model in that directory.
func sharedBERT(t *testing.T, name string, write func(hf.Config, *hf.Safetensors) *onnxpb.ModelProto, in ...string) (dir string, model []byte) {
	t.Helper()
	if len(in) > 0 {
		dir = in[0]
	} else {
		dir = testmodels.ModelDir(t, name)
	}
	cfg, err := hf.LoadConfig(filepath.Join(dir, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := hf.OpenSafetensors(filepath.Join(dir, hf.SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	return dir, marshal(t, write(cfg, st))
}

// sharedContribBERT is contribBERT of the shared sst2-bert-mini.
func sharedContribBERT(t *testing.T) (dir string, model []byte) {
	t.Helper()
	return sharedBERT(t, "sst2-bert-mini", func(cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto { return contribBERT(t, cfg, st) })
}

// TestContribBERTMatchesReference: sst2-bert-mini written with ONNX
// Runtime's fused ops reproduces PyTorch's logits, in padded batches (so
// every mask form masks), and canonicalises to the same ops as the torch
// export of the same model: the fusion passes see through the expansion.
// SQC_CONTRIB_MODEL_OUT=file.onnx saves the fused model (to run it in ONNX
// Runtime, which defines these ops).
func TestContribBERTMatchesReference(t *testing.T) {
	dir, data := sharedContribBERT(t)
	if out := os.Getenv("SQC_CONTRIB_MODEL_OUT"); out != "" {
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Decode(data, "contrib-bert.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatalf("expanded graph does not verify: %v", err)
	}
	if got, want := g.Meta["expanded_com.microsoft"], "Attention 3, BiasGelu 4, EmbedLayerNormalization 1, FusedGemm 1, MultiHeadAttention 1, SkipLayerNormalization 8"; got != want {
		t.Errorf("Meta[expanded_com.microsoft] = %q, want %q", got, want)
	}
	for _, n := range g.Nodes {
		if _, ok := compiler.LookupOp(n.Op); !ok {
			t.Fatalf("node %s keeps op %s after expansion", n.Name, n.Op)
		}
	}
	// As hf's reference test: PyTorch's FP32 logits to within summation
	// order (the expansion adds SkipLayerNorm's bias in the torch export's
	// order, not ONNX Runtime's).
	wantInterpMatchesReference(t, g, dir, 64)

	torch, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// The packed QKV weights, once split, are not kept beside the split
	// ones: the two files carry the same weights (and a few scalars).
	f32s := func(g *compiler.Graph) (n int) {
		for _, t := range g.Initializers {
			n += len(t.F32)
		}
		return n
	}
	if a, b := f32s(g), f32s(torch); a < b || a > b+64 {
		t.Errorf("%d float32 parameters after expansion, the torch export has %d", a, b)
	}
	if a, b := canonicalOps(t, g), canonicalOps(t, torch); !maps.Equal(a, b) {
		t.Errorf("canonical ops differ:\nfused %v\ntorch %v", a, b)
	}
	// EmbedLayerNormalization sums (word + position) + segment, which the
	// fused embeddings keep.
	for _, n := range g.Nodes {
		if n.Op == "sqc.Embeddings" && !compiler.EmbeddingsPositionsFirst(n) {
			t.Errorf("%s: positions_first unset", n.Name)
		}
	}
}

// oneContribOp is a model of one com.microsoft node reading inputs a
// ([2, 3, 4]) and, where given, b, with output y.
func oneContribOp(op string, bShape []int64, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	in := []string{"a"}
	inputs := []*onnxpb.ValueInfoProto{tensorInfo("a", onnxpb.TensorProto_FLOAT, 2, 3, 4)}
	if bShape != nil {
		in = append(in, "b")
		dims := make([]any, len(bShape))
		for i, d := range bShape {
			dims[i] = int(d)
		}
		inputs = append(inputs, tensorInfo("b", onnxpb.TensorProto_FLOAT, dims...))
	}
	n := node(op, "the_op", in, []string{"y"}, attrs...)
	n.Domain = proto.String(contribDomain)
	m := model(14, &onnxpb.GraphProto{Name: proto.String(op), Node: []*onnxpb.NodeProto{n}, Input: inputs,
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_FLOAT)}})
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(contribDomain), Version: proto.Int64(1)})
	return m
}

// TestContribElementwise checks each expanded op against its formula in
// float64 (ONNX Runtime's contrib op definitions), on values from -4 to 4.
func TestContribElementwise(t *testing.T) {
	a := compiler.NewTensor(compiler.Float32, 2, 3, 4)
	for i := range a.F32 {
		a.F32[i] = float32(i)/3 - 4
	}
	bias := compiler.NewTensor(compiler.Float32, 4)
	copy(bias.F32, []float32{0.25, -0.5, 1, 0})
	erfGelu := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	tanhGelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) }
	for _, tc := range []struct {
		op    string
		bias  bool
		attrs []*onnxpb.AttributeProto
		f     func(x float64) float64
	}{
		{op: "Gelu", f: erfGelu},
		{op: "BiasGelu", bias: true, f: erfGelu},
		{op: "FastGelu", f: tanhGelu},
		{op: "FastGelu", bias: true, f: tanhGelu},
		{op: "QuickGelu", attrs: []*onnxpb.AttributeProto{floatAttr("alpha", 1.5)}, f: func(x float64) float64 { return x / (1 + math.Exp(-1.5*x)) }},
		{op: "QuickGelu", f: func(x float64) float64 { return x / (1 + math.Exp(-1.702*x)) }},
	} {
		name := tc.op
		var bShape []int64
		in := map[string]*compiler.Tensor{"a": a}
		if tc.bias {
			name, bShape, in["b"] = name+"+bias", []int64{4}, bias
		}
		t.Run(name, func(t *testing.T) {
			g, err := Decode(marshal(t, oneContribOp(tc.op, bShape, tc.attrs...)), tc.op+".onnx")
			if err != nil {
				t.Fatal(err)
			}
			out, err := interp.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, y := range out["y"].F32 {
				x := float64(a.F32[i])
				if tc.bias {
					x += float64(bias.F32[i%4])
				}
				if want := tc.f(x); math.Abs(float64(y)-want) > 2e-6*max(1, math.Abs(want)) {
					t.Fatalf("y[%d] = %g for x = %g, want %g", i, y, x, want)
				}
			}
		})
	}
}

// TestContribFusedMatMul: alpha·op(A)·op(B) with the transposes, the rank
// read from the inputs' declared shapes.
func TestContribFusedMatMul(t *testing.T) {
	a := compiler.NewTensor(compiler.Float32, 2, 3, 4)
	b := compiler.NewTensor(compiler.Float32, 2, 5, 4)
	for i := range a.F32 {
		a.F32[i] = float32(i%7) - 3
	}
	for i := range b.F32 {
		b.F32[i] = float32(i%5) - 2
	}
	m := oneContribOp("FusedMatMul", []int64{2, 5, 4}, intAttr("transB", 1), floatAttr("alpha", 0.5))
	g, err := Decode(marshal(t, m), "fused_matmul.onnx")
	if err != nil {
		t.Fatal(err)
	}
	out, err := interp.Run(g, map[string]*compiler.Tensor{"a": a, "b": b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := out["y"]
	if !slices.Equal(y.Shape, []int64{2, 3, 5}) {
		t.Fatalf("shape %v, want [2 3 5]", y.Shape)
	}
	for n := range 2 {
		for i := range 3 {
			for j := range 5 {
				var want float32
				for k := range 4 {
					want += a.F32[n*12+i*4+k] * b.F32[n*20+j*4+k]
				}
				if got := y.F32[n*15+i*5+j]; got != 0.5*want {
					t.Fatalf("y[%d,%d,%d] = %g, want %g", n, i, j, got, 0.5*want)
				}
			}
		}
	}
}

// TestContribRefused: what the expansion does not compute is an error
// naming the file, the node and the reason; ops it does not know stay
// unsupported with the advice for ONNX Runtime's ops.
func TestContribRefused(t *testing.T) {
	rankless := oneContribOp("FusedMatMul", []int64{2, 5, 4}, intAttr("transA", 1))
	rankless.Graph.Input[0] = tensorInfo("a", onnxpb.TensorProto_FLOAT)
	rankless.Graph.Input[0].Type.GetTensorType().Shape = nil
	skipStats := oneContribOp("SkipLayerNormalization", []int64{2, 3, 4})
	skipStats.Graph.Node[0].Input = append(skipStats.Graph.Node[0].Input, "gamma")
	skipStats.Graph.Node[0].Output = []string{"y", "mean"}
	skipStats.Graph.Initializer = []*onnxpb.TensorProto{f32Raw("gamma", []int64{4}, 1, 1, 1, 1)}
	skipStats.Graph.Output = append(skipStats.Graph.Output, tensorInfo("mean", onnxpb.TensorProto_FLOAT))
	// MatMulNBits of a ([2, 3, 4]: K 4) by N 2 columns of one block of 16
	// 4-bit codes (8 bytes each).
	nbits := func(codes int, bits int64, extra ...string) *onnxpb.ModelProto {
		m := oneContribOp("MatMulNBits", nil, intAttr("K", 4), intAttr("N", 2), intAttr("bits", bits), intAttr("block_size", 16))
		m.Graph.Node[0].Input = append([]string{"a", "codes", "scales"}, extra...)
		m.Graph.Initializer = []*onnxpb.TensorProto{
			{Name: proto.String("codes"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), Dims: []int64{int64(codes)}, RawData: make([]byte, codes)},
			f32Raw("scales", []int64{2}, 1, 1), i64Typed("g_idx", []int64{4}, 0, 1, 2, 3),
		}
		return m
	}
	// MatMulBnb4 of a (K 4) by N 2: 8 codes in 4 bytes, one block of 16.
	bnb4 := func(absmax int, quantType int64) *onnxpb.ModelProto {
		m := oneContribOp("MatMulBnb4", nil, intAttr("K", 4), intAttr("N", 2), intAttr("block_size", 16), intAttr("quant_type", quantType))
		m.Graph.Node[0].Input = []string{"a", "codes", "absmax"}
		m.Graph.Initializer = []*onnxpb.TensorProto{
			{Name: proto.String("codes"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), Dims: []int64{4}, RawData: make([]byte, 4)},
			f32Raw("absmax", []int64{int64(absmax)}, make([]float32, absmax)...),
		}
		return m
	}
	withPast := oneContribOp("MultiHeadAttention", []int64{2, 3, 4}, intAttr("num_heads", 2))
	withPast.Graph.Node[0].Input = []string{"a", "b", "b", "", "", "", "b"}
	for _, tc := range []struct {
		name string
		m    *onnxpb.ModelProto
		want []string
	}{
		{"MultiHeadAttention with a cache", withPast, []string{"input 6 (past_key)"}},
		{"transA without a rank", rankless, []string{"the_op", "transA=1 needs the rank of a"}},
		{"FusedGemm activation", oneContribOp("FusedGemm", []int64{4, 2}, strAttr("activation", "Elu")), []string{"the_op", `activation "Elu"`}},
		{"FusedMatMul batch transpose", oneContribOp("FusedMatMul", []int64{2, 4, 5}, intAttr("transBatchA", 1)), []string{"transBatchA"}},
		{"SkipLayerNorm mean read", skipStats, []string{"output 1 (mean"}},
		{"unknown contrib op", oneContribOp("QAttention", []int64{4}), []string{"com.microsoft.QAttention", "quantised already"}},
		{"MatMulNBits codes short", nbits(15, 4), []string{"the_op", "B is u8[15], want u8 with 16 elements"}},
		{"MatMulNBits 3 bits", nbits(16, 3), []string{"bits = 3"}},
		{"MatMulNBits g_idx", nbits(16, 4, "", "g_idx"), []string{"g_idx"}},
		{"MatMulBnb4 absmax count", bnb4(2, 1), []string{"the_op", "absmax must be an f32 initializer of 1 values"}},
		{"MatMulBnb4 quant_type", bnb4(1, 2), []string{"quant_type 2"}},
		{"Attention unidirectional", oneContribOp("Attention", []int64{4, 12}, intAttr("num_heads", 2), intAttr("unidirectional", 1)), []string{"unidirectional"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(marshal(t, tc.m), "fused.onnx")
			for _, s := range append(tc.want, "fused.onnx") {
				if !errorNames(err, s) {
					t.Fatalf("error %v, want it to name %q", err, s)
				}
			}
		})
	}
}

// TestContribRankFromReshape: transA on an input whose rank only a Reshape
// to a Constant shape states (no value_info) transposes its last two axes.
func TestContribRankFromReshape(t *testing.T) {
	m := oneContribOp("FusedMatMul", []int64{2, 3, 5}, intAttr("transA", 1))
	m.Graph.Input[0] = tensorInfo("a", onnxpb.TensorProto_FLOAT)
	m.Graph.Input[0].Type.GetTensorType().Shape = nil
	m.Graph.Node[0].Input[0] = "a3"
	m.Graph.Node = append([]*onnxpb.NodeProto{
		node("Constant", "shape", nil, []string{"shape"}, tensorAttr("value", i64Typed("", []int64{3}, 2, 3, 4))),
		node("Reshape", "reshape", []string{"a", "shape"}, []string{"a3"}),
	}, m.Graph.Node...)
	g, err := Decode(marshal(t, m), "reshaped.onnx")
	if err != nil {
		t.Fatal(err)
	}
	a, b := compiler.NewTensor(compiler.Float32, 24), compiler.NewTensor(compiler.Float32, 2, 3, 5)
	for i := range a.F32 {
		a.F32[i] = float32(i)
	}
	for i := range b.F32 {
		b.F32[i] = float32(i % 3)
	}
	out, err := interp.Run(g, map[string]*compiler.Tensor{"a": a, "b": b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := out["y"]
	if !slices.Equal(y.Shape, []int64{2, 4, 5}) {
		t.Fatalf("shape %v, want [2 4 5] (Aᵀ·B per batch)", y.Shape)
	}
	// y[n, i, j] = sum_k a[n, k, i] · b[n, k, j]
	var want float32
	for k := range 3 {
		want += a.F32[1*12+k*4+2] * b.F32[1*15+k*5+4]
	}
	if got := y.F32[1*20+2*5+4]; got != want {
		t.Errorf("y[1,2,4] = %g, want %g", got, want)
	}
}

// wantInterpMatchesReference runs g in sqc's FP32 interpreter on the first
// sentences reference sentences of the model in dir, in padded batches of
// 8 (so masks mask), and wants PyTorch's logits to 1e-4.
func wantInterpMatchesReference(t *testing.T, g *compiler.Graph, dir string, sentences int) {
	t.Helper()
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := interpLogits(t, g, ref, sentences)
	if d := testmodels.MaxAbsDiff(got, ref.Logits[:sentences]); !(d <= 1e-4) {
		t.Errorf("max |logit - reference| = %.3g over %d padded sentences, want <= 1e-4", d, sentences)
	} else {
		t.Logf("max |logit - reference| = %.3g over %d padded sentences", d, sentences)
	}
}

// interpLogits runs g (a classifier with output "logits" of two labels) in
// sqc's FP32 interpreter on the reference's first sentences, in padded
// batches of 8.
func interpLogits(t *testing.T, g *compiler.Graph, ref *testmodels.Reference, sentences int) [][]float32 {
	t.Helper()
	return interpLogitsBatched(t, g, ref, sentences, 8)
}

// interpLogitsBatched is interpLogits in padded batches of the given size
// (which must divide sentences).
func interpLogitsBatched(t *testing.T, g *compiler.Graph, ref *testmodels.Reference, sentences, batch int) [][]float32 {
	t.Helper()
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]float32
	for at := 0; at < sentences; at += batch {
		in, err := testmodels.Inputs(g, ref.Examples[at:at+batch])
		if err != nil {
			t.Fatal(err)
		}
		out, err := it.Run(in, &interp.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		for r := range batch {
			got = append(got, out["logits"].F32[2*r:2*r+2])
		}
	}
	return got
}

// TestContribBERTInONNXRuntime runs the fused BERT of
// TestContribBERTMatchesReference in ONNX Runtime, which defines these ops
// (testmodels.RunORT; skipped without node and onnxruntime-node): its
// logits must be PyTorch's too, or the test model, and so what the
// expansion is checked against, would not mean what ONNX Runtime means.
func TestContribBERTInONNXRuntime(t *testing.T) {
	dir, data := sharedContribBERT(t)
	wantORTMatchesReference(t, dir, data)
}

// wantORTMatchesReference runs model data in ONNX Runtime
// (testmodels.RunORT; skipped without node and onnxruntime-node) on one
// padded batch of the reference sentences of the model in dir, and wants
// PyTorch's logits.
func wantORTMatchesReference(t *testing.T, dir string, data []byte) {
	t.Helper()
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := ortLogits(t, ref, data)
	if d := testmodels.MaxAbsDiff(rows, ref.Logits[:len(rows)]); !(d <= 1e-4) {
		t.Errorf("ONNX Runtime: max |logit - reference| = %.3g over %d padded sentences, want <= 1e-4", d, len(rows))
	} else {
		t.Logf("ONNX Runtime: max |logit - reference| = %.3g over %d padded sentences", d, len(rows))
	}
}

// ortLogits runs the model data in ONNX Runtime (testmodels.RunORT) on the
// reference's first 32 sentences, one batch padded to its longest.
func ortLogits(t *testing.T, ref *testmodels.Reference, data []byte) [][]float32 {
	t.Helper()
	const sentences = 32                 // one batch, padded to its longest
	g, err := Decode(data, "model.onnx") // for its inputs
	if err != nil {
		t.Fatal(err)
	}
	in, err := testmodels.Inputs(g, ref.Examples[:sentences])
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "model.onnx"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteORTInputs(tmp, in); err != nil {
		t.Fatal(err)
	}
	logits := testmodels.RunORT(t, tmp)["logits"]
	if logits == nil || len(logits.Shape) != 2 || logits.Shape[0] != sentences {
		t.Fatalf("ONNX Runtime logits %v, want [%d, 2]", logits, sentences)
	}
	rows := make([][]float32, sentences)
	for i := range rows {
		rows[i] = logits.F32[2*i : 2*i+2]
	}
	return rows
}
