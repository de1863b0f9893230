package onnx

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// dynamicQuantizer quantises a float32 model as ONNX Runtime's
// quantize_dynamic does, which is how transformers.js' model_quantized.onnx
// and optimum's dynamic quantisation are made:
//   - each MatMul with a constant 2-D B becomes MatMulInteger(a_q, b_q,
//     a_zp, b_zp), Cast to float, Mul by Mul(a_scale, b_scale), A
//     quantised by one DynamicQuantizeLinear per activation (shared by
//     its readers), B stored quantised: u8 asymmetric or s8 symmetric,
//     per tensor or per column, over the full or the reduced range;
//   - with allMatMuls (MatMulConstBOnly off), MatMuls of two activations
//     too (the attention's), both through DynamicQuantizeLinear;
//   - each Gather of a float constant table reads the table stored u8
//     and is followed by DequantizeLinear.
//
// With twin set it writes instead what sqc should read the quantised file
// as: the float32 model with each quantised weight and table replaced by
// its dequantised values, float32(q - zero point) * scale.
type dynamicQuantizer struct {
	signed, perChannel, reduceRange, allMatMuls bool
	twin                                        bool
}

// quantParams are the scale and zero point of values in [lo, hi] as ONNX
// Runtime's compute_scale_zp computes them: the range widened to hold 0,
// made symmetric for s8.
func (q dynamicQuantizer) quantParams(lo, hi float32, signed bool) (scale float32, zp int64, qmin, qmax int64) {
	qmin, qmax = 0, 255
	switch {
	case signed && q.reduceRange:
		qmin, qmax = -64, 64
	case signed:
		qmin, qmax = -127, 127
	case q.reduceRange:
		qmax = 127
	}
	lo, hi = min(lo, 0), max(hi, 0)
	if signed {
		m := max(-lo, hi)
		lo, hi = -m, m
	}
	scale = (hi - lo) / float32(qmax-qmin)
	if scale < math.SmallestNonzeroFloat32 {
		return 1, 0, qmin, qmax
	}
	return scale, int64(math.RoundToEven(float64(float32(qmin) - lo/scale))), qmin, qmax
}

// quantize stores the float32 values of a constant quantised: per
// column of a [K, N] matrix when perColumn, else per tensor. It returns
// the quantised tensor, its scales and zero points, and the dequantised
// values.
func (q dynamicQuantizer) quantize(name string, x *compiler.Tensor, signed, perColumn bool) (data, scale, zp *onnxpb.TensorProto, deq []float32) {
	cols := 1
	if perColumn {
		cols = int(x.Shape[len(x.Shape)-1])
	}
	elem := onnxpb.TensorProto_UINT8
	if signed {
		elem = onnxpb.TensorProto_INT8
	}
	codes := make([]byte, len(x.F32))
	deq = make([]float32, len(x.F32))
	var scales []float32
	var zps []byte
	for c := range cols {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for i := c; i < len(x.F32); i += cols {
			lo, hi = min(lo, x.F32[i]), max(hi, x.F32[i])
		}
		s, z, qmin, qmax := q.quantParams(lo, hi, signed)
		for i := c; i < len(x.F32); i += cols {
			v := min(max(int64(math.RoundToEven(float64(x.F32[i]/s)))+z, qmin), qmax)
			codes[i] = byte(v)
			deq[i] = float32(v-z) * s
		}
		scales, zps = append(scales, s), append(zps, byte(z))
	}
	var pdims []int64
	if perColumn {
		pdims = []int64{int64(cols)}
	}
	data = &onnxpb.TensorProto{Name: proto.String(name + "_quantized"), DataType: proto.Int32(int32(elem)), Dims: x.Shape, RawData: codes}
	scale = f32Raw(name+"_scale", pdims, scales...)
	zp = &onnxpb.TensorProto{Name: proto.String(name + "_zero_point"), DataType: proto.Int32(int32(elem)), Dims: pdims, RawData: zps}
	return data, scale, zp, deq
}

