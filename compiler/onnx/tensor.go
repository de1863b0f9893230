package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// decodeTensor turns a TensorProto into a compiler.Tensor. Data comes from
// exactly one place: external data, raw_data (little-endian, as ONNX
// specifies), or the typed repeated field ONNX assigns to the dtype. The
// byte or element count is checked against dims before anything is
// allocated, so a lying header cannot make the loader allocate more than
// the file holds. Errors are causes only; the caller names the tensor.
func decodeTensor(tp *onnxpb.TensorProto, ext *externalData) (*compiler.Tensor, error) {
	if tp.GetSegment() != nil {
		return nil, fmt.Errorf("%w: segmented tensor (TensorProto.segment)", ErrUnsupportedFeature)
	}
	dt, err := dtypeFromONNX(tp.GetDataType())
	if err != nil {
		return nil, err
	}
	count, err := elementCount(tp.GetDims())
	if err != nil {
		return nil, err
	}
	shape := append(make([]int64, 0, len(tp.GetDims())), tp.GetDims()...)
	wantBytes := count * int64(dt.Size()) // elementCount bounds count so this cannot overflow
	half, isHalf := halfFormat(tp.GetDataType())
	if isHalf {
		wantBytes = 2 * count
	}

	typed := typedFields(tp)
	switch {
	case tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL:
		if tp.RawData != nil || len(typed) > 0 {
			return nil, fmt.Errorf("%w: tensor has external data and also inline data (%s)", compiler.ErrMalformed, inlineFieldNames(tp, typed))
		}
		raw, err := ext.read(tp.GetExternalData(), wantBytes)
		if err != nil {
			return nil, err
		}
		if isHalf {
			return decodeHalf(half, shape, count, raw, "external data", nil)
		}
		return fromRaw(dt, shape, count, raw, "external data")
	case tp.RawData != nil:
		if len(typed) > 0 {
			return nil, fmt.Errorf("%w: tensor has both raw_data and %s", compiler.ErrMalformed, typed[0])
		}
		if isHalf {
			return decodeHalf(half, shape, count, tp.RawData, "raw_data", nil)
		}
		return fromRaw(dt, shape, count, tp.RawData, "raw_data")
	}
	if isHalf {
		for _, f := range typed {
			if f != "int32_data" {
				return nil, fmt.Errorf("%w: %s tensor carries its data in %s; ONNX stores %s in int32_data", compiler.ErrMalformed, half, f, half)
			}
		}
		return decodeHalf(half, shape, count, nil, "int32_data", append(make([]int32, 0, count), tp.GetInt32Data()...))
	}
	return fromTyped(tp, dt, shape, count, typed)
}

// maxElements bounds a tensor's element count so that its size in bytes
// (at most 8 per element) fits an int64 and a Go slice length.
const maxElements = math.MaxInt64 / 8

// elementCount multiplies dims, rejecting negative dims and overflow.
func elementCount(dims []int64) (int64, error) {
	for i, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension %d at axis %d", compiler.ErrMalformed, d, i)
		}
	}
	n := int64(1)
	for _, d := range dims {
		if d == 0 {
			return 0, nil
		}
		if n > maxElements/d {
			return 0, fmt.Errorf("%w: dims %v overflow the element count", compiler.ErrMalformed, dims)
		}
		n *= d
	}
	return n, nil
}

// typedFields names the non-empty typed repeated data fields of tp.
func typedFields(tp *onnxpb.TensorProto) []string {
	var names []string
	add := func(name string, n int) {
		if n > 0 {
			names = append(names, name)
		}
	}
	add("float_data", len(tp.GetFloatData()))
	add("int32_data", len(tp.GetInt32Data()))
	add("string_data", len(tp.GetStringData()))
	add("int64_data", len(tp.GetInt64Data()))
	add("double_data", len(tp.GetDoubleData()))
	add("uint64_data", len(tp.GetUint64Data()))
	return names
}

func inlineFieldNames(tp *onnxpb.TensorProto, typed []string) string {
	if tp.RawData != nil {
		return "raw_data"
	}
	return typed[0]
}

