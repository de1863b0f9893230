package ops

// ONNX TensorProto.DataType codes for the dtypes sqc supports. Cast's "to"
// attribute carries these codes, as in ONNX files, so that frontends pass
// attributes through unchanged.
const (
	onnxFloat  = 1
	onnxUint8  = 2
	onnxInt8   = 3
	onnxInt32  = 6
	onnxInt64  = 7
	onnxBool   = 9
	onnxDouble = 11
)

// DTypeFromONNX maps an ONNX TensorProto.DataType code to a DType; ok is
// false for types sqc does not support (float16, strings, ...).
func DTypeFromONNX(code int64) (dt DType, ok bool) {
	switch code {
	case onnxFloat:
		return Float32, true
	case onnxUint8:
		return Uint8, true
	case onnxInt8:
		return Int8, true
	case onnxInt32:
		return Int32, true
	case onnxInt64:
		return Int64, true
	case onnxBool:
		return Bool, true
	case onnxDouble:
		return Float64, true
	}
	return Undefined, false
}

// ONNX returns the ONNX TensorProto.DataType code of d (0 for Undefined).
func (d DType) ONNX() int64 {
	switch d {
	case Float32:
		return onnxFloat
	case Uint8:
		return onnxUint8
	case Int8:
		return onnxInt8
	case Int32:
		return onnxInt32
	case Int64:
		return onnxInt64
	case Bool:
		return onnxBool
	case Float64:
		return onnxDouble
	}
	return 0
}