// convert returns the quantised (or twin) copy of m.
func (q dynamicQuantizer) convert(t testing.TB, m *onnxpb.ModelProto) *onnxpb.ModelProto {
	t.Helper()
	m = proto.Clone(m).(*onnxpb.ModelProto)
	gp := m.Graph
	inits, constant := floatInitializers(t, gp)
	dequantized := func(name string, dims []int64, deq []float32) {
		*inits[name] = *f32Raw(name, dims, deq...)
	}
	var nodes []*onnxpb.NodeProto
	dynamic := map[string]bool{} // activations with a DynamicQuantizeLinear already
	quantizeActivation := func(x string) {
		if !dynamic[x] {
			dynamic[x] = true
			nodes = append(nodes, node("DynamicQuantizeLinear", x+"_QuantizeLinear", []string{x}, []string{x + "_quantized", x + "_scale", x + "_zero_point"}))
		}
	}
	for _, np := range gp.Node {
		switch np.GetOpType() {
		case "MatMul":
			a, b := np.Input[0], np.Input[1]
			w := constant(b)
			if (w == nil || len(w.Shape) != 2) && !(q.allMatMuls && constant(a) == nil && w == nil) {
				break
			}
			if w != nil && q.twin {
				_, _, _, deq := q.quantize(b, w, q.signed, q.perChannel)
				dequantized(b, w.Shape, deq)
				break
			}
			if q.twin {
				break // two activations: their quantisation is what sqc drops
			}
			quantizeActivation(a)
			bq, bScale, bZP := b+"_quantized", b+"_scale", b+"_zero_point"
			if w != nil {
				data, scale, zp, _ := q.quantize(b, w, q.signed, q.perChannel)
				gp.Initializer = append(gp.Initializer, data, scale, zp)
			} else {
				quantizeActivation(b)
			}
			out, name := np.Output[0], np.GetName()
			nodes = append(nodes,
				node("MatMulInteger", name+"_quant", []string{a + "_quantized", bq, a + "_zero_point", bZP}, []string{out + "_output_quantized"}),
				node("Cast", out+"_output_quantized_cast", []string{out + "_output_quantized"}, []string{out + "_output_quantized_cast_output"}, intAttr("to", int64(onnxpb.TensorProto_FLOAT))),
				node("Mul", name+"_quant_scales_mul", []string{a + "_scale", bScale}, []string{name + "_quant_scales_mul:0"}),
				node("Mul", name+"_quant_output_scale_mul", []string{out + "_output_quantized_cast_output", name + "_quant_scales_mul:0"}, []string{out}))
			continue
		case "Gather":
			table := constant(np.Input[0])
			if table == nil || len(table.Shape) != 2 {
				break
			}
			data, scale, zp, deq := q.quantize(np.Input[0], table, false, false)
			if q.twin {
				dequantized(np.Input[0], table.Shape, deq)
				break
			}
			gp.Initializer = append(gp.Initializer, data, scale, zp)
			out := np.Output[0]
			np.Input[0], np.Output[0] = data.GetName(), out+"_quantized"
			nodes = append(nodes, np, node("DequantizeLinear", out+"_DequantizeLinear", []string{out + "_quantized", scale.GetName(), zp.GetName()}, []string{out}))
			continue
		}
		nodes = append(nodes, np)
	}
	gp.Node = nodes
	if !q.twin {
		dropUnusedInitializers(gp)
	}
	return m
}

// floatInitializers indexes gp's initializers by name, with a decoder of
// the float32 ones (nil for any other).
func floatInitializers(t testing.TB, gp *onnxpb.GraphProto) (map[string]*onnxpb.TensorProto, func(string) *compiler.Tensor) {
	inits := map[string]*onnxpb.TensorProto{}
	for _, tp := range gp.Initializer {
		inits[tp.GetName()] = tp
	}
	return inits, func(name string) *compiler.Tensor {
		tp := inits[name]
		if tp == nil || tp.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
			return nil
		}
		_, x, err := DecodeTensor(marshal(t, tp))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
}

