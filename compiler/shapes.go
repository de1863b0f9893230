package compiler

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file holds shape arithmetic shared by the op table's shape rules:
// broadcasting with symbolic dims, axis normalisation, and SymInt, the
// element type of the small integer tensors that inference tracks.

// unknownDim is a dimension whose size inference could not determine ("?").
func unknownDim() Dim { return Dim{Size: -1} }

// SymDim returns a symbolic dimension named param.
func SymDim(param string) Dim { return Dim{Size: -1, Param: param} }

// scaledSep joins a constant factor and a symbol in the name of a scaled
// symbolic dim, "4·batch": a middle dot, which dim names in ONNX files do
// not use, so that a file's own symbol is never read as a product.
const scaledSep = "·"

// ScaledParam names the dim that is c times the dim named base ("4·batch";
// base itself for c = 1): torch's bmm attention merges batch and heads
// into one axis, [batch·heads, seq, d], which inference follows through
// Reshape's -1, Tile and the integer arithmetic of shape tensors, so that
// batch comes back when the axis is divided by heads again.
func ScaledParam(c int64, base string) string {
	if c == 1 {
		return base
	}
	return strconv.FormatInt(c, 10) + scaledSep + base
}

// SplitScaledParam returns the factor and base symbol of a dim name
// (ScaledParam's inverse): 4 and "batch" for "4·batch", 1 and p for any
// other p.
func SplitScaledParam(p string) (int64, string) {
	num, base, ok := strings.Cut(p, scaledSep)
	if !ok || base == "" {
		return 1, p
	}
	c, err := strconv.ParseInt(num, 10, 64)
	if err != nil || c < 2 || strconv.FormatInt(c, 10) != num {
		return 1, p
	}
	return c, base
}

// scaledSym returns k times the symbolic s (a SymInt with Param set), or
// unknown when k is not positive.
func scaledSym(s SymInt, k int64) SymInt {
	c, base := SplitScaledParam(s.Param)
	if k <= 0 || c > math.MaxInt64/k {
		return symUnknown()
	}
	return SymInt{Param: ScaledParam(c*k, base)}
}

