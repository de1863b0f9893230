package ops

import (
	"fmt"
	"math"
)

// call is one node's execution: its node, its input tensors (nil for an
// omitted optional input), the node's opset, the goroutine budget and the
// size bound of Options.MaxElements.
type call struct {
	node        *Node
	in          []*Tensor
	opset       int64
	threads     int
	maxElements int64
}

// checkValueShape checks a shape computed from operand values against
// Options.MaxElements (and the general bound).
func (c *call) checkValueShape(shape []int64) error {
	n, err := CheckedElements(shape)
	if err != nil {
		return err
	}
	if c.maxElements > 0 && int64(n) > c.maxElements {
		return fmt.Errorf("%w: shape %v exceeds Options.MaxElements (%d)", ErrShapeMismatch, shape, c.maxElements)
	}
	return nil
}

// kernelFunc computes a node's outputs, one per node output (nil for an
// optional output nobody asked for). Kernels never modify their inputs;
// an output may share an input's storage (Reshape, Identity, ...).
type kernelFunc func(c *call) ([]*Tensor, error)

// kernelSpec is a kernel with the arity New checks: the first minIn inputs
// are required, at most maxIn may be given (-1: any number), and the node
// may name at most maxOut outputs.
type kernelSpec struct {
	fn           kernelFunc
	minIn, maxIn int
	maxOut       int
}

// kernels maps every op the package executes to its kernel. It is
// built once and only read.
var kernels = map[string]kernelSpec{
	"Gather": {gather, 2, 2, 1},
	"MatMul": {matmul, 2, 2, 1},
	"Gemm":   {gemm, 2, 3, 1},
	"Linear": {linear, 2, 3, 1},

	"Add":     {arithmetic("Add"), 2, 2, 1},
	"Sub":     {arithmetic("Sub"), 2, 2, 1},
	"Mul":     {arithmetic("Mul"), 2, 2, 1},
	"Div":     {arithmetic("Div"), 2, 2, 1},
	"Pow":     {pow, 2, 2, 1},
	"Sqrt":    {floatUnary(math.Sqrt), 1, 1, 1},
	"Erf":     {floatUnary(math.Erf), 1, 1, 1},
	"Tanh":    {floatUnary(math.Tanh), 1, 1, 1},
	"Sin":     {floatUnary(math.Sin), 1, 1, 1},
	"Cos":     {floatUnary(math.Cos), 1, 1, 1},
	"Sigmoid": {floatUnary(sigmoid), 1, 1, 1},
	"Silu":    {floatUnary(silu), 1, 1, 1},
	"Gelu":    {gelu, 1, 1, 1},
	"Relu":    {relu, 1, 1, 1},
	"Neg":     {neg, 1, 1, 1},
	"Not":     {not, 1, 1, 1},
	"Equal":   {compare("Equal"), 2, 2, 1},
	"Less":    {compare("Less"), 2, 2, 1},
	"Greater": {compare("Greater"), 2, 2, 1},
	"Where":   {where, 3, 3, 1},

	"GreaterOrEqual": {compare("GreaterOrEqual"), 2, 2, 1},
	"LessOrEqual":    {compare("LessOrEqual"), 2, 2, 1},
	"And":            {logical(true), 2, 2, 1},
	"Or":             {logical(false), 2, 2, 1},
	"Max":            {extremum(true), 1, -1, 1},
	"Min":            {extremum(false), 1, -1, 1},
	"Abs":            {abs, 1, 1, 1},
	"Log":            {floatUnary(math.Log), 1, 1, 1},
	"Ceil":           {floatUnary(math.Ceil), 1, 1, 1},
	"Floor":          {floatUnary(math.Floor), 1, 1, 1},
	"Sign":           {sign, 1, 1, 1},
	"IsNaN":          {isNaN, 1, 1, 1},
	"GatherND":       {gatherND, 2, 2, 1},
	"GatherElements": {gatherElements, 2, 2, 1},

	"ReduceMean":         {reduce(true), 1, 2, 1},
	"ReduceSum":          {reduce(false), 1, 2, 1},
	"LayerNormalization": {layerNorm, 2, 3, 3},
	"Softmax":            {softmax, 1, 1, 1},

	"Transpose": {transpose, 1, 1, 1},
	"Reshape":   {reshape, 1, 2, 1},
	"Unsqueeze": {unsqueeze, 1, 2, 1},
	"Squeeze":   {squeeze, 1, 2, 1},
	"Concat":    {concat, 1, -1, 1},
	"Slice":     {slice, 1, 5, 1},
	"Shape":     {shapeOp, 1, 1, 1},
	"Expand":    {expand, 2, 2, 1},
	"Tile":      {tile, 2, 2, 1},
	"Identity":  {identity, 1, 1, 1},
	"Cast":      {castKernel, 1, 1, 1},

	"Constant":        {constant, 0, 0, 1},
	"ConstantOfShape": {constantOfShape, 1, 1, 1},
	"Range":           {rangeOp, 3, 3, 1},
	"Einsum":          {einsum, 2, 2, 1},
	"CumSum":          {cumSum, 2, 2, 1},

	"DynamicQuantizeLinear": {dynamicQuantizeLinear, 1, 1, 3},
	"MatMulInteger":         {matMulInteger, 2, 4, 1},
	"QuantizeLinear":        {quantizeLinear, 2, 3, 1},
	"DequantizeLinear":      {dequantizeLinear, 2, 3, 1},
}