// dropUnusedInitializers removes the initializers no node reads (the
// float weights quantised ones replace) and the value_info, whose types
// the quantised values no longer have (ONNX Runtime infers them).
func dropUnusedInitializers(gp *onnxpb.GraphProto) {
	used := map[string]bool{}
	for _, np := range gp.Node {
		for _, in := range np.Input {
			used[in] = true
		}
	}
	kept := gp.Initializer[:0]
	for _, tp := range gp.Initializer {
		if used[tp.GetName()] {
			kept = append(kept, tp)
		}
	}
	gp.Initializer, gp.ValueInfo = kept, nil
}

// qdqQuantizer quantises a float32 model as ONNX Runtime's quantize_static
// does in its QDQ format (optimum's static quantisation):
//   - each float activation read by a MatMul or Transpose passes
//     through QuantizeLinear and DequantizeLinear (one pair per tensor,
//     shared by its readers), u8 with the scale and zero point of its
//     range over calibration batches;
//   - each MatMul's constant B and each Gather's constant table is stored
//     quantised (s8 symmetric per column, u8 per tensor) and read through
//     DequantizeLinear.
//
// With twin set it writes the float32 model with those weights and tables
// replaced by their dequantised values, and no activation rounding.
type qdqQuantizer struct {
	twin bool
}

// qdqActivationOps are the ops whose float activation inputs get a pair.
// Not Softmax: its input holds the mask's float32 lowest, whose range no
// 8-bit code spans (the scores would all round to one code).
var qdqActivationOps = map[string]bool{"MatMul": true, "Transpose": true}

// convert returns the QDQ (or twin) copy of m, calibrated on ref's first
// 32 sentences.
func (q qdqQuantizer) convert(t testing.TB, m *onnxpb.ModelProto, ref *testmodels.Reference) *onnxpb.ModelProto {
	t.Helper()
	m = proto.Clone(m).(*onnxpb.ModelProto)
	gp := m.Graph
	inits, constant := floatInitializers(t, gp)
	ranges := q.calibrate(t, m, ref, func(name string) bool { return inits[name] == nil })
	weights := dynamicQuantizer{signed: true, perChannel: true}
	var nodes []*onnxpb.NodeProto
	paired := map[string]bool{}
	dequantizeWeight := func(name string, x *compiler.Tensor, signed, perColumn bool) string {
		data, scale, zp, deq := weights.quantize(name, x, signed, perColumn)
		if q.twin {
			*inits[name] = *f32Raw(name, x.Shape, deq...)
			return name
		}
		gp.Initializer = append(gp.Initializer, data, scale, zp)
		out := name + "_DequantizeLinear_Output"
		nodes = append(nodes, node("DequantizeLinear", name+"_DequantizeLinear", []string{data.GetName(), scale.GetName(), zp.GetName()}, []string{out}, intAttr("axis", 1)))
		return out
	}
	for _, np := range gp.Node {
		switch op := np.GetOpType(); {
		case op == "Gather":
			if table := constant(np.Input[0]); table != nil && len(table.Shape) == 2 {
				np.Input[0] = dequantizeWeight(np.Input[0], table, false, false)
			}
		case qdqActivationOps[op]:
			for i, in := range np.Input {
				if w := constant(in); w != nil && op == "MatMul" && i == 1 && len(w.Shape) == 2 {
					np.Input[i] = dequantizeWeight(in, w, true, true)
					continue
				}
				r, ok := ranges[in]
				if !ok || q.twin {
					continue
				}
				if !paired[in] {
					paired[in] = true
					s, z, _, _ := weights.quantParams(r[0], r[1], false)
					gp.Initializer = append(gp.Initializer, f32Raw(in+"_scale", nil, s),
						&onnxpb.TensorProto{Name: proto.String(in + "_zero_point"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), RawData: []byte{byte(z)}})
					nodes = append(nodes,
						node("QuantizeLinear", in+"_QuantizeLinear", []string{in, in + "_scale", in + "_zero_point"}, []string{in + "_QuantizeLinear_Output"}),
						node("DequantizeLinear", in+"_DequantizeLinear", []string{in + "_QuantizeLinear_Output", in + "_scale", in + "_zero_point"}, []string{in + "_DequantizeLinear_Output"}))
				}
				np.Input[i] = in + "_DequantizeLinear_Output"
			}
		}
		nodes = append(nodes, np)
	}
	gp.Node = nodes
	if !q.twin {
		dropUnusedInitializers(gp)
	}
	return m
}

