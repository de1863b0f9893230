package onnx

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// matMulNBits: ONNX Runtime's MatMulNBits (transformers.js' model_q4.onnx
// and model_q4f16.onnx, ORT's MatMul4BitsQuantizer): Y = A · W (+ bias)
// with W [K, N] stored as N columns of ceil(K / block_size) blocks of
// `bits`-bit codes, lowest bits first, each block with a scale and a
// zero point (packed codes of the same width, one row of blocks per
// column; 2^(bits-1) when absent). W is dequantised here, exactly:
// float32(q - zero point) * scale, which is what the op multiplies by
// (accuracy_level only lets ONNX Runtime compute the product in lower
// precision), and the node becomes MatMul (and Add) of the float weight,
// which sqc quantises itself.
func (e *contribExpander) matMulNBits(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	if input(n, 4) != "" {
		return fmt.Errorf("%w: g_idx (act-order column indices) is not supported", errContrib)
	}
	bits, bs := n.AttrInt("bits", 4), n.AttrInt("block_size", 0)
	k, cols := n.AttrInt("K", 0), n.AttrInt("N", 0)
	if bits != 4 && bits != 8 {
		return fmt.Errorf("%w: bits = %d (sqc reads 4 and 8)", errContrib, bits)
	}
	if bs < 16 || bs&(bs-1) != 0 || k <= 0 || cols <= 0 || k > 1<<24 || cols > 1<<24 {
		return fmt.Errorf("%w: block_size %d, K %d, N %d (want a power of 2 >= 16 and positive sizes)", compiler.ErrMalformed, bs, k, cols)
	}
	blocks := (k + bs - 1) / bs
	blob := bs * bits / 8
	constant := func(i int, what string, dt compiler.DType, elems int64) (*compiler.Tensor, error) {
		t, ok := e.g.Initializers[input(n, i)]
		if !ok {
			return nil, fmt.Errorf("%w: %s (input %d) must be an initializer", errContrib, what, i)
		}
		if t.DType != dt || compiler.NumElements(t.Shape) != elems {
			return nil, fmt.Errorf("%w: %s is %s%v, want %s with %d elements for K %d, N %d, block_size %d, bits %d",
				compiler.ErrShapeMismatch, what, t.DType, t.Shape, dt, elems, k, cols, bs, bits)
		}
		return t, nil
	}
	codes, err := constant(1, "B", compiler.Uint8, cols*blocks*blob)
	if err != nil {
		return err
	}
	scales, err := constant(2, "scales", compiler.Float32, cols*blocks)
	if err != nil {
		return err
	}
	var zps *compiler.Tensor
	zpRow := (blocks*bits + 7) / 8 // bytes of one column's packed zero points
	if input(n, 3) != "" {
		if t, ok := e.g.Initializers[input(n, 3)]; ok && t.DType != compiler.Uint8 {
			return fmt.Errorf("%w: zero points of type %s (sqc reads packed uint8 ones)", errContrib, t.DType)
		}
		if zps, err = constant(3, "zero_points", compiler.Uint8, cols*zpRow); err != nil {
			return err
		}
	}
	// code returns the bits-wide value number i of packed bytes p.
	code := func(p []uint8, i int64) int64 {
		if bits == 8 {
			return int64(p[i])
		}
		return int64(p[i/2]>>(4*(i%2))) & 0xF
	}
	w := compiler.NewTensor(compiler.Float32, k, cols)
	for c := range cols {
		for b := range blocks {
			zp := int64(1) << (bits - 1)
			if zps != nil {
				zp = code(zps.U8[c*zpRow:(c+1)*zpRow], b)
			}
			s := scales.F32[c*blocks+b]
			blk := codes.U8[(c*blocks+b)*blob : (c*blocks+b+1)*blob]
			for i := range min(bs, k-b*bs) {
				w.F32[(b*bs+i)*cols+c] = float32(code(blk, i)-zp) * s
			}
		}
	}
	name := e.b.Fresh(scope(n) + "/dequantized_weight")
	e.g.Initializers[name] = w
	y := e.b.Op("MatMul", scope(n)+"/MatMul", n.Inputs[0], name)
	if bias := input(n, 5); bias != "" {
		y = e.b.Op("Add", scope(n)+"/bias", y, bias)
	}
	e.finish(n, y)
	return nil
}

// dynamicQuantizeMatMul: ONNX Runtime's DynamicQuantizeMatMul(A, B,
// b_scale[, b_zero_point[, bias]]), the fusion its optimizer makes of
// quantize_dynamic's chain, written back as that chain: A's u8 codes by
// DynamicQuantizeLinear, then as matMulIntegerToFloat. Its kernel computes
// exactly this (the codes' int32 product scaled by a_scale * b_scale, then
// the bias); passes.DequantizeIntegerOps then reads it as quantize_dynamic's
// own.
func (e *contribExpander) dynamicQuantizeMatMul(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	s := scope(n)
	q, scale, zp := e.b.Fresh(s+"/A_quantized"), e.b.Fresh(s+"/A_scale"), e.b.Fresh(s+"/A_zero_point")
	e.g.Nodes = append(e.g.Nodes, &compiler.Node{Name: s + "/DynamicQuantizeLinear", Op: "DynamicQuantizeLinear", Inputs: []string{n.Inputs[0]},
		Outputs: []string{q, scale, zp}, Attrs: map[string]compiler.Attr{}})
	e.finish(n, e.integerMatMul(s, q, n.Inputs[1], zp, input(n, 3), scale, n.Inputs[2], input(n, 4)))
	return nil
}

