package onnx

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"
	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// TestDecodeHalfFloats: float16 and bfloat16 tensors decode to float32
// with exactly their values, from raw_data and from int32_data (one
// value's bits per entry, as ONNX stores them), subnormals and signed
// zero included; bad sizes and bits out of range are refused.
func TestDecodeHalfFloats(t *testing.T) {
	f16 := []uint16{0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x3555}
	want16 := []float32{1, -2, 65504, 0x1p-24, float32(math.Copysign(0, -1)), 0.33325195}
	raw := make([]byte, 2*len(f16))
	bits := make([]int32, len(f16))
	for i, b := range f16 {
		binary.LittleEndian.PutUint16(raw[2*i:], b)
		bits[i] = int32(b)
	}
	bf16 := []byte{0x80, 0x3F, 0xA0, 0xC0} // 1, -5
	for _, c := range []struct {
		name string
		tp   *onnxpb.TensorProto
		want []float32
	}{
		{"float16 raw", &onnxpb.TensorProto{DataType: proto.Int32(10), Dims: []int64{2, 3}, RawData: raw}, want16},
		{"float16 int32_data", &onnxpb.TensorProto{DataType: proto.Int32(10), Dims: []int64{2, 3}, Int32Data: bits}, want16},
		{"bfloat16 raw", &onnxpb.TensorProto{DataType: proto.Int32(16), Dims: []int64{2}, RawData: bf16}, []float32{1, -5}},
		{"bfloat16 int32_data", &onnxpb.TensorProto{DataType: proto.Int32(16), Dims: []int64{2}, Int32Data: []int32{0x3F80, 0xC0A0}}, []float32{1, -5}},
	} {
		_, got, err := DecodeTensor(marshal(t, c.tp))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.DType != compiler.Float32 || !slices.Equal(got.Shape, c.tp.Dims) || got.Check() != nil {
			t.Errorf("%s: %s%v, want f32%v", c.name, got.DType, got.Shape, c.tp.Dims)
		}
		for i, v := range got.F32 {
			if math.Float32bits(v) != math.Float32bits(c.want[i]) {
				t.Errorf("%s: element %d = %g, want %g", c.name, i, v, c.want[i])
			}
		}
	}
	for _, c := range []struct {
		name   string
		tp     *onnxpb.TensorProto
		target error
		says   string
	}{
		{"short raw", &onnxpb.TensorProto{DataType: proto.Int32(10), Dims: []int64{4}, RawData: raw[:6]}, compiler.ErrShapeMismatch, "needs 8"},
		{"short int32_data", &onnxpb.TensorProto{DataType: proto.Int32(16), Dims: []int64{3}, Int32Data: []int32{1}}, compiler.ErrShapeMismatch, "holds 1 values"},
		{"bits out of range", &onnxpb.TensorProto{DataType: proto.Int32(10), Dims: []int64{1}, Int32Data: []int32{70000}}, compiler.ErrMalformed, "65535"},
		{"float_data", &onnxpb.TensorProto{DataType: proto.Int32(10), Dims: []int64{1}, FloatData: []float32{1}}, compiler.ErrMalformed, "int32_data"},
	} {
		_, _, err := DecodeTensor(marshal(t, c.tp))
		if !errors.Is(err, c.target) || !errorNames(err, c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.target, c.says)
		}
	}
}