// calibrate returns the [min, max] over ref's first 32 sentences (in
// batches of 8) of every float activation a QDQ pair would go on.
func (q qdqQuantizer) calibrate(t testing.TB, m *onnxpb.ModelProto, ref *testmodels.Reference, activation func(string) bool) map[string][2]float32 {
	t.Helper()
	g, err := Decode(marshal(t, m), "calibration.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if !qdqActivationOps[n.Op] {
			continue
		}
		for _, in := range n.Inputs {
			if v, ok := g.ValueInfo(in); ok && v.DType == compiler.Float32 && activation(in) && !seen[in] {
				seen[in] = true
				g.Outputs = append(g.Outputs, &compiler.Value{Name: in, DType: compiler.Float32})
			}
		}
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[string][2]float32{}
	for at := 0; at < 32; at += 8 {
		in, err := testmodels.Inputs(g, ref.Examples[at:at+8])
		if err != nil {
			t.Fatal(err)
		}
		out, err := it.Run(in, &interp.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		for name := range seen {
			r, ok := ranges[name]
			if !ok {
				r = [2]float32{float32(math.Inf(1)), float32(math.Inf(-1))}
			}
			for _, v := range out[name].F32 {
				r[0], r[1] = min(r[0], v), max(r[1], v)
			}
			ranges[name] = r
		}
	}
	return ranges
}

// quantizedForm is one quantised test model: dynamically (q), or in the
// static QDQ format (qdq).
type quantizedForm struct {
	name, model string
	q           dynamicQuantizer
	qdq         bool
}

var quantizedForms = []quantizedForm{
	// transformers.js' model_quantized.onnx: u8 weights per tensor.
	{name: "bert-u8-per-tensor", model: "sst2-bert-mini", q: dynamicQuantizer{}},
	// optimum's --avx512_vnni-style dynamic quantisation: s8 per channel;
	// here also over the reduced range and with the attention's MatMuls.
	{name: "bert-s8-per-channel-all-matmuls", model: "sst2-bert-mini", q: dynamicQuantizer{signed: true, perChannel: true, reduceRange: true, allMatMuls: true}},
	{name: "distilbert-u8-per-channel", model: "sst2-distilbert-tiny", q: dynamicQuantizer{perChannel: true}},
	// optimum's static quantisation, QDQ format.
	{name: "bert-qdq-static", model: "sst2-bert-mini", qdq: true},
}

// quantizedModels returns the form's model directory, its quantised file
// and its float32 twin.
func quantizedModels(t *testing.T, f quantizedForm) (dir string, quantized, twin []byte) {
	t.Helper()
	dir = testmodels.ModelDir(t, f.model)
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if f.qdq {
		ref, err := testmodels.LoadReference(dir)
		if err != nil {
			t.Fatal(err)
		}
		return dir, marshal(t, qdqQuantizer{}.convert(t, &m, ref)), marshal(t, qdqQuantizer{twin: true}.convert(t, &m, ref))
	}
	tw := f.q
	tw.twin = true
	return dir, marshal(t, f.q.convert(t, &m)), marshal(t, tw.convert(t, &m))
}

// TestQuantizedBERT: the shared models quantised as ONNX Runtime's
// quantize_dynamic and quantize_static (QDQ) quantise them load (their
// integer ops are in sqc's op table and run in its interpreter), and
// sqc's passes make of each the
// float model it approximates: the same logits, bit for bit, as its
// float32 twin (the model with the file's dequantised weights), the same
// canonical ops as the float32 TorchScript export, and
// Meta["dequantized"] saying what was rewritten. Against PyTorch's
// float32 logits the file as ONNX Runtime means it (activations
// quantised too) and sqc's float reading of it differ by the weights'
// (and activations') 8 bits. SQC_QUANTIZED_MODEL_OUT=dir saves each form.
func TestQuantizedBERT(t *testing.T) {
	torchOps := torchCanonicalOps{}
	for _, f := range quantizedForms {
		t.Run(f.name, func(t *testing.T) {
			dir, quantized, twin := quantizedModels(t, f)
			g, gTwin, ref := decodeWithTwin(t, dir, f.name, quantized, twin)
			const sentences = 32
			asQuantized := interpLogits(t, g, ref, sentences)
			for _, c := range []*compiler.Graph{g, gTwin} {
				if err := passes.RunPipeline(c, passes.Options{CheckIR: true}); err != nil {
					t.Fatal(err)
				}
			}
			if d := g.Meta["dequantized"]; !strings.Contains(d, "MatMulInteger") && !strings.Contains(d, "QuantizeLinear pairs") {
				t.Errorf("Meta[dequantized] = %q", d)
			}
			for _, n := range g.Nodes {
				switch n.Op {
				case "DynamicQuantizeLinear", "MatMulInteger", "QuantizeLinear", "DequantizeLinear":
					t.Errorf("%s %s left after the passes", n.Op, n.Name)
				}
			}
			got, want := interpLogits(t, g, ref, sentences), interpLogits(t, gTwin, ref, sentences)
			if d := testmodels.MaxAbsDiff(got, want); d != 0 {
				t.Errorf("dequantised file vs its float32 twin: max |logit diff| = %.3g, want 0", d)
			}
			dq, df := testmodels.MaxAbsDiff(asQuantized, ref.Logits[:sentences]), testmodels.MaxAbsDiff(got, ref.Logits[:sentences])
			t.Logf("max |logit - PyTorch float32| over %d sentences: %.3g as quantised (ONNX's meaning), %.3g dequantised (sqc's FP32 reading)", sentences, dq, df)
			if !(df <= quantizedWeightsTolerance) || !(dq <= quantizedWeightsTolerance) {
				t.Errorf("max |logit - PyTorch float32| = %.3g quantised, %.3g dequantised, want <= %g", dq, df, quantizedWeightsTolerance)
			}
			if ops, want := opCounts(g), torchOps.of(t, dir); !maps.Equal(ops, want) {
				t.Errorf("canonical ops differ from the float32 TorchScript export's:\nquantised %v\nfloat32 %v", ops, want)
			}
		})
	}
}

// decodeWithTwin decodes a quantised test file (saving it in
// $SQC_QUANTIZED_MODEL_OUT where set) and its float32 twin, and loads the
// shared model's reference.
func decodeWithTwin(t *testing.T, dir, name string, file, twin []byte) (g, gTwin *compiler.Graph, ref *testmodels.Reference) {
	t.Helper()
	if out := os.Getenv("SQC_QUANTIZED_MODEL_OUT"); out != "" {
		if err := os.WriteFile(filepath.Join(out, name+".onnx"), file, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Decode(file, name+".onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	if gTwin, err = Decode(twin, name+"-twin.onnx"); err != nil {
		t.Fatal(err)
	}
	if ref, err = testmodels.LoadReference(dir); err != nil {
		t.Fatal(err)
	}
	return g, gTwin, ref
}

// quantizedWeightsTolerance is how far a quantised form's logits (of
// magnitude ~1-5) may be from PyTorch's float32 ones: 8-bit weights (and
// in ONNX's meaning 8-bit activations) move them by up to ~0.3 here.
const quantizedWeightsTolerance = 0.5

// TestQuantizedBERTInONNXRuntime: ONNX Runtime runs every
// quantised form to the logits sqc's interpreter gives the file as ONNX
// defines it (its integer ops included), or the test models would not be
// the files ONNX Runtime's quantiser writes.
func TestQuantizedBERTInONNXRuntime(t *testing.T) {
	for _, f := range quantizedForms {
		t.Run(f.name, func(t *testing.T) {
			dir, quantized, _ := quantizedModels(t, f)
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			g, err := Decode(quantized, f.name+".onnx")
			if err != nil {
				t.Fatal(err)
			}
			wantORTAgrees(t, ref, quantized, g, quantizedORTTolerance)
		})
	}
}

// wantORTAgrees runs the model data in ONNX Runtime (ortLogits: one batch
// of 32) and g, data as sqc reads it, in the interpreter on the same
// batch (a dynamic quantisation's range is the whole batch's, padding
// included), and wants their logits within tol.
func wantORTAgrees(t *testing.T, ref *testmodels.Reference, data []byte, g *compiler.Graph, tol float64) {
	t.Helper()
	ort := ortLogits(t, ref, data)
	d := testmodels.MaxAbsDiff(ort, interpLogitsBatched(t, g, ref, len(ort), len(ort)))
	t.Logf("ONNX Runtime vs sqc's interpreter: max |logit diff| %.3g", d)
	if !(d <= tol) {
		t.Errorf("ONNX Runtime vs sqc's interpreter: max |logit diff| %.3g, want <= %g", d, tol)
	}
}

// quantizedORTTolerance bounds ONNX Runtime's difference from the
// interpreter on the same quantised file: the same integer arithmetic,
// but float32 sums in another order elsewhere (LayerNorm, softmax), whose
// last-bit differences tip an activation's code by one where it lies on a
// rounding boundary (measured: 9.5e-7 DistilBERT, 4.9e-4 BERT, 2.0e-3
// with the attention's MatMuls quantised too, 2.7e-3 QDQ).
const quantizedORTTolerance = 5e-3

// TestQuantizedBERTOptimizedByONNXRuntime: the dynamically quantised forms
// as ONNX Runtime's optimizer saves them (a session's
// optimized_model_filepath: its quantised chains fused into
// DynamicQuantizeMatMul and MatMulIntegerToFloat, beside its BERT
// fusions) load, their fused ops written back as quantize_dynamic's
// chains, and the passes make of them the float model with the file's
// dequantised weights: the TorchScript export's canonical ops, its twin's
// logits bit for bit, and ONNX Runtime's logits on the optimised file as
// sqc's interpreter computes them.
func TestQuantizedBERTOptimizedByONNXRuntime(t *testing.T) {
	torchOps := torchCanonicalOps{}
	for _, f := range quantizedForms {
		if f.qdq {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			dir, quantized, twin := quantizedModels(t, f)
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "optimized.onnx")
			t.Setenv("SQC_ORT_OPTIMIZED_MODEL", path)
			ortLogits(t, ref, quantized) // skips without ONNX Runtime
			optimized, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("SQC_ORT_OPTIMIZED_MODEL", "")
			g, err := Decode(optimized, f.name+"-optimized.onnx")
			if err != nil {
				t.Fatal(err)
			}
			if e := g.Meta["expanded_com.microsoft"]; !strings.Contains(e, "DynamicQuantizeMatMul") || !strings.Contains(e, "MatMulIntegerToFloat") {
				t.Errorf("Meta[expanded_com.microsoft] = %q, want ONNX Runtime's quantised fusions", e)
			}
			wantORTAgrees(t, ref, optimized, g, quantizedORTTolerance)
			gTwin, err := Decode(twin, f.name+"-twin.onnx")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []*compiler.Graph{g, gTwin} {
				if err := passes.RunPipeline(c, passes.Options{CheckIR: true}); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(g.Meta["dequantized"], "MatMulInteger") {
				t.Errorf("Meta[dequantized] = %q", g.Meta["dequantized"])
			}
			const sentences = 32
			d := testmodels.MaxAbsDiff(interpLogits(t, g, ref, sentences), interpLogits(t, gTwin, ref, sentences))
			t.Logf("optimised file vs its float32 twin, after the passes: max |logit diff| %.3g", d)
			if d != 0 {
				t.Errorf("optimised file vs its float32 twin: max |logit diff| %.3g, want 0", d)
			}
			if ops, want := opCounts(g), torchOps.of(t, dir); !maps.Equal(ops, want) {
				t.Errorf("canonical ops differ from the float32 TorchScript export's:\noptimised %v\nfloat32 %v", ops, want)
			}
		})
	}
}
