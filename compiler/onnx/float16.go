package onnx

import (
	"fmt"
	"math"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
	"github.com/sqc-dev/sqc/internal/halffloat"
)

// Half-width float models.
//
// A model stored in float16 (model_fp16.onnx as transformers.js ships
// them, onnxconverter-common's convert_float_to_float16, optimum's and
// torch's fp16 exports) or bfloat16 is read widened to float32:
//   - every tensor of those types (initializers, Constant values, tensor
//     attributes) is decoded to float32 with exactly its stored values
//     (halffloat: the widening is exact);
//   - every graph input, output and value_info of those types is float32;
//   - a Cast to float16 or bfloat16 becomes a Cast to float32 (so a
//     converter's Cast pairs around the graph's inputs and outputs, and
//     around ops it kept in float32, become Casts to the dtype their input
//     already has, which passes.DropNoOpCasts removes).
//
// The graph then computes in float32 what the file computes at half
// width, with the file's own weights and constants: the intermediate
// roundings to 16 bits are dropped, so results are at least as accurate
// as the file's own arithmetic. sqc calibrates and quantises from there
// as for any float32 model. Graph.Meta "widened_to_float32" says what was
// widened, so `sqc inspect` shows it.

// halfFormat reports whether an ONNX element type is one of the 16-bit
// float types sqc widens, and which.
func halfFormat(code int32) (halffloat.Format, bool) {
	switch onnxpb.TensorProto_DataType(code) {
	case onnxpb.TensorProto_FLOAT16:
		return halffloat.Float16, true
	case onnxpb.TensorProto_BFLOAT16:
		return halffloat.BFloat16, true
	}
	return 0, false
}

// decodeHalf decodes a float16 or bfloat16 tensor's data (count elements,
// from raw bytes or, one element's bits per entry, int32_data as ONNX
// stores them) into a float32 tensor.
func decodeHalf(f halffloat.Format, shape []int64, count int64, raw []byte, field string, bits []int32) (*compiler.Tensor, error) {
	t := &compiler.Tensor{DType: compiler.Float32, Shape: shape}
	if bits == nil {
		if want := 2 * count; int64(len(raw)) != want {
			return nil, fmt.Errorf("%w: %s holds %d bytes, %s%v needs %d", compiler.ErrShapeMismatch, field, len(raw), f, shape, want)
		}
		t.F32 = f.Widen(raw)
		return t, nil
	}
	if int64(len(bits)) != count {
		return nil, fmt.Errorf("%w: int32_data holds %d values, %s%v needs %d", compiler.ErrShapeMismatch, len(bits), f, shape, count)
	}
	t.F32 = make([]float32, count)
	for i, v := range bits {
		if v < 0 || v > math.MaxUint16 {
			return nil, fmt.Errorf("%w: int32_data[%d] = %d is not the bits of a %s (0 to 65535)", compiler.ErrMalformed, i, v, f)
		}
		t.F32[i] = f.Float32(uint16(v))
	}
	return t, nil
}

// widened is what the loader widens: a tensor, a value or a Cast.
type widened int

const (
	widenedTensor widened = iota
	widenedValue
	widenedCast
	widenedKinds
)

// widenings counts what the loader widened, by source format and kind.
type widenings map[halffloat.Format]*[widenedKinds]int

// note records one widened item whose ONNX element type is code (nothing
// when that is not a 16-bit float).
func (w widenings) note(code int32, item widened) {
	f, ok := halfFormat(code)
	if !ok {
		return
	}
	if w[f] == nil {
		w[f] = &[widenedKinds]int{}
	}
	w[f][item]++
}

// String is the Graph.Meta entry: "float16: 53 tensors, 12 values, 2 Casts".
func (w widenings) String() string {
	var parts []string
	for _, f := range []halffloat.Format{halffloat.Float16, halffloat.BFloat16} {
		if c := w[f]; c != nil {
			parts = append(parts, fmt.Sprintf("%s: %d tensors, %d values, %d Casts", f, c[widenedTensor], c[widenedValue], c[widenedCast]))
		}
	}
	return strings.Join(parts, "; ")
}

// widenCast makes a Cast to float16 or bfloat16 a Cast to float32.
func (b *builder) widenCast(n *compiler.Node) {
	a, ok := n.Attrs["to"]
	if n.Op != "Cast" || !ok || a.Kind != compiler.AttrInt || a.Int < math.MinInt32 || a.Int > math.MaxInt32 {
		return
	}
	if _, half := halfFormat(int32(a.Int)); half {
		b.widened.note(int32(a.Int), widenedCast)
		n.Attrs["to"] = compiler.IntAttr(compiler.Float32.ONNX())
	}
}
