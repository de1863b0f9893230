package onnx

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// dynamoForm picks what a dynamo export of BertForSequenceClassification
// holds: the opset (18: GELU written out; 20, torch 2.9's default: the
// Gelu op; 23: the Attention op too) and the transformers release whose
// code was traced.
type dynamoForm struct {
	opset int64
	// transformers is the release whose BERT code was traced:
	//   - "4.56" (4.48-4.56): BertSdpaSelfAttention, heads split by
	//     view(batch, -1, heads, head_size), no scale given to SDPA, the
	//     float mask of _expand_mask at [batch, 1, seq, keys], heads
	//     merged to (batch, seq, hidden);
	//   - "4.57": the attention interface, heads split by
	//     view(*input_shape, -1, head_size), the scale given, the float
	//     mask at [batch, 1, keys, keys] sliced to the key length in every
	//     layer, heads merged by reshape(*input_shape, -1);
	//   - "5": as 4.57 without the slice, and masking_utils'
	//     create_bidirectional_mask: a boolean mask from index
	//     arithmetic (sdpa_mask without vmap), which SDPA turns into the
	//     additive one (and guards its Softmax against NaN).
	transformers string
	// noTypeIDs leaves token_type_ids out of the inputs (as sentence
	// embedders are often exported): from 4.57 on, BertEmbeddings then
	// gathers its all-zero buffer at the position ids (GatherElements).
	noTypeIDs bool
	// eager is attn_implementation="eager" (transformers 5 only here):
	// eager_mask's Where(mask, 0, min) once, and per layer
	// MatMul(Q, Transpose<0,1,3,2>(K)) * scaling + mask, Softmax, · V.
	eager bool
	// distil writes sst2-distilbert-tiny, DistilBERT as transformers 5
	// codes it (the same attention and mask code; word + position
	// embeddings, pre_classifier + ReLU head), instead of sst2-bert-mini.
	distil bool
	// roberta writes the committed tiny RobertaForSequenceClassification
	// (testmodels.TinyRobertaCls: gelu_new, no token_type_ids input) as
	// transformers 5 codes it: position ids from the input ids
	// (create_position_ids_from_input_ids), type ids gathered from the
	// buffer at them, the classification head's dense + tanh + out_proj.
	roberta bool
}

func (f dynamoForm) String() string {
	s := fmt.Sprintf("opset%d-transformers%s", f.opset, f.transformers)
	if f.noTypeIDs {
		s += "-no-token-types"
	}
	if f.eager {
		s += "-eager"
	}
	if f.distil {
		s = "distilbert-" + s
	}
	if f.roberta {
		s = "roberta-" + s
	}
	return s
}

// dynamoWriter accumulates the nodes and initializers of a model as
// torch.onnx's dynamo exporter leaves them after its optimizer: constants
// lifted into initializers, values named val_N, shapes built from
// Shape(x, start, end) slices and constants by Concat.
type dynamoWriter struct {
	nodes []*onnxpb.NodeProto
	inits []*onnxpb.TensorProto
	info  []*onnxpb.ValueInfoProto
	next  int
}

func (w *dynamoWriter) op(op string, in []string, attrs ...*onnxpb.AttributeProto) string {
	w.next++
	out := fmt.Sprintf("val_%d", w.next)
	w.nodes = append(w.nodes, node(op, fmt.Sprintf("node_%s_%d", op, w.next), in, []string{out}, attrs...))
	return out
}

func (w *dynamoWriter) ints(v ...int64) string {
	w.next++
	name := fmt.Sprintf("val_%d", w.next)
	w.inits = append(w.inits, i64Typed(name, []int64{int64(len(v))}, v...))
	return name
}

// scalar is an i64 scalar initializer.
func (w *dynamoWriter) scalar(v int64) string {
	w.next++
	name := fmt.Sprintf("val_%d", w.next)
	w.inits = append(w.inits, i64Typed(name, nil, v))
	return name
}

func (w *dynamoWriter) float(v float32, dims ...int64) string {
	w.next++
	name := fmt.Sprintf("val_%d", w.next)
	w.inits = append(w.inits, f32Raw(name, dims, v))
	return name
}

