package interp

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/ops"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// The reference of sqc.QLinear (compiler/ops_sqc_quant.go): quantise the
// activations with runtime/nn's functions, multiply in exact int32 with a
// plain loop of this file's own, and finish with qgemm's pure-Go epilogue,
// so that it computes the op's definition bit for bit and the INT8
// engine (compiler/exec), whose GEMM kernels are checked against the same
// epilogue, must agree with it exactly. Not fake quantisation: the integer
// product is the real one.
func init() {
	sqcKernels["sqc.QLinear"] = sqcKernel("sqc.QLinear", qlinear)
	sqcKernels["sqc.Quantize"] = sqcKernel("sqc.Quantize", quantize)
}

// quantize is sqc.Quantize: the quantisation qlinear applies to an f32
// input, with the same runtime/nn functions.
func quantize(c *call) ([]*compiler.Tensor, error) {
	x := c.in[0]
	if x.DType != compiler.Float32 || len(x.Shape) == 0 {
		return nil, fmt.Errorf("%w: Quantize wants x f32 [..., K], has %s %v", compiler.ErrDTypeMismatch, x.DType, x.Shape)
	}
	op, _ := compiler.LookupOp("sqc.Quantize")
	if err := op.CheckAttrs(c.node, 0); err != nil {
		return nil, fmt.Errorf("%w: Quantize: %v", compiler.ErrMalformed, err)
	}
	k := int(x.Shape[len(x.Shape)-1])
	lead := x.Shape[:len(x.Shape)-1]
	rows := int(compiler.NumElements(lead))
	y := compiler.NewTensor(compiler.Uint8, x.Shape...)
	if compiler.QuantizeMode(c.node) == compiler.QLinearDynamic {
		scales, zps := compiler.NewTensor(compiler.Float32, lead...), compiler.NewTensor(compiler.Int32, lead...)
		nn.QuantizeRowsU8(y.U8, k, x.F32, k, rows, k, scales.F32, zps.I32)
		return []*compiler.Tensor{y, scales, zps}, nil
	}
	s := c.node.AttrFloat("scale", 0)
	nn.QuantizeU8(y.U8, k, x.F32, k, rows, k, 1/s, int32(c.node.AttrInt("zero_point", 0)))
	return []*compiler.Tensor{y}, nil
}

