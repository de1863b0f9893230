package exec

import (
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// SlotID numbers a Program's buffers; NoSlot marks an absent operand.
type SlotID int

// NoSlot is the SlotID of an absent optional operand.
const NoSlot SlotID = -1

// SlotKind tells where a slot's contents come from.
type SlotKind uint8

// Slot kinds.
const (
	SlotValue    SlotKind = iota // written by a step
	SlotInput                    // a graph input, bound to the caller's tensor by Run
	SlotConst                    // an initializer, fixed at Compile
	SlotInternal                 // a buffer no graph value names (quantised activations, per-row scales)
)

// Slot is one buffer of a Program.
type Slot struct {
	ID   SlotID
	Name string // the graph value, or for internal buffers the value and a suffix ("x#u8")
	Kind SlotKind
	// DType is the element type; Shape the graph's (possibly symbolic)
	// shape where known (internal buffers: [rows, columns]).
	DType compiler.DType
	Shape compiler.Shape
	// Const is the initializer of a SlotConst slot.
	Const *compiler.Tensor
}

func (s *Slot) String() string {
	return "%" + s.Name
}

// describe is the slot with its type, for listings.
func (s *Slot) describe() string {
	shape := "[*]"
	if s.Shape != nil {
		parts := make([]string, len(s.Shape))
		for i, d := range s.Shape {
			parts[i] = d.String()
		}
		shape = "[" + strings.Join(parts, ", ") + "]"
	}
	kind := map[SlotKind]string{SlotValue: "", SlotInput: " input", SlotConst: " const", SlotInternal: " internal"}[s.Kind]
	return fmt.Sprintf("$%d %s: %s%s%s", s.ID, s, s.DType, shape, kind)
}

// resize makes t a dtype tensor of the given shape, reusing its storage
// when it is large enough. The contents are left as they were.
func resize(t *compiler.Tensor, dt compiler.DType, shape ...int64) {
	t.DType = dt
	t.Shape = append(t.Shape[:0], shape...)
	n := int(compiler.NumElements(shape))
	switch dt {
	case compiler.Float32:
		t.F32 = grow(t.F32, n)
	case compiler.Uint8:
		t.U8 = grow(t.U8, n)
	case compiler.Int32:
		t.I32 = grow(t.I32, n)
	case compiler.Int64:
		t.I64 = grow(t.I64, n)
	case compiler.Int8:
		t.I8 = grow(t.I8, n)
	case compiler.Float64:
		t.F64 = grow(t.F64, n)
	case compiler.Bool:
		t.Bool = grow(t.Bool, n)
	}
}

// copyTensor makes dst a copy of src, reusing dst's storage when it is
// large enough.
func copyTensor(dst, src *compiler.Tensor) {
	if dst.DType != src.DType {
		*dst = compiler.Tensor{} // hold data of one dtype only
	}
	resize(dst, src.DType, src.Shape...)
	ops.CopyElems(dst, 0, src, 0, src.Len())
}

// grow returns s resliced to n elements, reallocated (with no copy) only
// when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// rowsOf splits a shape [..., cols] into the product of the leading dims
// and the last one.
func rowsOf(shape []int64) (rows, cols int) {
	if len(shape) == 0 {
		return 1, 1
	}
	return int(compiler.NumElements(shape[:len(shape)-1])), int(shape[len(shape)-1])
}

// withLast is shape with its last dim replaced by n, into buf.
func withLast(buf, shape []int64, n int) []int64 {
	buf = append(buf[:0], shape...)
	buf[len(buf)-1] = int64(n)
	return buf
}