// TestFloat16TinyModel: tinyModel stored in float16 (as a converter writes
// it) loads as the float32 model with its values rounded: inputs, outputs
// and value_info float32, a Cast to float16 made one to float32, and
// Graph.Meta saying what was widened. A float16 infinity in an
// initializer is refused like a float32 one.
func TestFloat16TinyModel(t *testing.T) {
	m := tinyModel() // with z read through a Cast to float32
	m.Graph.Node = slices.Insert(m.Graph.Node, 1, node("Cast", "cast", []string{"z"}, []string{"z32"}, intAttr("to", 1)))
	m.Graph.Node[3].Input[0] = "z32"
	m = onnxconverterCommon.convert(t, m)
	g, err := Decode(marshal(t, m), "tiny_fp16.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Verify(); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Meta["widened_to_float32"], "float16: 3 tensors, 1 values, 2 Casts"; got != want {
		t.Errorf("Meta[widened_to_float32] = %q, want %q", got, want)
	}
	for _, v := range append(slices.Clone(g.Inputs), g.Outputs...) {
		if v.DType != compiler.Float32 {
			t.Errorf("%s is %s, want f32", v.Name, v.DType)
		}
	}
	for _, n := range g.Nodes {
		if n.Op == "Cast" && n.AttrInt("to", 0) != compiler.Float32.ONNX() {
			t.Errorf("Cast %s to %d, want 1 (float32)", n.Name, n.AttrInt("to", 0))
		}
	}
	if got := g.Initializers["B"].F32; !slices.Equal(got, []float32{0.25, -0.25}) {
		t.Errorf("B = %v", got)
	}

	// The same with W in an external data file, at half width.
	dir := t.TempDir()
	ext := proto.Clone(m).(*onnxpb.ModelProto)
	w := ext.Graph.Initializer[0]
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), w.RawData, 0o644); err != nil {
		t.Fatal(err)
	}
	w.RawData, w.DataLocation, w.ExternalData = nil, onnxpb.TensorProto_EXTERNAL.Enum(), kv("location", "w.bin", "length", "16")
	if err := os.WriteFile(filepath.Join(dir, "tiny.onnx"), marshal(t, ext), 0o644); err != nil {
		t.Fatal(err)
	}
	gExt, err := Load(filepath.Join(dir, "tiny.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := gExt.Initializers["W"].F32, g.Initializers["W"].F32; !slices.Equal(got, want) {
		t.Errorf("W from external data = %v, want %v", got, want)
	}

	m.Graph.Initializer[0].RawData[0], m.Graph.Initializer[0].RawData[1] = 0x00, 0x7C // +Inf
	if _, err := Decode(marshal(t, m), "inf_fp16.onnx"); !errors.Is(err, compiler.ErrNonFinite) {
		t.Errorf("float16 +Inf initializer: %v, want %v", err, compiler.ErrNonFinite)
	}
}

// float16Converter converts a float32 model as onnxconverter-common's
// convert_float_to_float16(model, keep_io_types=True) does, which is how
// transformers.js' model_fp16.onnx files are made, and ONNX Runtime's fork
// of it (optimum's fp16 exports) with its own clipping bounds:
//   - every float tensor (initializers, tensor attributes such as
//     Constant values) is stored as float16, after clipping magnitudes
//     below minPositive up to it and above maxFinite down to it (so
//     BERT's mask fill, float32's lowest, becomes -maxFinite, and
//     LayerNorm's 1e-12 epsilon minPositive);
//   - Casts to float32 become Casts to float16, float value_info float16;
//   - ops of its default block list (Range, CumSum, Min, Max, TopK, ...)
//     stay float32, with Casts to float32 on their float inputs and back
//     to float16 on their float outputs;
//   - float graph inputs and outputs stay float32, with a Cast after each
//     input and before each output (keep_io_types).
//
// twin writes instead what sqc should read the float16 file as: the same
// float32 model with its tensors' values rounded the same way.
type float16Converter struct {
	minPositive, maxFinite float32
	twin                   bool
}

var (
	onnxconverterCommon = float16Converter{minPositive: 1e-7, maxFinite: 1e4}
	onnxruntimeFloat16  = float16Converter{minPositive: 5.96e-8, maxFinite: 65504}
)

// float16BlockList is convert_float_to_float16's default op_block_list,
// less the ai.onnx.ml ops.
var float16BlockList = map[string]bool{"NonMaxSuppression": true, "TopK": true, "RoiAlign": true, "Resize": true,
	"Range": true, "CumSum": true, "Min": true, "Max": true, "Upsample": true}

// round is one float32 value as the converter stores it.
func (c float16Converter) round(v float32) float32 {
	switch {
	case 0 < v && v < c.minPositive:
		v = c.minPositive
	case -c.minPositive < v && v < 0:
		v = -c.minPositive
	case c.maxFinite < v && !math.IsInf(float64(v), 1):
		v = c.maxFinite
	case v < -c.maxFinite && !math.IsInf(float64(v), -1):
		v = -c.maxFinite
	}
	return float16.Fromfloat32(v).Float32()
}

// tensor converts a float tensor (raw_data or float_data), writing float16
// to raw_data or, when typed, int32_data.
func (c float16Converter) tensor(t testing.TB, tp *onnxpb.TensorProto, typed bool) {
	t.Helper()
	if tp.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
		return
	}
	_, ft, err := DecodeTensor(marshal(t, tp))
	if err != nil {
		t.Fatal(err)
	}
	tp.FloatData, tp.RawData, tp.Int32Data = nil, nil, nil
	if c.twin {
		tp.RawData = make([]byte, 4*len(ft.F32))
		for i, v := range ft.F32 {
			binary.LittleEndian.PutUint32(tp.RawData[4*i:], math.Float32bits(c.round(v)))
		}
		return
	}
	tp.DataType = proto.Int32(int32(onnxpb.TensorProto_FLOAT16))
	for _, v := range ft.F32 {
		bits := float16.Fromfloat32(c.round(v)).Bits()
		if typed {
			tp.Int32Data = append(tp.Int32Data, int32(bits))
		} else {
			tp.RawData = binary.LittleEndian.AppendUint16(tp.RawData, bits)
		}
	}
}

