package ops

import (
	"cmp"
	"errors"
	"fmt"
	"math"
)

// ErrIntDivZero is the error of an integer Div by zero.
var ErrIntDivZero = errors.New("integer division by zero")

// sameDType fails unless every tensor has the dtype of the first.
func sameDType(ts ...*Tensor) error {
	for _, t := range ts[1:] {
		if t.DType != ts[0].DType {
			return fmt.Errorf("%w: operands are %s and %s", ErrDTypeMismatch, ts[0].DType, t.DType)
		}
	}
	return nil
}

func unsupported(dt DType) error {
	return fmt.Errorf("%w: not defined for %s", ErrDTypeMismatch, dt)
}

// arithmetic returns the kernel of Add, Sub, Mul or Div.
func arithmetic(op string) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		a, b := c.in[0], c.in[1]
		if err := sameDType(a, b); err != nil {
			return nil, err
		}
		switch a.DType {
		case Float32:
			return one(binaryApply(a, b, arithFunc[float32](op)))
		case Float64:
			return one(binaryApply(a, b, arithFunc[float64](op)))
		case Int64:
			return intArith[int64](op, a, b)
		case Int32:
			return intArith[int32](op, a, b)
		case Int8:
			return intArith[int8](op, a, b)
		case Uint8:
			return intArith[uint8](op, a, b)
		}
		return nil, unsupported(a.DType)
	}
}

func intArith[T number](op string, a, b *Tensor) ([]*Tensor, error) {
	if op == "Div" {
		for _, v := range elems[T](b) {
			if v == 0 {
				return nil, ErrIntDivZero
			}
		}
	}
	return one(binaryApply(a, b, arithFunc[T](op)))
}

// arithFunc is one arithmetic operation in T's own precision: for float32
// that is correctly rounded, like PyTorch's and ONNX Runtime's float32 ops.
func arithFunc[T number](op string) func(x, y T) T {
	switch op {
	case "Add":
		return func(x, y T) T { return x + y }
	case "Sub":
		return func(x, y T) T { return x - y }
	case "Mul":
		return func(x, y T) T { return x * y }
	}
	return func(x, y T) T { return x / y }
}

// pow is ONNX Pow: the result has the base's dtype; the exponent may be of
// another numeric type.
func pow(c *call) ([]*Tensor, error) {
	base, exp := c.in[0], c.in[1]
	if base.DType == Bool || exp.DType == Bool {
		return nil, unsupported(Bool)
	}
	if IsFloat(base.DType) && exp.Len() == 1 && len(exp.Shape) <= len(base.Shape) {
		// A constant exponent (LayerNorm's x^2, x^0.5): no broadcasting,
		// and x*x for 2, correctly rounded like the general path.
		e := Float64s(exp)[0]
		switch base.DType {
		case Float32:
			if e == 2 {
				return []*Tensor{unaryApply(base, func(x float32) float32 { return x * x })}, nil
			}
			return []*Tensor{unaryApply(base, func(x float32) float32 { return float32(math.Pow(float64(x), e)) })}, nil
		case Float64:
			if e == 2 {
				return []*Tensor{unaryApply(base, func(x float64) float64 { return x * x })}, nil
			}
			return []*Tensor{unaryApply(base, func(x float64) float64 { return math.Pow(x, e) })}, nil
		}
	}
	if !IsFloat(base.DType) && !IsFloat(exp.DType) {
		bi, _ := Cast(base, Int64)
		ei, _ := Cast(exp, Int64)
		r, err := binaryApply(bi, ei, intPow)
		if err != nil {
			return nil, err
		}
		return one(Cast(r, base.DType))
	}
	bf, _ := Cast(base, Float64)
	ef, _ := Cast(exp, Float64)
	r, err := binaryApply(bf, ef, math.Pow)
	if err != nil {
		return nil, err
	}
	return one(Cast(r, base.DType))
}