// String renders a shape as the textual IR does: "[batch, sequence, 256]",
// "[]" for a scalar and "[*]" when the rank is unknown.
func (s Shape) String() string {
	if s == nil {
		return "[*]"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Rank is the number of dims, or -1 when the rank is unknown (nil shape).
func (s Shape) Rank() int {
	if s == nil {
		return -1
	}
	return len(s)
}

// Static returns the sizes when every dim is known.
func (s Shape) Static() ([]int64, bool) {
	if s == nil {
		return nil, false
	}
	out := make([]int64, len(s))
	for i, d := range s {
		if !d.Known() {
			return nil, false
		}
		out[i] = d.Size
	}
	return out, true
}

// Equal reports whether two shapes are identical, symbol names included.
func (s Shape) Equal(t Shape) bool {
	if (s == nil) != (t == nil) || len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone copies the shape, keeping nil (unknown rank) as nil.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

// String renders "name: f32[batch, 3]".
func (v *Value) String() string {
	return fmt.Sprintf("%s: %s%s", v.Name, v.DType, v.Shape)
}

// Clone returns a deep copy of the value.
func (v *Value) Clone() *Value {
	if v == nil {
		return nil
	}
	return &Value{Name: v.Name, DType: v.DType, Shape: v.Shape.Clone()}
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("%w: axis %d out of range for rank %d", ErrShapeMismatch, axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// broadcastDim combines two dims under numpy broadcasting. A symbolic dim
// against a known size other than 1 resolves to the known size, since the
// symbol must equal it at run time for the graph to be valid.
func broadcastDim(a, b Dim) (Dim, error) {
	switch {
	case a == b:
		return a, nil
	case a.Known() && a.Size == 1:
		return b, nil
	case b.Known() && b.Size == 1:
		return a, nil
	case a.Known() && b.Known():
		return Dim{}, fmt.Errorf("%w: cannot broadcast %d against %d", ErrShapeMismatch, a.Size, b.Size)
	case a.Known():
		return a, nil
	case b.Known():
		return b, nil
	case a.Param != "" && b.Param == "":
		// b is "?": it may be 1 (giving a) or equal to a.
		return a, nil
	case b.Param != "" && a.Param == "":
		return b, nil
	}
	// Two different symbols: valid only if one is 1 at run time or they
	// are equal; the result is not expressible without new symbols.
	return unknownDim(), nil
}

// broadcastShapes applies multidirectional (numpy) broadcasting. Any
// unknown-rank input makes the result unknown-rank.
func broadcastShapes(shapes ...Shape) (Shape, error) {
	rank := 0
	for _, s := range shapes {
		if s == nil {
			return nil, nil
		}
		rank = max(rank, len(s))
	}
	out := make(Shape, rank)
	for i := range out {
		out[i] = Dim{Size: 1}
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			r, err := broadcastDim(out[off+i], d)
			if err != nil {
				return nil, fmt.Errorf("broadcasting %s: %w", shapesString(shapes), err)
			}
			out[off+i] = r
		}
	}
	return out, nil
}

func shapesString(shapes []Shape) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = s.String()
	}
	return strings.Join(parts, " and ")
}

// dimsMatch reports whether two dims could be equal at run time.
func dimsMatch(a, b Dim) bool {
	if a.Known() && b.Known() {
		return a.Size == b.Size
	}
	return true
}

// dimProduct is a product of dims kept as a constant times a multiset of
// symbols, so that Reshape's -1 can be solved symbolically:
// [batch, sequence, 4, 64] reshaped to [batch, sequence, -1] gives 256,
// [batch, 4, sequence, 8] reshaped to [-1, sequence, 8] gives 4·batch
// (ScaledParam), and that reshaped to [-1, 4, sequence, 8] batch again.
type dimProduct struct {
	c       int64
	syms    map[string]int
	unknown bool
}

func productOf(dims []Dim) dimProduct {
	p := dimProduct{c: 1, syms: map[string]int{}}
	for _, d := range dims {
		p.mul(d)
	}
	return p
}

func (p *dimProduct) mul(d Dim) {
	switch {
	case d.Param != "":
		c, base := SplitScaledParam(d.Param)
		p.c *= c
		p.syms[base]++
	case d.Size < 0:
		p.unknown = true
	default:
		p.c *= d.Size
	}
}

// div returns p/q as a dim when it is a known size or a single symbol
// times a positive constant.
func (p dimProduct) div(q dimProduct) Dim {
	if p.unknown || q.unknown || q.c == 0 || p.c%q.c != 0 {
		return unknownDim()
	}
	rest := map[string]int{}
	for s, n := range p.syms {
		rest[s] = n
	}
	for s, n := range q.syms {
		if rest[s] < n {
			return unknownDim()
		}
		rest[s] -= n
	}
	c := p.c / q.c
	var left []string
	for s, n := range rest {
		for range n {
			left = append(left, s)
		}
	}
	switch {
	case len(left) == 0:
		return Dim{Size: c}
	case len(left) == 1 && c >= 1:
		return SymDim(ScaledParam(c, left[0]))
	}
	return unknownDim()
}

// SymInt is one element of a small integer tensor as shape inference knows
// it: a constant, a symbolic dimension (what Shape yields for a dynamic
// axis), or unknown. The zero value is the constant 0. Booleans (from
// Equal) are carried as 0 and 1.
type SymInt struct {
	Val     int64
	Param   string // symbolic dimension name; Val is meaningless when set
	Unknown bool
}

// IsConst reports whether the element has a known constant value.
func (s SymInt) IsConst() bool { return !s.Unknown && s.Param == "" }

func (s SymInt) String() string {
	switch {
	case s.Unknown:
		return "?"
	case s.Param != "":
		return s.Param
	}
	return fmt.Sprint(s.Val)
}

// symFromDim converts a dimension to a SymInt.
func symFromDim(d Dim) SymInt {
	switch {
	case d.Param != "":
		return SymInt{Param: d.Param}
	case d.Size < 0:
		return SymInt{Unknown: true}
	}
	return SymInt{Val: d.Size}
}

// dimFromSym converts a SymInt used as a size back into a Dim; negative or
// unknown values give "?".
func dimFromSym(s SymInt) Dim {
	switch {
	case s.Param != "":
		return SymDim(s.Param)
	case s.Unknown || s.Val < 0:
		return unknownDim()
	}
	return Dim{Size: s.Val}
}

// symUnknown is an element whose value inference does not know.
func symUnknown() SymInt { return SymInt{Unknown: true} }