func qlinear(c *call) ([]*compiler.Tensor, error) {
	x, w, wScale := c.in[0], c.in[1], c.in[2]
	var bias, residual *compiler.Tensor
	if len(c.in) > 3 {
		bias = c.in[3]
	}
	if len(c.in) > 4 {
		residual = c.in[4]
	}
	quantized := x.DType == compiler.Uint8 // by an sqc.Quantize or a producer writing u8
	var rowScale, rowZP *compiler.Tensor
	if len(c.in) > 6 {
		rowScale, rowZP = c.in[5], c.in[6]
	}
	if (x.DType != compiler.Float32 && !quantized) || w.DType != compiler.Int8 || wScale.DType != compiler.Float32 ||
		(bias != nil && bias.DType != compiler.Float32) || (residual != nil && residual.DType != compiler.Float32) {
		return nil, fmt.Errorf("%w: QLinear wants x f32, w i8, w_scale f32, bias and residual f32", compiler.ErrDTypeMismatch)
	}
	if len(x.Shape) == 0 || len(w.Shape) != 2 || x.Shape[len(x.Shape)-1] != w.Shape[0] {
		return nil, fmt.Errorf("%w: QLinear x %v with w %v (want x [..., K], w [K, N])", compiler.ErrShapeMismatch, x.Shape, w.Shape)
	}
	k, n := int(w.Shape[0]), int(w.Shape[1])
	for _, v := range []*compiler.Tensor{wScale, bias} {
		if v != nil && (len(v.Shape) != 1 || v.Len() != n) {
			return nil, fmt.Errorf("%w: QLinear w_scale or bias %v for %d outputs", compiler.ErrShapeMismatch, v.Shape, n)
		}
	}
	shape := slices.Clone(x.Shape)
	shape[len(shape)-1] = int64(n)
	if residual != nil && !slices.Equal(residual.Shape, shape) {
		return nil, fmt.Errorf("%w: QLinear residual %v, output %v", compiler.ErrShapeMismatch, residual.Shape, shape)
	}
	if err := qlinearAttrsValid(c.node); err != nil {
		return nil, err
	}
	if _, err := ops.CheckedElements(shape); err != nil {
		return nil, err
	}
	rows := int(compiler.NumElements(x.Shape[:len(x.Shape)-1]))
	y := compiler.NewTensor(compiler.Float32, shape...)
	outScale, outZP, outU8 := compiler.U8Output(c.node)

	// The epilogue the engine's qgemm.Linear applies, from the same
	// constants: ColSum of the unpacked weights, B unpacked otherwise.
	lin := &qgemm.Linear{B: qgemm.PackedB{K: k, N: n, ColSum: make([]int32, n)}}
	io := &qgemm.LinearIO{Rows: rows, OutF32: y.F32}
	for p := range k {
		for j, v := range w.I8[p*n : (p+1)*n] {
			lin.B.ColSum[j] += int32(v)
		}
	}
	xq := make([]uint8, rows*k)
	if quantized {
		xq = x.U8
	}
	switch compiler.QLinearMode(c.node) {
	case compiler.QLinearStatic:
		s := c.node.AttrFloat("act_scale", 0)
		lin.AZeroPoint = int32(c.node.AttrInt("act_zero_point", 0))
		if !quantized {
			nn.QuantizeU8(xq, k, x.F32, k, rows, k, 1/s, lin.AZeroPoint)
		}
		lin.Scale = make([]float32, n)
		for j, ws := range wScale.F32 {
			lin.Scale[j] = s * ws
		}
	case compiler.QLinearDynamic:
		io.RowScale, io.RowZeroPoint = make([]float32, rows), make([]int32, rows)
		switch {
		case !quantized:
			nn.QuantizeRowsU8(xq, k, x.F32, k, rows, k, io.RowScale, io.RowZeroPoint)
		case rowScale == nil || rowScale.DType != compiler.Float32 || rowScale.Len() != rows ||
			rowZP.DType != compiler.Int32 || rowZP.Len() != rows:
			return nil, fmt.Errorf("%w: dynamic QLinear of a u8 x needs row_scale f32 and row_zero_point i32 with one value per row", compiler.ErrDTypeMismatch)
		default:
			io.RowScale, io.RowZeroPoint = rowScale.F32, rowZP.I32
		}
		lin.Scale = wScale.F32
	}
	if bias != nil {
		lin.Bias = bias.F32
	}
	act, err := compiler.QLinearAct(c.node)
	if err != nil {
		return nil, fmt.Errorf("%w: QLinear %v", compiler.ErrMalformed, err)
	}
	lin.Act = act
	lin.MulResidual = compiler.QLinearMulResidual(c.node)
	if residual != nil {
		io.Residual = residual.F32
	}
	ep := &qgemm.Epilogue{}
	lin.Epilogue(ep, io)

	// Exact int32 product and epilogue, a block of rows per task.
	const block = 16
	err = ops.ParallelFor((rows+block-1)/block, c.threads, func(b int) {
		r0, r1 := b*block, min(rows, (b+1)*block)
		acc := make([]int32, (r1-r0)*n)
		for r := r0; r < r1; r++ {
			out := acc[(r-r0)*n : (r-r0+1)*n]
			for p, a := range xq[r*k : (r+1)*k] {
				av := int32(a)
				for j, v := range w.I8[p*n : (p+1)*n] {
					out[j] += av * int32(v)
				}
			}
		}
		qgemm.EpilogueGo(ep, acc, n, r0, 0, r1-r0, n)
	})
	if err != nil {
		return nil, err
	}
	if outU8 { // what qgemm's u8 epilogue writes: the same v, quantised
		q := compiler.NewTensor(compiler.Uint8, shape...)
		nn.QuantizeU8(q.U8, n, y.F32, n, rows, n, 1/outScale, outZP)
		return []*compiler.Tensor{q}, nil
	}
	return []*compiler.Tensor{y}, nil
}

// qlinearAttrsValid rejects attributes the op table's check would (the
// interpreter may run graphs nobody verified).
func qlinearAttrsValid(n *compiler.Node) error {
	op, _ := compiler.LookupOp("sqc.QLinear")
	if err := op.CheckAttrs(n, 0); err != nil {
		return fmt.Errorf("%w: QLinear: %v", compiler.ErrMalformed, err)
	}
	return nil
}