// intPow is exact integer exponentiation by squaring; negative exponents
// give the truncated real result (0 unless the base is 1 or -1).
func intPow(x, y int64) int64 {
	if y < 0 {
		switch x {
		case 1:
			return 1
		case -1:
			if y%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for ; y > 0; y >>= 1 {
		if y&1 == 1 {
			r *= x
		}
		x *= x
	}
	return r
}

// floatUnary returns the kernel of a float-only elementwise function, which
// is evaluated in float64 and rounded once to the tensor's precision.
func floatUnary(f func(float64) float64) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		x := c.in[0]
		switch x.DType {
		case Float32:
			return []*Tensor{unaryApply(x, func(v float32) float32 { return float32(f(float64(v))) })}, nil
		case Float64:
			return []*Tensor{unaryApply(x, f)}, nil
		}
		return nil, unsupported(x.DType)
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// silu is x·sigmoid(x) (PyTorch's silu, sqc.Silu), written x / (1 + e^-x)
// as PyTorch computes it: NaN at -Inf.
func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// geluErf is the exact GELU, 0.5*x*(1+erf(x/sqrt(2))), as BERT uses it.
func geluErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// geluTanh is GELU's tanh approximation (ONNX Gelu approximate="tanh").
func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// gelu is sqc's canonical Gelu (and ONNX opset 20 Gelu): attribute
// approximate is "none" (default, erf form) or "tanh".
func gelu(c *call) ([]*Tensor, error) {
	approx := "none"
	if a, ok := c.node.Attrs["approximate"]; ok {
		approx = a.String
	}
	switch approx {
	case "none":
		return floatUnary(geluErf)(c)
	case "tanh":
		return floatUnary(geluTanh)(c)
	}
	return nil, fmt.Errorf("%w: Gelu approximate=%q (want \"none\" or \"tanh\")", ErrUnsupportedOp, approx)
}

func relu(c *call) ([]*Tensor, error) {
	x := c.in[0]
	switch x.DType {
	case Float32:
		return []*Tensor{unaryApply(x, reluT[float32])}, nil
	case Float64:
		return []*Tensor{unaryApply(x, reluT[float64])}, nil
	case Int64:
		return []*Tensor{unaryApply(x, reluT[int64])}, nil
	case Int32:
		return []*Tensor{unaryApply(x, reluT[int32])}, nil
	case Int8:
		return []*Tensor{unaryApply(x, reluT[int8])}, nil
	}
	return nil, unsupported(x.DType)
}

func reluT[T number](v T) T {
	if v > 0 {
		return v
	}
	// -0.0 and NaN: max(x, 0) in PyTorch gives 0 for -0.0 and keeps NaN.
	if v != v {
		return v
	}
	return 0
}

func neg(c *call) ([]*Tensor, error) {
	x := c.in[0]
	switch x.DType {
	case Float32:
		return []*Tensor{unaryApply(x, negT[float32])}, nil
	case Float64:
		return []*Tensor{unaryApply(x, negT[float64])}, nil
	case Int64:
		return []*Tensor{unaryApply(x, negT[int64])}, nil
	case Int32:
		return []*Tensor{unaryApply(x, negT[int32])}, nil
	case Int8:
		return []*Tensor{unaryApply(x, negT[int8])}, nil
	}
	return nil, unsupported(x.DType)
}

func negT[T number](v T) T { return -v }

// sign is ONNX Sign: -1, 0 or 1 by the sign of X (NaN stays NaN, as in
// torch.sign).
func sign(c *call) ([]*Tensor, error) {
	x := c.in[0]
	switch x.DType {
	case Float32:
		return []*Tensor{unaryApply(x, signT[float32])}, nil
	case Float64:
		return []*Tensor{unaryApply(x, signT[float64])}, nil
	case Int64:
		return []*Tensor{unaryApply(x, signT[int64])}, nil
	case Int32:
		return []*Tensor{unaryApply(x, signT[int32])}, nil
	case Int8:
		return []*Tensor{unaryApply(x, signT[int8])}, nil
	case Uint8:
		return []*Tensor{unaryApply(x, signT[uint8])}, nil
	}
	return nil, unsupported(x.DType)
}

func signT[T number](v T) T {
	var one T = 1
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -one // never reached for uint8
	case v == 0:
		return 0
	}
	return v // NaN
}

// abs is ONNX Abs. The most negative integer stays itself, as in
// two's complement (and numpy, torch and ONNX Runtime).
func abs(c *call) ([]*Tensor, error) {
	x := c.in[0]
	switch x.DType {
	case Float32:
		return []*Tensor{unaryApply(x, func(v float32) float32 { return float32(math.Abs(float64(v))) })}, nil
	case Float64:
		return []*Tensor{unaryApply(x, math.Abs)}, nil
	case Int64:
		return []*Tensor{unaryApply(x, absT[int64])}, nil
	case Int32:
		return []*Tensor{unaryApply(x, absT[int32])}, nil
	case Int8:
		return []*Tensor{unaryApply(x, absT[int8])}, nil
	case Uint8:
		return identity(c)
	}
	return nil, unsupported(x.DType)
}

func absT[T int64 | int32 | int8](v T) T {
	if v < 0 {
		return -v
	}
	return v
}

func not(c *call) ([]*Tensor, error) {
	x := c.in[0]
	if x.DType != Bool {
		return nil, unsupported(x.DType)
	}
	return []*Tensor{unaryApply(x, func(v bool) bool { return !v })}, nil
}

// logical returns the kernel of And or Or on bools.
func logical(and bool) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		a, b := c.in[0], c.in[1]
		if a.DType != Bool || b.DType != Bool {
			return nil, fmt.Errorf("%w: logical op on %s and %s, want bool", ErrDTypeMismatch, a.DType, b.DType)
		}
		if and {
			return one(binaryApply(a, b, func(x, y bool) bool { return x && y }))
		}
		return one(binaryApply(a, b, func(x, y bool) bool { return x || y }))
	}
}