// convert returns the converted copy of m.
func (c float16Converter) convert(t testing.TB, m *onnxpb.ModelProto) *onnxpb.ModelProto {
	t.Helper()
	g0, err := Decode(marshal(t, m), "float32.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := g0.InferShapes(); err != nil {
		t.Fatal(err)
	}
	isFloat := func(name string) bool {
		v, ok := g0.ValueInfo(name)
		return ok && v.DType == compiler.Float32
	}
	m = proto.Clone(m).(*onnxpb.ModelProto)
	gp := m.Graph
	for _, tp := range gp.Initializer {
		c.tensor(t, tp, false)
	}
	if c.twin {
		for _, np := range gp.Node {
			for _, ap := range np.Attribute {
				if ap.T != nil {
					c.tensor(t, ap.T, true)
				}
			}
		}
		return m
	}
	cast := func(in, out string, to onnxpb.TensorProto_DataType) *onnxpb.NodeProto {
		return node("Cast", out+"/cast", []string{in}, []string{out}, intAttr("to", int64(to)))
	}
	rename := func(from, to string) { // every reader of from reads to
		for _, np := range gp.Node {
			for i, in := range np.Input {
				if in == from {
					np.Input[i] = to
				}
			}
		}
	}
	var nodes []*onnxpb.NodeProto
	for _, in := range gp.Input {
		if in.GetType().GetTensorType().GetElemType() == int32(onnxpb.TensorProto_FLOAT) {
			rename(in.GetName(), in.GetName()+"_fp16")
			nodes = append(nodes, cast(in.GetName(), in.GetName()+"_fp16", onnxpb.TensorProto_FLOAT16))
		}
	}
	for _, np := range gp.Node {
		if float16BlockList[np.GetOpType()] {
			for i, in := range np.Input {
				if isFloat(in) {
					np.Input[i] = in + "_fp32"
					nodes = append(nodes, cast(in, np.Input[i], onnxpb.TensorProto_FLOAT))
				}
			}
			var after []*onnxpb.NodeProto
			for i, out := range np.Output {
				if isFloat(out) {
					np.Output[i] = out + "_fp32"
					after = append(after, cast(np.Output[i], out, onnxpb.TensorProto_FLOAT16))
				}
			}
			nodes = append(append(nodes, np), after...)
			continue
		}
		for _, ap := range np.Attribute {
			if ap.T != nil {
				c.tensor(t, ap.T, true)
			}
			if np.GetOpType() == "Cast" && ap.GetName() == "to" && ap.GetI() == int64(onnxpb.TensorProto_FLOAT) {
				ap.I = proto.Int64(int64(onnxpb.TensorProto_FLOAT16))
			}
		}
		nodes = append(nodes, np)
	}
	for _, out := range gp.Output {
		if out.GetType().GetTensorType().GetElemType() == int32(onnxpb.TensorProto_FLOAT) {
			name := out.GetName()
			for _, np := range nodes {
				for i, o := range np.Output {
					if o == name {
						np.Output[i] = name + "_fp16"
					}
				}
			}
			rename(name, name+"_fp16")
			nodes = append(nodes, cast(name+"_fp16", name, onnxpb.TensorProto_FLOAT))
		}
	}
	for _, vi := range gp.ValueInfo {
		if tt := vi.GetType().GetTensorType(); tt != nil && tt.GetElemType() == int32(onnxpb.TensorProto_FLOAT) {
			tt.ElemType = proto.Int32(int32(onnxpb.TensorProto_FLOAT16))
		}
	}
	gp.Node = nodes
	return m
}