// matMulIntegerToFloat: ONNX Runtime's MatMulIntegerToFloat(A, B, a_scale,
// b_scale[, a_zero_point[, b_zero_point[, bias]]]) = float32(MatMulInteger(A,
// B, a_zero_point, b_zero_point)) * (a_scale * b_scale) + bias, written
// as those ops: quantize_dynamic's chain, which its optimizer fuses into
// this.
func (e *contribExpander) matMulIntegerToFloat(n *compiler.Node) error {
	if err := need(n, 0, 1, 2, 3); err != nil {
		return err
	}
	e.finish(n, e.integerMatMul(scope(n), n.Inputs[0], n.Inputs[1], input(n, 4), input(n, 5), n.Inputs[2], n.Inputs[3], input(n, 6)))
	return nil
}

// integerMatMul emits quantize_dynamic's chain: Cast<f32>(MatMulInteger(a,
// b, aZP, bZP)) * (aScale * bScale), plus bias when given.
func (e *contribExpander) integerMatMul(s, a, b, aZP, bZP, aScale, bScale, bias string) string {
	in := []string{a, b, aZP, bZP}
	for len(in) > 2 && in[len(in)-1] == "" {
		in = in[:len(in)-1]
	}
	acc := e.b.Op("MatMulInteger", s+"/MatMulInteger", in...)
	f := e.b.OpAttrs("Cast", s+"/Cast", map[string]compiler.Attr{"to": compiler.IntAttr(compiler.Float32.ONNX())}, acc)
	y := e.b.Op("Mul", s+"/output_scale", f, e.b.Op("Mul", s+"/scales", aScale, bScale))
	if bias != "" {
		y = e.b.Op("Add", s+"/bias", y, bias)
	}
	return y
}

// bnb4Levels are the 16 values of bitsandbytes' 4-bit codes that
// MatMulBnb4 reads (quant_type 0: FP4, 1: NF4), in units of the block's
// absmax: ONNX Runtime's tables, as float32.
var bnb4Levels = [2][16]float32{
	{0, 5.208333333e-03, 0.66666667, 1, 0.33333333, 0.5, 0.16666667, 0.25,
		float32(math.Copysign(0, -1)), -5.208333333e-03, -0.66666667, -1, -0.33333333, -0.5, -0.16666667, -0.25},
	{-1, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0,
		0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1},
}

// matMulBnb4: ONNX Runtime's MatMulBnb4 (transformers.js' model_bnb4.onnx):
// Y = A · Wᵀ with W [N, K] stored row-major as 4-bit codes, two per byte
// (the high nibble first), in blocks of block_size values, each value
// float32(level[code] * absmax[block]), level FP4's or NF4's. W is
// dequantised here, exactly as ONNX Runtime's kernel does before its
// float32 GEMM, and the node becomes MatMul of the float weight.
func (e *contribExpander) matMulBnb4(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	k, cols, bs, qt := n.AttrInt("K", 0), n.AttrInt("N", 0), n.AttrInt("block_size", 0), n.AttrInt("quant_type", -1)
	if n.AttrInt("transB", 1) != 1 || n.AttrInt("training_mode", 0) != 0 {
		return fmt.Errorf("%w: transB = 0 or training_mode (sqc reads inference files, B as [N, K])", errContrib)
	}
	if qt != 0 && qt != 1 {
		return fmt.Errorf("%w: quant_type %d (0 FP4 or 1 NF4)", compiler.ErrMalformed, qt)
	}
	if bs < 16 || bs&(bs-1) != 0 || k <= 0 || cols <= 0 || k > 1<<24 || cols > 1<<24 {
		return fmt.Errorf("%w: block_size %d, K %d, N %d (want a power of 2 >= 16 and positive sizes)", compiler.ErrMalformed, bs, k, cols)
	}
	elems := k * cols
	codes, ok := e.g.Initializers[n.Inputs[1]]
	if !ok || codes.DType != compiler.Uint8 || compiler.NumElements(codes.Shape) != (elems+1)/2 {
		return fmt.Errorf("%w: B must be a u8 initializer of %d bytes for K %d, N %d", errContrib, (elems+1)/2, k, cols)
	}
	absmax, ok := e.g.Initializers[n.Inputs[2]]
	if !ok || absmax.DType != compiler.Float32 || compiler.NumElements(absmax.Shape) != (elems+bs-1)/bs {
		return fmt.Errorf("%w: absmax must be an f32 initializer of %d values for K %d, N %d, block_size %d", errContrib, (elems+bs-1)/bs, k, cols, bs)
	}
	levels := &bnb4Levels[qt]
	w := compiler.NewTensor(compiler.Float32, k, cols)
	for i := range elems { // element i of W [N, K] row-major
		code := codes.U8[i/2] >> 4
		if i%2 == 1 {
			code = codes.U8[i/2] & 0xF
		}
		w.F32[(i%k)*cols+i/k] = levels[code] * absmax.F32[i/bs]
	}
	name := e.b.Fresh(scope(n) + "/dequantized_weight")
	e.g.Initializers[name] = w
	e.finish(n, e.b.Op("MatMul", scope(n)+"/MatMul", n.Inputs[0], name))
	return nil
}
