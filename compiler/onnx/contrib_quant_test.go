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
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// nbitsQuantizer replaces every MatMul with a constant 2-D B [K, N] by
// ONNX Runtime's MatMulNBits, as its MatMul4BitsQuantizer does
// (transformers.js' model_q4.onnx): B stored per column in blocks of
// blockSize bits-wide codes, lowest bits first, with a float scale per
// block and, unless symmetric, a packed zero point per block (symmetric:
// codes q + 2^(bits-1) of q in [-2^(bits-1), 2^(bits-1)-1], no zero points).
// With twin set it writes the float32 model with each such B replaced by
// its dequantised values.
type nbitsQuantizer struct {
	bits, blockSize int64
	symmetric, twin bool
	// accuracyLevel is the node's accuracy_level: 0 has ONNX Runtime
	// multiply in float32, 4 by its own 8-bit rounding of the activations.
	accuracyLevel int64
}

// quantize returns B's codes, scales, packed zero points (nil when
// symmetric) and dequantised values.
func (q nbitsQuantizer) quantize(w *compiler.Tensor) (codes []byte, scales []float32, zps []byte, deq []float32) {
	k, cols := w.Shape[0], w.Shape[1]
	blocks := (k + q.blockSize - 1) / q.blockSize
	levels := int64(1)<<q.bits - 1
	blob := q.blockSize * q.bits / 8
	codes = make([]byte, cols*blocks*blob)
	zpRow := (blocks*q.bits + 7) / 8
	if !q.symmetric {
		zps = make([]byte, cols*zpRow)
	}
	deq = make([]float32, len(w.F32))
	put := func(p []byte, i, v int64) {
		if q.bits == 8 {
			p[i] = byte(v)
			return
		}
		p[i/2] |= byte(v << (4 * (i % 2)))
	}
	for c := range cols {
		for b := range blocks {
			rows := min(q.blockSize, k-b*q.blockSize)
			lo, hi := float32(0), float32(0)
			for i := range rows {
				v := w.F32[(b*q.blockSize+i)*cols+c]
				lo, hi = min(lo, v), max(hi, v)
			}
			var scale float32
			zp := int64(1) << (q.bits - 1)
			if q.symmetric {
				scale = max(-lo, hi) / float32(zp)
			} else {
				scale = (hi - lo) / float32(levels)
			}
			if scale == 0 {
				scale = 1
			}
			if !q.symmetric {
				zp = min(max(int64(math.RoundToEven(float64(-lo/scale))), 0), levels)
				put(zps[c*zpRow:], b, zp)
			}
			for i := range rows {
				at := (b*q.blockSize+i)*cols + c
				v := min(max(int64(math.RoundToEven(float64(w.F32[at]/scale)))+zp, 0), levels)
				put(codes[(c*blocks+b)*blob:], i, v)
				deq[at] = float32(v-zp) * scale
			}
			scales = append(scales, scale)
		}
	}
	return codes, scales, zps, deq
}