// isNaN is ONNX IsNaN: bool output.
func isNaN(c *call) ([]*Tensor, error) {
	x := c.in[0]
	switch x.DType {
	case Float32:
		return []*Tensor{unaryApply(x, func(v float32) bool { return v != v })}, nil
	case Float64:
		return []*Tensor{unaryApply(x, func(v float64) bool { return v != v })}, nil
	}
	return nil, unsupported(x.DType)
}

// extremum returns the kernel of ONNX Max (max true) or Min: the
// elementwise maximum or minimum of its inputs, folded left to right with
// broadcasting; a NaN operand gives NaN.
func extremum(max bool) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		if err := sameDType(c.in...); err != nil {
			return nil, err
		}
		acc := c.in[0]
		for _, b := range c.in[1:] {
			var err error
			switch acc.DType {
			case Float32:
				acc, err = binaryApply(acc, b, pick[float32](max))
			case Float64:
				acc, err = binaryApply(acc, b, pick[float64](max))
			case Int64:
				acc, err = binaryApply(acc, b, pick[int64](max))
			case Int32:
				acc, err = binaryApply(acc, b, pick[int32](max))
			case Int8:
				acc, err = binaryApply(acc, b, pick[int8](max))
			case Uint8:
				acc, err = binaryApply(acc, b, pick[uint8](max))
			default:
				return nil, unsupported(acc.DType)
			}
			if err != nil {
				return nil, err
			}
		}
		if len(c.in) == 1 {
			return identity(c)
		}
		return []*Tensor{acc}, nil
	}
}

// pick is Go's max (isMax) or min of two values: NaN if either is NaN.
func pick[T cmp.Ordered](isMax bool) func(x, y T) T {
	if isMax {
		return func(x, y T) T { return max(x, y) }
	}
	return func(x, y T) T { return min(x, y) }
}

// compare returns the kernel of Equal, Less or Greater: bool output.
func compare(op string) kernelFunc {
	return func(c *call) ([]*Tensor, error) {
		a, b := c.in[0], c.in[1]
		if err := sameDType(a, b); err != nil {
			return nil, err
		}
		switch a.DType {
		case Float32:
			return one(binaryApply(a, b, cmpFunc[float32](op)))
		case Float64:
			return one(binaryApply(a, b, cmpFunc[float64](op)))
		case Int64:
			return one(binaryApply(a, b, cmpFunc[int64](op)))
		case Int32:
			return one(binaryApply(a, b, cmpFunc[int32](op)))
		case Int8:
			return one(binaryApply(a, b, cmpFunc[int8](op)))
		case Uint8:
			return one(binaryApply(a, b, cmpFunc[uint8](op)))
		case Bool:
			if op == "Equal" {
				return one(binaryApply(a, b, func(x, y bool) bool { return x == y }))
			}
		}
		return nil, unsupported(a.DType)
	}
}

func cmpFunc[T number](op string) func(x, y T) bool {
	switch op {
	case "Less":
		return func(x, y T) bool { return x < y }
	case "Greater":
		return func(x, y T) bool { return x > y }
	case "LessOrEqual":
		return func(x, y T) bool { return x <= y }
	case "GreaterOrEqual":
		return func(x, y T) bool { return x >= y }
	}
	return func(x, y T) bool { return x == y }
}

// where is ONNX Where: cond ? x : y with three-way broadcasting.
func where(c *call) ([]*Tensor, error) {
	cond, x, y := c.in[0], c.in[1], c.in[2]
	if cond.DType != Bool {
		return nil, fmt.Errorf("%w: Where condition must be bool, got %s", ErrDTypeMismatch, cond.DType)
	}
	if err := sameDType(x, y); err != nil {
		return nil, err
	}
	shape, err := BroadcastShapes(cond.Shape, x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	if _, err := CheckedElements(shape); err != nil {
		return nil, err
	}
	ic := BroadcastIndex(cond.Shape, shape)
	ix := BroadcastIndex(x.Shape, shape)
	iy := BroadcastIndex(y.Shape, shape)
	// Pick, per output element, an index into the concatenation x ++ y.
	nx := x.Len()
	idx := make([]int, len(ic))
	for i := range idx {
		if cond.Bool[ic[i]] {
			idx[i] = ix[i]
		} else {
			idx[i] = nx + iy[i]
		}
	}
	both := NewTensor(x.DType, int64(nx+y.Len()))
	CopyElems(both, 0, x, 0, nx)
	CopyElems(both, nx, y, 0, y.Len())
	return []*Tensor{take(both, shape, idx)}, nil
}

// one adapts a (tensor, error) pair to a kernel's return.
func one(t *Tensor, err error) ([]*Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*Tensor{t}, nil
}