// float16Form is one float16 test model: a float32 form of a shared
// model, and the converter.
type float16Form struct {
	name  string
	model string // shared model directory
	conv  float16Converter
	// write gives the float32 model; nil: the shared model.onnx (the
	// TorchScript export).
	write func(t *testing.T, cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto
}

var float16Forms = []float16Form{
	{name: "bert-torchscript-onnxconverter", model: "sst2-bert-mini", conv: onnxconverterCommon},
	{name: "bert-torchscript-onnxruntime", model: "sst2-bert-mini", conv: onnxruntimeFloat16},
	{name: "distilbert-torchscript-onnxconverter", model: "sst2-distilbert-tiny", conv: onnxconverterCommon},
	{name: "bert-contrib-onnxruntime", model: "sst2-bert-mini", conv: onnxruntimeFloat16, write: contribBERT},
	{name: "bert-dynamo-opset20-onnxconverter", model: "sst2-bert-mini", conv: onnxconverterCommon,
		write: func(t *testing.T, cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto {
			return dynamoBERT(t, cfg, st, dynamoForm{opset: 20, transformers: "5"})
		}},
}

// float16Models returns the form's model directory, its float16 file and
// its float32 twin.
func float16Models(t *testing.T, f float16Form) (dir string, fp16, twin []byte) {
	t.Helper()
	dir = testmodels.ModelDir(t, f.model)
	var m onnxpb.ModelProto
	if f.write == nil {
		data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
	} else {
		_, data := sharedBERT(t, f.model, func(cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto { return f.write(t, cfg, st) })
		if err := proto.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
	}
	twinConv := f.conv
	twinConv.twin = true
	return dir, marshal(t, f.conv.convert(t, &m)), marshal(t, twinConv.convert(t, &m))
}

// TestFloat16BERT: the shared models stored in float16, as transformers.js
// and optimum ship them, load widened to float32 and mean exactly their
// float32 twin (the same model with its values rounded as the converter
// rounds them): the same logits bit for bit in sqc's interpreter on
// padded batches, and the same canonical ops as the TorchScript export,
// so they compile to the same fused, padding-free INT8 program as a
// float32 file. Against PyTorch's float32 logits they differ only by the
// weights' rounding to float16. SQC_FLOAT16_MODEL_OUT=dir saves each form.
func TestFloat16BERT(t *testing.T) {
	torchOps := torchCanonicalOps{}
	for _, f := range float16Forms {
		t.Run(f.name, func(t *testing.T) {
			dir, fp16, twin := float16Models(t, f)
			if out := os.Getenv("SQC_FLOAT16_MODEL_OUT"); out != "" {
				if err := os.WriteFile(filepath.Join(out, f.name+".onnx"), fp16, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := Decode(fp16, f.name+".onnx")
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatal(err)
			}
			if w := g.Meta["widened_to_float32"]; !strings.HasPrefix(w, "float16: ") {
				t.Errorf("Meta[widened_to_float32] = %q", w)
			}
			gTwin, err := Decode(twin, f.name+"-twin.onnx")
			if err != nil {
				t.Fatal(err)
			}
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			const sentences = 32
			got, want := interpLogits(t, g, ref, sentences), interpLogits(t, gTwin, ref, sentences)
			if d := testmodels.MaxAbsDiff(got, want); d != 0 {
				t.Errorf("float16 file vs its float32 twin: max |logit diff| = %.3g, want 0", d)
			}
			d := testmodels.MaxAbsDiff(got, ref.Logits[:sentences])
			t.Logf("max |logit - PyTorch float32| = %.3g over %d padded sentences (float16 weights)", d, sentences)
			if !(d <= float16SQCTolerance) {
				t.Errorf("max |logit - PyTorch float32| = %.3g, want <= %g", d, float16SQCTolerance)
			}
			if ops, want := canonicalOps(t, g), torchOps.of(t, dir); !maps.Equal(ops, want) {
				t.Errorf("canonical ops differ from the float32 TorchScript export's:\nfloat16 %v\nfloat32 %v", ops, want)
			}
		})
	}
}

// How far the float16 forms' logits (of magnitude ~1-5) may be from
// PyTorch's float32 ones: in sqc, float32 arithmetic on the float16
// values (measured: at most 6.9e-4 over the forms), and in ONNX Runtime,
// which computes in float16 where it has float16 kernels (LayerNorm's
// mean and variance among them: at most 0.0142).
const (
	float16SQCTolerance = 2e-3
	float16ORTTolerance = 0.03
)

// TestFloat16BERTInONNXRuntime runs every float16 form in ONNX Runtime:
// its logits must be close to PyTorch's float32 ones, and to sqc's of the
// same file, or the test models would not be float16 models of the
// shared ones.
func TestFloat16BERTInONNXRuntime(t *testing.T) {
	for _, f := range float16Forms {
		t.Run(f.name, func(t *testing.T) {
			dir, fp16, _ := float16Models(t, f)
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			ort := ortLogits(t, ref, fp16)
			g, err := Decode(fp16, f.name+".onnx")
			if err != nil {
				t.Fatal(err)
			}
			sqc := interpLogits(t, g, ref, len(ort))
			dRef, dSQC := testmodels.MaxAbsDiff(ort, ref.Logits[:len(ort)]), testmodels.MaxAbsDiff(ort, sqc)
			t.Logf("ONNX Runtime on the float16 file: max |logit diff| %.3g to PyTorch float32, %.3g to sqc", dRef, dSQC)
			if !(dRef <= float16ORTTolerance) || !(dSQC <= float16ORTTolerance) {
				t.Errorf("ONNX Runtime: max |logit diff| %.3g to PyTorch, %.3g to sqc, want <= %g", dRef, dSQC, float16ORTTolerance)
			}
		})
	}
}
