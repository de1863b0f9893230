package compiler

import "github.com/sqc-dev/sqc/runtime/ops"

// The IR's tensors, element types and attributes are runtime/ops's, so the
// generic kernels that the interpreter, the INT8 engine and generated
// packages share take the IR's tensors as they are.
type (
	// Tensor is a dense row-major tensor (ops.Tensor).
	Tensor = ops.Tensor
	// DType is an element type (ops.DType).
	DType = ops.DType
	// Attr is one node attribute (ops.Attr).
	Attr = ops.Attr
	// AttrKind tells which field of an Attr is set (ops.AttrKind).
	AttrKind = ops.AttrKind
	// Attrs are a node's attributes by name (ops.Attrs).
	Attrs = ops.Attrs
)

// Element types (ops'), numbered by sqc; frontends map their formats'
// codes onto them.
const (
	Undefined = ops.Undefined
	Float32   = ops.Float32
	Float64   = ops.Float64
	Int64     = ops.Int64
	Int32     = ops.Int32
	Int8      = ops.Int8
	Uint8     = ops.Uint8
	Bool      = ops.Bool
)

// Attribute kinds (ops'), mirroring ONNX's AttributeProto types.
const (
	AttrInt     = ops.AttrInt
	AttrFloat   = ops.AttrFloat
	AttrString  = ops.AttrString
	AttrInts    = ops.AttrInts
	AttrFloats  = ops.AttrFloats
	AttrStrings = ops.AttrStrings
	AttrTensor  = ops.AttrTensor
)

// NumElements is the product of dims (1 for a scalar).
func NumElements(shape []int64) int64 { return ops.NumElements(shape) }

// NewTensor allocates a zeroed tensor of the given type and shape.
func NewTensor(dt DType, shape ...int64) *Tensor { return ops.NewTensor(dt, shape...) }

// ParseDType is the inverse of DType.String ("f32", "i64", ...).
func ParseDType(s string) (DType, error) { return ops.ParseDType(s) }

// DTypeFromONNX maps an ONNX TensorProto.DataType code to a DType; ok is
// false for types sqc does not support (float16, strings, ...).
func DTypeFromONNX(code int64) (DType, bool) { return ops.DTypeFromONNX(code) }