// convert returns the quantised (or twin) copy of m.
func (q nbitsQuantizer) convert(t testing.TB, m *onnxpb.ModelProto) *onnxpb.ModelProto {
	t.Helper()
	m = proto.Clone(m).(*onnxpb.ModelProto)
	gp := m.Graph
	inits, _ := floatInitializers(t, gp)
	for _, np := range gp.Node {
		tp := inits[input(&compiler.Node{Inputs: np.Input}, 1)]
		if np.GetOpType() != "MatMul" || tp == nil || tp.GetDataType() != int32(onnxpb.TensorProto_FLOAT) || len(tp.Dims) != 2 {
			continue
		}
		_, w, err := DecodeTensor(marshal(t, tp))
		if err != nil {
			t.Fatal(err)
		}
		codes, scales, zps, deq := q.quantize(w)
		name := tp.GetName()
		if q.twin {
			*tp = *f32Raw(name, w.Shape, deq...)
			continue
		}
		k, cols := w.Shape[0], w.Shape[1]
		blocks := (k + q.blockSize - 1) / q.blockSize
		gp.Initializer = append(gp.Initializer,
			&onnxpb.TensorProto{Name: proto.String(name + "_Q4"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), Dims: []int64{cols, blocks, q.blockSize * q.bits / 8}, RawData: codes},
			f32Raw(name+"_scales", []int64{cols * blocks}, scales...))
		in := []string{np.Input[0], name + "_Q4", name + "_scales"}
		if zps != nil {
			gp.Initializer = append(gp.Initializer, &onnxpb.TensorProto{Name: proto.String(name + "_zero_points"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)),
				Dims: []int64{int64(len(zps))}, RawData: zps})
			in = append(in, name+"_zero_points")
		}
		np.OpType, np.Domain, np.Input = proto.String("MatMulNBits"), proto.String(contribDomain), in
		np.Attribute = []*onnxpb.AttributeProto{intAttr("K", k), intAttr("N", cols), intAttr("bits", q.bits), intAttr("block_size", q.blockSize), intAttr("accuracy_level", q.accuracyLevel)}
	}
	if !q.twin {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(contribDomain), Version: proto.Int64(1)})
		dropUnusedInitializers(gp)
	}
	return m
}

// blockForm is one block-quantised test model: the shared BERT-mini's
// Linears' weights in a com.microsoft op (node), written by convert
// (twin: the float32 model with the dequantised weights instead), and how
// far ONNX Runtime may be from sqc on it.
type blockForm struct {
	name, node   string
	convert      func(t testing.TB, m *onnxpb.ModelProto, twin bool) *onnxpb.ModelProto
	ortTolerance float64
}

// nbitsForm is a MatMulNBits form of q.
func nbitsForm(name string, q nbitsQuantizer) blockForm {
	tol := nbitsORTTolerance
	if q.accuracyLevel != 0 {
		tol = nbitsORTInt8Tolerance
	}
	return blockForm{name: name, node: "MatMulNBits", ortTolerance: tol,
		convert: func(t testing.TB, m *onnxpb.ModelProto, twin bool) *onnxpb.ModelProto {
			q.twin = twin
			return q.convert(t, m)
		}}
}

// bnb4Form is a MatMulBnb4 form of q.
func bnb4Form(name string, q bnb4Quantizer) blockForm {
	return blockForm{name: name, node: "MatMulBnb4", ortTolerance: nbitsORTTolerance,
		convert: func(t testing.TB, m *onnxpb.ModelProto, twin bool) *onnxpb.ModelProto {
			q.twin = twin
			return q.convert(t, m)
		}}
}

var blockForms = []blockForm{
	nbitsForm("q4-block32-zero-points", nbitsQuantizer{bits: 4, blockSize: 32}),
	nbitsForm("q4-block16-symmetric", nbitsQuantizer{bits: 4, blockSize: 16, symmetric: true}),
	nbitsForm("q8-block64-zero-points", nbitsQuantizer{bits: 8, blockSize: 64}),
	nbitsForm("q4-block32-accuracy-level-4", nbitsQuantizer{bits: 4, blockSize: 32, accuracyLevel: 4}),
	bnb4Form("bnb4-nf4-block64", bnb4Quantizer{quantType: 1, blockSize: 64}),
	bnb4Form("bnb4-fp4-block32", bnb4Quantizer{quantType: 0, blockSize: 32}),
}

// blockModels returns the shared BERT-mini's directory, its form f and
// its twin.
func blockModels(t *testing.T, f blockForm) (dir string, quantized, twin []byte) {
	t.Helper()
	dir = testmodels.ModelDir(t, "sst2-bert-mini")
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return dir, marshal(t, f.convert(t, &m, false)), marshal(t, f.convert(t, &m, true))
}

