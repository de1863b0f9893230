package onnx

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// onnxTypeNames names ONNX TensorProto.DataType codes, including those newer
// than the onnx.proto this package was generated from, so errors can say
// "float16" rather than "type 10".
var onnxTypeNames = [...]string{
	0: "undefined", 1: "float32", 2: "uint8", 3: "int8", 4: "uint16",
	5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
	10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
	14: "complex64", 15: "complex128", 16: "bfloat16",
	17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
	20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
	24: "float8e8m0", 25: "uint2", 26: "int2",
}

func onnxTypeName(code int32) string {
	if code >= 0 && int(code) < len(onnxTypeNames) {
		return onnxTypeNames[code]
	}
	return "unknown"
}

// dtypeFromONNX maps an ONNX element type code onto sqc's DType (through
// compiler.DTypeFromONNX, the mapping Cast's "to" attribute also uses;
// float16 and bfloat16 are read as float32, float16.go), or fails with
// ErrUnsupportedDType.
func dtypeFromONNX(code int32) (compiler.DType, error) {
	if _, half := halfFormat(code); half {
		return compiler.Float32, nil
	}
	if dt, ok := compiler.DTypeFromONNX(int64(code)); ok {
		return dt, nil
	}
	return compiler.Undefined, fmt.Errorf("%w: %s (ONNX data type %d); sqc supports float32, float64, float16 and bfloat16 (both read as float32), int64, int32, int8, uint8 and bool",
		ErrUnsupportedDType, onnxTypeName(code), code)
}
