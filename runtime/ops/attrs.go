package ops

import (
	"fmt"
	"slices"
)

// AttrKind tells which field of an Attr is set.
type AttrKind uint8

// Attribute kinds, mirroring ONNX's AttributeProto types that sqc accepts.
const (
	AttrInt AttrKind = iota + 1
	AttrFloat
	AttrString
	AttrInts
	AttrFloats
	AttrStrings
	AttrTensor
)

// Attr is one node attribute.
type Attr struct {
	Kind    AttrKind
	Int     int64
	Float   float32
	String  string
	Ints    []int64
	Floats  []float32
	Strings []string
	Tensor  *Tensor
}

// Clone returns a deep copy of the attribute.
func (a Attr) Clone() Attr {
	a.Ints = slices.Clone(a.Ints)
	a.Floats = slices.Clone(a.Floats)
	a.Strings = slices.Clone(a.Strings)
	a.Tensor = a.Tensor.Clone()
	return a
}

// Attrs are a node's attributes by name: the IR's (compiler.Node.Attrs)
// and the generic kernels' (Node.Attrs) are the same map.
type Attrs map[string]Attr

// Has reports whether the attribute is present, of any kind.
func (as Attrs) Has(name string) bool { _, ok := as[name]; return ok }

// Int returns the integer attribute name, or def when absent.
func (as Attrs) Int(name string, def int64) int64 {
	if a, ok := as[name]; ok && a.Kind == AttrInt {
		return a.Int
	}
	return def
}

// Float returns the float attribute name, or def when absent.
func (as Attrs) Float(name string, def float32) float32 {
	if a, ok := as[name]; ok && a.Kind == AttrFloat {
		return a.Float
	}
	return def
}

// String returns the string attribute name, or def when absent.
func (as Attrs) String(name, def string) string {
	if a, ok := as[name]; ok && a.Kind == AttrString {
		return a.String
	}
	return def
}

// Ints returns the ints attribute name, or false when absent.
func (as Attrs) Ints(name string) ([]int64, bool) {
	a, ok := as[name]
	if !ok || a.Kind != AttrInts {
		return nil, false
	}
	return a.Ints, true
}

// Floats returns the floats attribute name, or false when absent.
func (as Attrs) Floats(name string) ([]float32, bool) {
	a, ok := as[name]
	if !ok || a.Kind != AttrFloats {
		return nil, false
	}
	return a.Floats, true
}

// Tensor returns the tensor attribute name, or nil.
func (as Attrs) Tensor(name string) *Tensor {
	if a, ok := as[name]; ok && a.Kind == AttrTensor {
		return a.Tensor
	}
	return nil
}

// String names the attribute kind as the textual IR and errors do.
func (k AttrKind) String() string {
	switch k {
	case AttrInt:
		return "int"
	case AttrFloat:
		return "float"
	case AttrString:
		return "string"
	case AttrInts:
		return "ints"
	case AttrFloats:
		return "floats"
	case AttrStrings:
		return "strings"
	case AttrTensor:
		return "tensor"
	}
	return fmt.Sprintf("attrkind(%d)", uint8(k))
}