// TestBlockQuantizedBERT: the shared BERT-mini with its Linears' weights
// in MatMulNBits (4-bit blocks with and without zero points, 8-bit) or
// MatMulBnb4 (NF4, FP4) loads as its float32 twin with the dequantised
// weights, bit for bit in the interpreter, with the float32 export's
// canonical ops, and Meta[expanded_com.microsoft] counting the nodes.
// SQC_QUANTIZED_MODEL_OUT=dir saves each form.
func TestBlockQuantizedBERT(t *testing.T) {
	torchOps := torchCanonicalOps{}
	for _, f := range blockForms {
		t.Run(f.name, func(t *testing.T) {
			dir, quantized, twin := blockModels(t, f)
			g, gTwin, ref := decodeWithTwin(t, dir, f.name, quantized, twin)
			if d := g.Meta["expanded_com.microsoft"]; !strings.HasPrefix(d, f.node+" ") {
				t.Errorf("Meta[expanded_com.microsoft] = %q", d)
			}
			const sentences = 32
			got, want := interpLogits(t, g, ref, sentences), interpLogits(t, gTwin, ref, sentences)
			if d := testmodels.MaxAbsDiff(got, want); d != 0 {
				t.Errorf("%s file vs its float32 twin: max |logit diff| = %.3g, want 0", f.node, d)
			}
			d := testmodels.MaxAbsDiff(got, ref.Logits[:sentences])
			t.Logf("max |logit - PyTorch float32| = %.3g over %d sentences", d, sentences)
			if !(d <= quantizedWeightsTolerance) {
				t.Errorf("max |logit - PyTorch float32| = %.3g, want <= %g", d, quantizedWeightsTolerance)
			}
			if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
				t.Fatal(err)
			}
			if ops, want := opCounts(g), torchOps.of(t, dir); !maps.Equal(ops, want) {
				t.Errorf("canonical ops differ from the float32 TorchScript export's:\n%s %v\nfloat32 %v", f.node, ops, want)
			}
		})
	}
}

// TestBlockQuantizedBERTInONNXRuntime: ONNX Runtime runs every
// block-quantised form to the logits sqc gives it, or the files would not
// mean what sqc reads them as.
func TestBlockQuantizedBERTInONNXRuntime(t *testing.T) {
	for _, f := range blockForms {
		t.Run(f.name, func(t *testing.T) {
			dir, quantized, _ := blockModels(t, f)
			ref, err := testmodels.LoadReference(dir)
			if err != nil {
				t.Fatal(err)
			}
			g, err := Decode(quantized, f.name+".onnx")
			if err != nil {
				t.Fatal(err)
			}
			wantORTAgrees(t, ref, quantized, g, f.ortTolerance)
		})
	}
}

// How far ONNX Runtime's logits on a MatMulNBits or MatMulBnb4 file may
// be from sqc's: with MatMulNBits' accuracy_level 0 and MatMulBnb4 the
// same dequantised weights multiplied in float32, sums in another order
// (measured: at most 5.4e-7); with accuracy_level 4,
// multiplied by ONNX Runtime's own 8-bit rounding of the activations
// (measured: 3.9e-3), which sqc replaces by its own quantisation.
const (
	nbitsORTTolerance     = 1e-5
	nbitsORTInt8Tolerance = 0.05
)

// TestMatMulNBitsFloat16: transformers.js' model_q4f16.onnx is a float16
// model (onnxconverter-common's conversion) whose Linears are MatMulNBits
// with float16 scales: it loads widened, expanded, and runs to PyTorch's
// float32 logits within the 4-bit weights' error, as ONNX Runtime runs it
// (in float16 where it has kernels).
func TestMatMulNBitsFloat16(t *testing.T) {
	dir, q4, _ := blockModels(t, blockForms[0])
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(q4, &m); err != nil {
		t.Fatal(err)
	}
	q4f16 := marshal(t, onnxconverterCommon.convert(t, &m))
	g, err := Decode(q4f16, "model_q4f16.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g.Meta["expanded_com.microsoft"], "MatMulNBits ") || !strings.HasPrefix(g.Meta["widened_to_float32"], "float16: ") {
		t.Errorf("Meta: expanded %q, widened %q", g.Meta["expanded_com.microsoft"], g.Meta["widened_to_float32"])
	}
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sentences = 32
	d := testmodels.MaxAbsDiff(interpLogits(t, g, ref, sentences), ref.Logits[:sentences])
	t.Logf("max |logit - PyTorch float32| = %.3g over %d sentences (4-bit weights, float16 values)", d, sentences)
	if !(d <= quantizedWeightsTolerance) {
		t.Errorf("max |logit - PyTorch float32| = %.3g, want <= %g", d, quantizedWeightsTolerance)
	}
	if os.Getenv("SQC_ORT_NODE_MODULES") == "" {
		return // ortLogits would skip the whole test
	}
	ort := ortLogits(t, ref, q4f16)
	if d := testmodels.MaxAbsDiff(ort, ref.Logits[:len(ort)]); !(d <= quantizedWeightsTolerance) {
		t.Errorf("ONNX Runtime: max |logit - PyTorch float32| = %.3g, want <= %g", d, quantizedWeightsTolerance)
	}
}

