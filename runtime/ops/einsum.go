package ops

import (
	"fmt"
	"strings"
)

// EinsumOuter reports whether equation is the outer product of two vectors
// ("i,j->ij" with two distinct letters, spaces ignored): the one Einsum
// form the op table admits (torch.onnx's export of torch.outer).
func EinsumOuter(equation string) bool {
	e := strings.ReplaceAll(equation, " ", "")
	ins, out, ok := strings.Cut(e, "->")
	if !ok {
		return false
	}
	a, b, ok := strings.Cut(ins, ",")
	return ok && len(a) == 1 && len(b) == 1 && a != b && isLetter(a[0]) && isLetter(b[0]) && out == a+b
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// einsum is ONNX Einsum for the outer product of two vectors:
// out[i][j] = a[i] * b[j], each product rounded once in the inputs' type
// (torch.outer's bits).
func einsum(c *call) ([]*Tensor, error) {
	eq := c.node.Attrs.String("equation", "")
	if !EinsumOuter(eq) {
		return nil, fmt.Errorf("%w: Einsum equation %q (only the outer product \"i,j->ij\")", ErrUnsupportedOp, eq)
	}
	a, b := c.in[0], c.in[1]
	if len(a.Shape) != 1 || len(b.Shape) != 1 {
		return nil, fmt.Errorf("%w: Einsum %q of shapes %v and %v, want two vectors", ErrShapeMismatch, eq, a.Shape, b.Shape)
	}
	if err := sameDType(a, b); err != nil {
		return nil, err
	}
	shape := []int64{a.Shape[0], b.Shape[0]}
	if err := c.checkValueShape(shape); err != nil {
		return nil, err
	}
	switch a.DType {
	case Float32:
		return []*Tensor{FromSlice(shape, outer(a.F32, b.F32))}, nil
	case Float64:
		return []*Tensor{FromSlice(shape, outer(a.F64, b.F64))}, nil
	}
	return nil, unsupported(a.DType)
}

func outer[T float32 | float64](a, b []T) []T {
	out := make([]T, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x*y)
		}
	}
	return out
}
