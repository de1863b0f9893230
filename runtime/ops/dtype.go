package ops

import "fmt"

// DType is the element type of a tensor or value.
type DType uint8

// Element types the IR knows. The numbering is sqc's own; frontends map
// their formats' codes onto it.
const (
	Undefined DType = iota
	Float32
	Float64
	Int64
	Int32
	Int8
	Uint8
	Bool
)

var dtypeNames = [...]string{
	Undefined: "undef",
	Float32:   "f32",
	Float64:   "f64",
	Int64:     "i64",
	Int32:     "i32",
	Int8:      "i8",
	Uint8:     "u8",
	Bool:      "bool",
}

// String returns the short name used in the textual IR ("f32", "i64", ...).
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType is the inverse of DType.String.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if n == s && DType(i) != Undefined {
			return DType(i), nil
		}
	}
	return Undefined, fmt.Errorf("unknown dtype %q", s)
}

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Float64, Int64:
		return 8
	case Float32, Int32:
		return 4
	case Int8, Uint8, Bool:
		return 1
	}
	return 0
}