// bnb4Quantizer replaces every MatMul with a constant 2-D B [K, N] by ONNX
// Runtime's MatMulBnb4 (transformers.js' model_bnb4.onnx): Bᵀ [N, K]
// row-major in blocks of blockSize values, each stored as the 4-bit code
// of the FP4 (quantType 0) or NF4 (1) level nearest to it over the
// block's absmax, two codes per byte, the first in the high nibble. With
// twin set it writes the float32 model with each such B replaced by its
// dequantised values, level * absmax.
type bnb4Quantizer struct {
	quantType, blockSize int64
	twin                 bool
}

// convert returns the quantised (or twin) copy of m.
func (q bnb4Quantizer) convert(t testing.TB, m *onnxpb.ModelProto) *onnxpb.ModelProto {
	t.Helper()
	m = proto.Clone(m).(*onnxpb.ModelProto)
	gp := m.Graph
	inits, constant := floatInitializers(t, gp)
	levels := &bnb4Levels[q.quantType]
	for _, np := range gp.Node {
		if np.GetOpType() != "MatMul" || len(np.Input) != 2 {
			continue
		}
		w := constant(np.Input[1])
		if w == nil || len(w.Shape) != 2 {
			continue
		}
		k, cols := w.Shape[0], w.Shape[1]
		elems := k * cols
		codes := make([]byte, (elems+1)/2)
		absmax := make([]float32, (elems+q.blockSize-1)/q.blockSize)
		at := func(i int64) float32 { return w.F32[(i%k)*cols+i/k] } // Bᵀ[i/k, i%k]
		for i := range elems {
			absmax[i/q.blockSize] = max(absmax[i/q.blockSize], float32(math.Abs(float64(at(i)))))
		}
		deq := make([]float32, len(w.F32))
		for i := range elems {
			a := absmax[i/q.blockSize]
			var x float32
			if a != 0 {
				x = at(i) / a
			}
			best := 0
			for c, l := range levels {
				if math.Abs(float64(l-x)) < math.Abs(float64(levels[best]-x)) {
					best = c
				}
			}
			if i%2 == 0 {
				codes[i/2] |= byte(best) << 4
			} else {
				codes[i/2] |= byte(best)
			}
			deq[(i%k)*cols+i/k] = levels[best] * a
		}
		name := np.Input[1]
		if q.twin {
			*inits[name] = *f32Raw(name, w.Shape, deq...)
			continue
		}
		gp.Initializer = append(gp.Initializer,
			&onnxpb.TensorProto{Name: proto.String(name + "_bnb4"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT8)), Dims: []int64{int64(len(codes))}, RawData: codes},
			f32Raw(name+"_absmax", []int64{int64(len(absmax))}, absmax...))
		np.OpType, np.Domain, np.Input = proto.String("MatMulBnb4"), proto.String(contribDomain), []string{np.Input[0], name + "_bnb4", name + "_absmax"}
		np.Attribute = []*onnxpb.AttributeProto{intAttr("K", k), intAttr("N", cols), intAttr("block_size", q.blockSize), intAttr("quant_type", q.quantType)}
	}
	if !q.twin {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(contribDomain), Version: proto.Int64(1)})
		dropUnusedInitializers(gp)
	}
	return m
}