// fromRaw decodes little-endian bytes.
func fromRaw(dt compiler.DType, shape []int64, count int64, raw []byte, field string) (*compiler.Tensor, error) {
	if want := count * int64(dt.Size()); int64(len(raw)) != want {
		return nil, fmt.Errorf("%w: %s holds %d bytes, %s%v needs %d", compiler.ErrShapeMismatch, field, len(raw), dt, shape, want)
	}
	t := &compiler.Tensor{DType: dt, Shape: shape}
	le := binary.LittleEndian
	switch dt {
	case compiler.Float32:
		t.F32 = make([]float32, count)
		for i := range t.F32 {
			t.F32[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case compiler.Float64:
		t.F64 = make([]float64, count)
		for i := range t.F64 {
			t.F64[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case compiler.Int64:
		t.I64 = make([]int64, count)
		for i := range t.I64 {
			t.I64[i] = int64(le.Uint64(raw[8*i:]))
		}
	case compiler.Int32:
		t.I32 = make([]int32, count)
		for i := range t.I32 {
			t.I32[i] = int32(le.Uint32(raw[4*i:]))
		}
	case compiler.Int8:
		t.I8 = make([]int8, count)
		for i := range t.I8 {
			t.I8[i] = int8(raw[i])
		}
	case compiler.Uint8:
		t.U8 = append(make([]uint8, 0, count), raw...)
	case compiler.Bool:
		t.Bool = make([]bool, count)
		for i := range t.Bool {
			t.Bool[i] = raw[i] != 0
		}
	}
	return t, nil
}

// fromTyped decodes the typed repeated field ONNX uses for dt: float_data,
// double_data, int64_data, or int32_data (which also carries int8, uint8
// and bool values, one per element).
func fromTyped(tp *onnxpb.TensorProto, dt compiler.DType, shape []int64, count int64, typed []string) (*compiler.Tensor, error) {
	field := "int32_data"
	switch dt {
	case compiler.Float32:
		field = "float_data"
	case compiler.Float64:
		field = "double_data"
	case compiler.Int64:
		field = "int64_data"
	}
	for _, f := range typed {
		if f != field {
			return nil, fmt.Errorf("%w: %s tensor carries its data in %s; ONNX stores %s in %s", compiler.ErrMalformed, dt, f, dt, field)
		}
	}
	var have int
	switch field {
	case "float_data":
		have = len(tp.GetFloatData())
	case "double_data":
		have = len(tp.GetDoubleData())
	case "int64_data":
		have = len(tp.GetInt64Data())
	default:
		have = len(tp.GetInt32Data())
	}
	if int64(have) != count {
		return nil, fmt.Errorf("%w: %s holds %d values, %s%v needs %d", compiler.ErrShapeMismatch, field, have, dt, shape, count)
	}
	t := &compiler.Tensor{DType: dt, Shape: shape}
	switch dt {
	case compiler.Float32:
		t.F32 = append(make([]float32, 0, count), tp.GetFloatData()...)
	case compiler.Float64:
		t.F64 = append(make([]float64, 0, count), tp.GetDoubleData()...)
	case compiler.Int64:
		t.I64 = append(make([]int64, 0, count), tp.GetInt64Data()...)
	case compiler.Int32:
		t.I32 = append(make([]int32, 0, count), tp.GetInt32Data()...)
	case compiler.Int8:
		t.I8 = make([]int8, count)
		for i, v := range tp.GetInt32Data() {
			if v < math.MinInt8 || v > math.MaxInt8 {
				return nil, fmt.Errorf("%w: int32_data[%d] = %d is out of range for i8", compiler.ErrMalformed, i, v)
			}
			t.I8[i] = int8(v)
		}
	case compiler.Uint8:
		t.U8 = make([]uint8, count)
		for i, v := range tp.GetInt32Data() {
			if v < 0 || v > math.MaxUint8 {
				return nil, fmt.Errorf("%w: int32_data[%d] = %d is out of range for u8", compiler.ErrMalformed, i, v)
			}
			t.U8[i] = uint8(v)
		}
	case compiler.Bool:
		t.Bool = make([]bool, count)
		for i, v := range tp.GetInt32Data() {
			t.Bool[i] = v != 0
		}
	}
	return t, nil
}

// firstNonFinite returns the index of the first NaN or Inf in a float
// tensor, or -1.
func firstNonFinite(t *compiler.Tensor) int {
	for i, v := range t.F32 {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return i
		}
	}
	for i, v := range t.F64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}