// dim is x.size(i) as the exporter writes a symbolic size: a 1-element
// Shape slice.
func (w *dynamoWriter) dim(x string, i int64) string {
	return w.op("Shape", []string{x}, intAttr("start", i), intAttr("end", i+1))
}

// dynamoBERT writes sst2-bert-mini (config cfg, weights st) as
// torch.onnx.export(dynamo=True) writes transformers' BERT with SDPA
// attention, following onnxscript's torchlib (aten_linear, aten_gelu,
// aten_scaled_dot_product_attention's float-mask form, aten_layer_norm,
// aten_embedding, aten_slice) and torch's own opset-20 Gelu and opset-23
// Attention, after onnxscript's optimizer (pre-transposed MatMul weights,
// constants as initializers). No such file could be produced here (torch
// 1.13, no dynamo exporter), so this is that source read, not a recording.
func dynamoBERT(t *testing.T, cfg hf.Config, st *hf.Safetensors, form dynamoForm) *onnxpb.ModelProto {
	t.Helper()
	w := &dynamoWriter{}
	nm := bertNames
	switch {
	case form.distil:
		nm = distilBertNames
	case form.roberta:
		nm = robertaNames
	}
	weight := func(name string) *compiler.Tensor {
		x, err := st.Weight(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	param := func(name string) string {
		x := weight(name)
		w.inits = append(w.inits, f32Raw(name, x.Shape, x.F32...))
		return name
	}
	// The optimizer folds Transpose(weight) into a new [in, out] initializer.
	transposed := func(name string) string {
		x := weight(name)
		out, in := x.Shape[0], x.Shape[1]
		y := make([]float32, len(x.F32))
		for o := range out {
			for i := range in {
				y[i*out+o] = x.F32[o*in+i]
			}
		}
		w.next++
		v := fmt.Sprintf("val_%d", w.next)
		w.inits = append(w.inits, f32Raw(v, []int64{in, out}, y...))
		return v
	}
	linear := func(x, p string) string {
		return w.op("Add", []string{w.op("MatMul", []string{x, transposed(p + ".weight")}), param(p + ".bias")})
	}
	eps := floatAttr("epsilon", float32(cfg.LayerNormEps))
	layerNorm := func(x, p string) string {
		return w.op("LayerNormalization", []string{x, param(p + ".weight"), param(p + ".bias")}, intAttr("axis", -1), eps)
	}
	toFloat := intAttr("to", int64(onnxpb.TensorProto_FLOAT))
	toBool := intAttr("to", int64(onnxpb.TensorProto_BOOL))
	h, heads := int64(cfg.HiddenSize), int64(cfg.NumHeads)
	headSize := h / heads

	// Embeddings: (word + token type) + position, positions sliced from
	// the position_ids buffer.
	seq := w.dim("input_ids", 1)
	positionIDs := nm.embeddings + ".position_ids"
	ids := make([]int64, cfg.MaxPositions)
	for i := range ids {
		ids[i] = int64(i)
	}
	w.inits = append(w.inits, i64Typed(positionIDs, []int64{1, int64(cfg.MaxPositions)}, ids...))
	gather := func(table, ids string) string { return w.op("Gather", []string{param(table), ids}) }
	positions := w.op("Slice", []string{positionIDs, w.ints(0), seq, w.ints(1), w.ints(1)})
	if form.roberta {
		// mask = input_ids.ne(pad).int(); ((cumsum(mask, 1).type_as(mask)
		// + 0) * mask).long() + pad, as torchlib writes it (its CumSum keeps
		// int32; the same-type Cast and the + 0 are optimised away).
		pad := w.scalar(int64(cfg.PadTokenID))
		notPad := w.op("Cast", []string{w.op("Not", []string{w.op("Equal", []string{"input_ids", pad})})}, intAttr("to", int64(onnxpb.TensorProto_INT32)))
		counted := w.op("Mul", []string{w.op("CumSum", []string{notPad, w.scalar(1)}), notPad})
		positions = w.op("Add", []string{w.op("Cast", []string{counted}, intAttr("to", int64(onnxpb.TensorProto_INT64))), pad})
	}
	types := "token_type_ids"
	inputs := []*onnxpb.ValueInfoProto{
		tensorInfo("input_ids", onnxpb.TensorProto_INT64, "batch", "sequence"),
		tensorInfo("attention_mask", onnxpb.TensorProto_INT64, "batch", "sequence"),
	}
	switch {
	case form.distil: // no token types
	case form.noTypeIDs:
		// self.token_type_ids.expand(1, -1) (a no-op the optimizer drops),
		// gathered at the position ids, expanded to (batch, seq).
		buffer := nm.embeddings + ".token_type_ids"
		w.inits = append(w.inits, i64Typed(buffer, []int64{1, int64(cfg.MaxPositions)}, make([]int64, cfg.MaxPositions)...))
		if form.roberta { // expand(position_ids.shape[0], -1): -1 becomes 1
			buffer = w.op("Expand", []string{buffer, w.op("Concat", []string{w.dim(positions, 0), w.ints(1)}, intAttr("axis", 0))})
		}
		gathered := w.op("GatherElements", []string{buffer, positions}, intAttr("axis", 1))
		types = w.op("Expand", []string{gathered, w.op("Concat", []string{w.dim("input_ids", 0), seq}, intAttr("axis", 0))})
	default:
		inputs = append(inputs, tensorInfo("token_type_ids", onnxpb.TensorProto_INT64, "batch", "sequence"))
	}
	sum := gather(nm.embeddings+".word_embeddings.weight", "input_ids")
	if !form.distil {
		sum = w.op("Add", []string{sum, gather(nm.embeddings+".token_type_embeddings.weight", types)})
	}
	sum = w.op("Add", []string{sum, gather(nm.embeddings+".position_embeddings.weight", positions)})
	x := layerNorm(sum, nm.embeddings+".LayerNorm")

	var mask string
	if form.transformers == "5" {
		mask = w.boolMask(x)
		if form.eager {
			mask = w.op("Where", []string{mask, w.float(0), w.float(-math.MaxFloat32)})
		}
	} else {
		// _prepare_4d_attention_mask_for_sdpa -> AttentionMaskConverter._expand_mask:
		// mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(f32);
		// 1 - it, masked_fill(its bool, finfo.min). tgt_len is the input's
		// sequence length before 4.57, the mask's own after.
		maskBatch, maskSeq := w.dim("attention_mask", 0), w.dim("attention_mask", 1)
		tgt := seq
		if form.transformers == "4.57" {
			tgt = maskSeq
		}
		expanded := w.op("Expand", []string{w.op("Unsqueeze", []string{"attention_mask", w.ints(1, 2)}), w.op("Concat", []string{maskBatch, w.ints(1), tgt, maskSeq}, intAttr("axis", 0))})
		inverted := w.op("Sub", []string{w.float(1), w.op("Cast", []string{expanded}, toFloat)})
		mask = w.op("Where", []string{w.op("Cast", []string{inverted}, toBool), w.float(-math.MaxFloat32), inverted})
	}
	newCode := form.transformers != "4.56"

	for l := range cfg.NumLayers {
		p := nm.layers + "." + strconv.Itoa(l)
		batch, seqL := w.dim(x, 0), w.dim(x, 1)
		split := func(part string, perm ...int64) string {
			y := linear(x, p+nm.qkv[part])
			var shape string
			if newCode {
				shape = w.op("Concat", []string{batch, seqL, w.ints(-1), w.ints(headSize)}, intAttr("axis", 0))
			} else {
				shape = w.op("Concat", []string{batch, w.ints(-1), w.ints(heads), w.ints(headSize)}, intAttr("axis", 0))
			}
			return w.op("Transpose", []string{w.op("Reshape", []string{y, shape}, intAttr("allowzero", 1))}, intsAttr("perm", perm...))
		}
		keyPerm := []int64{0, 2, 1, 3}
		if form.eager {
			// key.transpose(1, 2) then .transpose(2, 3), which the
			// optimizer merges into one Transpose<0,2,3,1>.
			keyPerm = []int64{0, 2, 3, 1}
		}
		q, k, v := split("query", 0, 2, 1, 3), split("key", keyPerm...), split("value", 0, 2, 1, 3)
		layerMask := mask
		if form.transformers == "4.57" {
			// sdpa_attention_forward: attention_mask[:, :, :, : key.shape[-2]]
			layerMask = w.op("Slice", []string{mask, w.ints(0), w.dim(k, 2), w.ints(3), w.ints(1)})
		}
		var ctx string
		if form.eager {
			scores := w.op("MatMul", []string{q, k})
			scores = w.op("Mul", []string{scores, w.float(float32(1 / math.Sqrt(float64(headSize))))})
			ctx = w.op("MatMul", []string{w.op("Softmax", []string{w.op("Add", []string{scores, layerMask})}, intAttr("axis", -1)), v})
		} else if form.opset >= 23 {
			var attrs []*onnxpb.AttributeProto
			if newCode {
				attrs = append(attrs, floatAttr("scale", float32(1/math.Sqrt(float64(headSize)))))
			}
			ctx = w.op("Attention", []string{q, k, v, layerMask}, attrs...)
		} else {
			// _aten_scaled_dot_product_attention_{float,bool}_mask_onnx: Kᵀ
			// by a reshape to 3-D, a static transpose and a reshape back;
			// √scale on both sides, folded to a constant ([1] when computed
			// from Q's shape, a scalar when given).
			kShape := w.op("Shape", []string{k})
			last := w.op("Slice", []string{kShape, w.ints(-1), w.ints(math.MaxInt64)})
			secondLast := w.op("Slice", []string{kShape, w.ints(-2), w.ints(-1)})
			lead := w.op("Slice", []string{kShape, w.ints(math.MinInt64), w.ints(-2)})
			squeezed := w.op("Reshape", []string{k, w.op("Concat", []string{w.ints(-1), secondLast, last}, intAttr("axis", 0))})
			kT := w.op("Reshape", []string{w.op("Transpose", []string{squeezed}, intsAttr("perm", 0, 2, 1)), w.op("Concat", []string{lead, last, secondLast}, intAttr("axis", 0))})
			w.info = append(w.info, tensorInfo(squeezed, onnxpb.TensorProto_FLOAT, strconv.FormatInt(heads, 10)+"*batch", "sequence", headSize))
			sqrtScale := float32(math.Sqrt(1 / math.Sqrt(float64(headSize))))
			var c string
			if newCode {
				c = w.float(sqrtScale)
			} else {
				c = w.float(sqrtScale, 1)
			}
			scores := w.op("MatMul", []string{w.op("Mul", []string{q, c}), w.op("Mul", []string{kT, c})})
			bias := layerMask
			if form.transformers == "5" {
				// A boolean mask: Where(mask, 0, lowest), and the Softmax
				// guarded, Where(IsNaN(P), 0, P).
				bias = w.op("Where", []string{layerMask, w.float(0), w.float(-math.MaxFloat32)})
			}
			probs := w.op("Softmax", []string{w.op("Add", []string{scores, bias})}, intAttr("axis", -1))
			if form.transformers == "5" {
				probs = w.op("Where", []string{w.op("IsNaN", []string{probs}), w.float(0), probs})
			}
			ctx = w.op("MatMul", []string{probs, v})
		}
		var merge string
		if newCode {
			merge = w.op("Concat", []string{batch, seqL, w.ints(-1)}, intAttr("axis", 0))
		} else {
			merge = w.op("Concat", []string{batch, seqL, w.ints(h)}, intAttr("axis", 0))
		}
		merged := w.op("Reshape", []string{w.op("Transpose", []string{ctx}, intsAttr("perm", 0, 2, 1, 3)), merge}, intAttr("allowzero", 1))
		x1 := layerNorm(w.op("Add", []string{linear(merged, p+nm.out), x}), p+nm.norm1)
		up := linear(x1, p+nm.up)
		var gelu string
		if nm.geluNew {
			// NewGELUActivation: 0.5 * x * (1 + tanh(√(2/π) * (x + 0.044715 * x³))).
			cubic := w.op("Mul", []string{w.op("Pow", []string{up, w.float(3)}), w.float(0.044715)})
			inner := w.op("Mul", []string{w.op("Add", []string{up, cubic}), w.float(float32(math.Sqrt(2 / math.Pi)))})
			gelu = w.op("Mul", []string{w.op("Mul", []string{up, w.float(0.5)}), w.op("Add", []string{w.op("Tanh", []string{inner}), w.float(1)})})
		} else if form.opset >= 20 {
			gelu = w.op("Gelu", []string{up}, strAttr("approximate", "none"))
		} else {
			erf := w.op("Erf", []string{w.op("Div", []string{up, w.float(float32(math.Sqrt2))})})
			gelu = w.op("Mul", []string{up, w.op("Mul", []string{w.float(0.5), w.op("Add", []string{erf, w.float(1)})})})
		}
		x = layerNorm(w.op("Add", []string{linear(gelu, p+nm.down), x1}), p+nm.norm2)
	}
	// Pooler and classifier: hidden[:, 0], then Linear on 2-D input is Gemm.
	w.next++
	zero := fmt.Sprintf("val_%d", w.next)
	w.inits = append(w.inits, i64Typed(zero, nil, 0))
	first := w.op("Gather", []string{x, zero}, intAttr("axis", 1))
	pooled := w.op(nm.headAct, []string{w.op("Gemm", []string{first, param(nm.head + ".weight"), param(nm.head + ".bias")}, intAttr("transB", 1))})
	w.nodes = append(w.nodes, node("Gemm", "node_Gemm_logits", []string{pooled, param(nm.classifier + ".weight"), param(nm.classifier + ".bias")}, []string{"logits"}, intAttr("transB", 1)))
	m := model(form.opset, &onnxpb.GraphProto{
		Name: proto.String("main_graph"), Node: w.nodes, Initializer: w.inits, ValueInfo: w.info,
		Input:  inputs,
		Output: []*onnxpb.ValueInfoProto{tensorInfo("logits", onnxpb.TensorProto_FLOAT, "batch", 2)},
	})
	m.IrVersion = proto.Int64(10) // onnx >= 1.16, as torch 2.9 writes
	m.ProducerName = proto.String("pytorch")
	m.ProducerVersion = proto.String("2.9.0")
	return m
}

// boolMask writes transformers 5's create_bidirectional_mask for the
// embeddings x as torch.export traces sdpa_mask (use_vmap False) and
// onnxscript writes it: the mask as bool, index ranges for batch, query
// and key positions, and_masks(q_idx >= 0, padding_mask[batch_idx,
// kv_idx]) from a constant true, expanded to [batch, 1, seq, keys].
func (w *dynamoWriter) boolMask(x string) string {
	toBool := intAttr("to", int64(onnxpb.TensorProto_BOOL))
	padding := w.op("Cast", []string{"attention_mask"}, toBool)
	arange := func(of string, dim int64) string {
		return w.op("Range", []string{w.scalar(0), w.op("Squeeze", []string{w.dim(of, dim)}), w.scalar(1)})
	}
	positions := arange(x, 1) // cache_position
	batchIdx := w.op("Unsqueeze", []string{arange(x, 0), w.ints(1, 2, 3)})
	qIdx := w.op("Unsqueeze", []string{positions, w.ints(0, 1, 3)})
	kvIdx := w.op("Unsqueeze", []string{arange(padding, 1), w.ints(0, 1, 2)})
	w.next++
	yes := fmt.Sprintf("val_%d", w.next)
	w.inits = append(w.inits, &onnxpb.TensorProto{Name: proto.String(yes), DataType: proto.Int32(int32(onnxpb.TensorProto_BOOL)), Int32Data: []int32{1}})
	result := w.op("And", []string{yes, w.op("GreaterOrEqual", []string{qIdx, w.scalar(0)})})
	// padding_mask[batch_idx, kv_idx]: aten.index as _aten_index_onnx
	// writes it (the identity transposes it adds are optimised away).
	broadcast := w.op("Shape", []string{w.op("Max", []string{batchIdx, kvIdx})})
	last := func(idx string) string {
		return w.op("Unsqueeze", []string{w.op("Expand", []string{idx, broadcast}), w.ints(-1)})
	}
	gathered := w.op("GatherND", []string{padding, w.op("Concat", []string{last(batchIdx), last(kvIdx)}, intAttr("axis", -1))}, intAttr("batch_dims", 0))
	result = w.op("And", []string{result, gathered})
	shape := w.op("Concat", []string{w.dim(x, 0), w.ints(1), w.dim(positions, 0), w.dim(padding, 1)}, intAttr("axis", 0))
	return w.op("Expand", []string{result, shape})
}

// modelNames are a family's parameter names, as transformers names them.
type modelNames struct {
	dir                         string // the shared model
	embeddings, layers          string
	qkv                         map[string]string // by part, under a layer
	out, norm1, up, down, norm2 string            // under a layer
	head, headAct               string            // the dense before the classifier, its activation
	classifier                  string
	geluNew                     bool // gelu_new (tanh form, written out) instead of F.gelu
}

var (
	bertNames = modelNames{dir: "sst2-bert-mini", embeddings: "bert.embeddings", layers: "bert.encoder.layer",
		qkv: map[string]string{"query": ".attention.self.query", "key": ".attention.self.key", "value": ".attention.self.value"},
		out: ".attention.output.dense", norm1: ".attention.output.LayerNorm", up: ".intermediate.dense", down: ".output.dense", norm2: ".output.LayerNorm",
		head: "bert.pooler.dense", headAct: "Tanh", classifier: "classifier"}
	distilBertNames = modelNames{dir: "sst2-distilbert-tiny", embeddings: "distilbert.embeddings", layers: "distilbert.transformer.layer",
		qkv: map[string]string{"query": ".attention.q_lin", "key": ".attention.k_lin", "value": ".attention.v_lin"},
		out: ".attention.out_lin", norm1: ".sa_layer_norm", up: ".ffn.lin1", down: ".ffn.lin2", norm2: ".output_layer_norm",
		head: "pre_classifier", headAct: "Relu", classifier: "classifier"}
	robertaNames = modelNames{dir: testmodels.TinyRobertaCls, embeddings: "roberta.embeddings", layers: "roberta.encoder.layer",
		qkv: bertNames.qkv, out: bertNames.out, norm1: bertNames.norm1, up: bertNames.up, down: bertNames.down, norm2: bertNames.norm2,
		head: "classifier.dense", headAct: "Tanh", classifier: "classifier.out_proj", geluNew: true}
)

// dynamoForms are the forms the tests write.
var dynamoForms = []dynamoForm{
	{20, "4.56", false, false, false, false}, {18, "4.56", false, false, false, false}, {23, "4.56", false, false, false, false},
	{20, "4.57", false, false, false, false}, {23, "4.57", false, false, false, false},
	{20, "5", false, false, false, false}, {18, "5", false, false, false, false}, {23, "5", false, false, false, false},
	{20, "5", true, false, false, false}, {20, "5", false, true, false, false},
	{20, "5", false, false, true, false}, {23, "5", false, false, true, false},
}

// sharedDynamoBERT is dynamoBERT of the shared sst2-bert-mini (or
// sst2-distilbert-tiny).
func sharedDynamoBERT(t *testing.T, form dynamoForm) (dir string, model []byte) {
	t.Helper()
	name := bertNames.dir
	if form.distil {
		name = distilBertNames.dir
	}
	return sharedBERT(t, name, func(cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto { return dynamoBERT(t, cfg, st, form) })
}

// TestDynamoBERTMatchesReference: sst2-bert-mini as torch.onnx's dynamo
// exporter writes it (the default exporter since torch 2.9) loads,
// reproduces PyTorch's logits on padded batches, and canonicalises to the
// same ops as its TorchScript export: one sqc.Attention per layer on one
// sqc.AttentionMask, fused GELUs, LayerNorms, Linears and embeddings.
// SQC_DYNAMO_MODEL_OUT=dir saves each form there (to run in ONNX Runtime).
func TestDynamoBERTMatchesReference(t *testing.T) {
	torchOps := torchCanonicalOps{}
	for _, form := range dynamoForms {
		t.Run(form.String(), func(t *testing.T) {
			dir, data := sharedDynamoBERT(t, form)
			if out := os.Getenv("SQC_DYNAMO_MODEL_OUT"); out != "" {
				if err := os.WriteFile(filepath.Join(out, form.String()+".onnx"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := Decode(data, "dynamo-bert.onnx")
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Verify(); err != nil {
				t.Fatalf("graph does not verify: %v", err)
			}
			wantInterpMatchesReference(t, g, dir, 32)
			if ops, want := canonicalOps(t, g), torchOps.of(t, dir); !maps.Equal(ops, want) {
				t.Errorf("canonical ops differ from the TorchScript export's:\ndynamo %v\ntorch  %v", ops, want)
			}
		})
	}
}

// torchCanonicalOps memoises, by shared model directory, the canonical
// ops of the model's TorchScript export (model.onnx).
type torchCanonicalOps map[string]map[string]int

func (c torchCanonicalOps) of(t *testing.T, dir string) map[string]int {
	t.Helper()
	if c[dir] == nil {
		torch, err := Load(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		c[dir] = canonicalOps(t, torch)
	}
	return c[dir]
}

// canonicalOps runs sqc's FP32 pipeline on g and counts its ops.
func canonicalOps(t *testing.T, g *compiler.Graph) map[string]int {
	t.Helper()
	if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	return opCounts(g)
}

// opCounts counts g's ops.
func opCounts(g *compiler.Graph) map[string]int {
	ops := map[string]int{}
	for _, n := range g.Nodes {
		ops[n.Op]++
	}
	return ops
}

// TestDynamoBERTInONNXRuntime runs every form of TestDynamoBERTMatchesReference
// in ONNX Runtime, which implements opsets 18 to 23 (Gelu and Attention
// included): its logits must be PyTorch's too, or the test models would
// not mean what the ONNX ops they use mean.
func TestDynamoBERTInONNXRuntime(t *testing.T) {
	for _, form := range dynamoForms {
		t.Run(form.String(), func(t *testing.T) {
			dir, data := sharedDynamoBERT(t, form)
			wantORTMatchesReference(t, dir, data)
		})
	}
}

// TestDynamoRoBERTa: the tiny RoBERTa classifier as the dynamo exporter
// writes transformers 5's code (opsets 20 and 23) gives PyTorch's logits
// on its reference batch (padded), in sqc's interpreter and in ONNX
// Runtime, and canonicalises to its TorchScript export's ops: RoBERTa's
// position ids and the type ids gathered at them fuse into sqc.Embeddings.
func TestDynamoRoBERTa(t *testing.T) {
	dir := testmodels.TinyDir(t, testmodels.TinyRobertaCls)
	ref, err := testmodels.LoadModelReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	torch, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	torchOps := canonicalOps(t, torch)
	for _, opset := range []int64{20, 23} {
		form := dynamoForm{opset: opset, transformers: "5", noTypeIDs: true, roberta: true}
		t.Run(form.String(), func(t *testing.T) {
			_, data := sharedBERT(t, "", func(cfg hf.Config, st *hf.Safetensors) *onnxpb.ModelProto { return dynamoBERT(t, cfg, st, form) }, dir)
			g, err := Decode(data, "dynamo-roberta.onnx")
			if err != nil {
				t.Fatal(err)
			}
			out, err := interp.Run(g, ref.Inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := ref.Outputs["logits"]
			if d := testmodels.TensorMaxAbsDiff(out["logits"], want); !(d <= 1e-4) {
				t.Errorf("max |logit - reference| = %.3g, want <= 1e-4", d)
			} else {
				t.Logf("max |logit - reference| = %.3g", d)
			}
			if ops := canonicalOps(t, g); !maps.Equal(ops, torchOps) {
				t.Errorf("canonical ops differ from the TorchScript export's:\ndynamo %v\ntorch  %v", ops, torchOps)
			}
			tmp := t.TempDir()
			if err := os.WriteFile(filepath.Join(tmp, "model.onnx"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := testmodels.WriteORTInputs(tmp, ref.Inputs); err != nil {
				t.Fatal(err)
			}
			if d := testmodels.TensorMaxAbsDiff(testmodels.RunORT(t, tmp)["logits"], want); !(d <= 1e-4) {
				t.Errorf("ONNX Runtime: max |logit - reference| = %.3g, want <= 1e-4", d)
			} else {
				t.Logf("ONNX Runtime: max |logit - reference| = %.3g", d)
			}
		})
	}
}
