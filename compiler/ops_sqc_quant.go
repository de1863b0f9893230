package compiler

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/internal/gelu"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// OpDef of sqc.QLinear, the quantised dense layer the quantisation passes
// make from sqc.Linear and that compiler/exec and generated packages run on
// runtime/qgemm's INT8 GEMM (listed in sqcOps).
//
// sqc.QLinear(x, w, w_scale[, bias[, residual]]) {act_mode, act_scale,
// act_zero_point, act, residual_op}: x f32 [..., K]; w i8 [K, N], symmetric per output
// channel; w_scale f32 [N]; bias f32 [N] and residual f32 [..., N] optional
// ("" when absent). y f32 [..., N]. For each row r of x (the leading dims
// flattened) and column n, with every float32 operation rounded on its own
// (no fused multiply-add):
//
//	act_mode "static" (the default; act_scale s > 0, act_zero_point z in [0, 255]):
//	    xq[r,k]  = qgemm.QuantizeU8(x[r,k], float32(1)/s, z)
//	             = clamp(roundEven(clamp(x*(1/s), -65536, 65536)) + z, 0, 255)
//	    colScale = float32(s * w_scale[n]);  rowScale = none;  zp = z
//	act_mode "dynamic" (per token; nn.RowQuantParams):
//	    lo = min(0, min_k x[r,k]), hi = max(0, max_k x[r,k])   (NaNs ignored)
//	    s_r = (hi - lo)/255 (1 if that is 0), zp = clamp(roundEven(-lo/s_r), 0, 255)
//	    xq[r,k]  = qgemm.QuantizeU8(x[r,k], float32(1)/s_r, zp)
//	    colScale = w_scale[n];  rowScale = s_r
//	then (qgemm's Epilogue, in this order):
//	    acc = sum_k int32(xq[r,k])*int32(w[k,n]) - zp*sum_k int32(w[k,n])   (int32, exact)
//	    v   = float32(acc) * colScale
//	    v   = v * rowScale                 (dynamic)
//	    v   = v + bias[n]                  (if bias)
//	    v   = gelu.Gelu(v)                 (act "gelu": internal/gelu, abs. error vs erf-GELU < 3e-7)
//	    v   = gelu.GeluTanh(v)             (act "gelu_tanh": internal/gelu, abs. error vs tanh-GELU < 3e-7)
//	    v   = gelu.GeluShort(v)            (act "gelu_u8": abs. error vs erf-GELU < gelu.ShortMaxError;
//	                                        u8 output only, out_scale >= gelu.ShortMinStep:
//	                                        passes.ShortenGeluForU8 chooses it)
//	    v   = gelu.GeluTanhShort(v)        (act "gelu_tanh_u8": likewise, for the tanh GELU)
//	    v   = qgemm.Relu(v)                (act "relu": v if v > 0 or NaN, else +0)
//	    v   = expf.Silu(v)                 (act "silu": internal/expf, within 4 ulp of x*sigmoid(x))
//	    v   = v + residual[r,n]            (if residual; residual_op "add", the default)
//	    v   = v * residual[r,n]            (if residual and residual_op "mul": a gated
//	                                        feed-forward's product, GEGLU, ReGLU or SwiGLU)
//	    y[r,n] = v
//
// The FP32 interpreter computes exactly this with the same Go functions, so
// the INT8 engine's output equals it bit for bit.
//
// Quantised forms (passes.MaterializeQuantize and WriteU8Directly), which
// compute the same bits:
//   - x may be u8 [..., K], already quantised with the node's act_scale and
//     act_zero_point (static: by an sqc.Quantize of the same parameters or
//     a producer's u8 output) or per token (dynamic: by a dynamic
//     sqc.Quantize, whose row_scale f32 [...] and row_zero_point i32 [...]
//     are then inputs 5 and 6); xq above is then x itself.
//   - with out_scale s_o and out_zero_point z_o, y is u8 [..., N]:
//     y[r,n] = qgemm.QuantizeU8(v, float32(1)/s_o, z_o), the f32 v never
//     stored.

// QLinear attribute values.
const (
	QLinearStatic  = "static"
	QLinearDynamic = "dynamic"

	// residual_op: the residual is added (the default) or multiplies.
	QLinearResidualAdd = "add"
	QLinearResidualMul = "mul"
)

// QLinearMulResidual reports whether the node multiplies its output by
// the residual (residual_op "mul") instead of adding it.
func QLinearMulResidual(n *Node) bool {
	return attrString(n, "residual_op", QLinearResidualAdd) == QLinearResidualMul
}

func qlinearOp() *OpDef {
	return &OpDef{
		Name: "sqc.QLinear", Domain: DomainSqc,
		Doc: "Y = dequant(quantU8(X) @ W) with X f32 [..., K], W i8 [K, N] (symmetric per output channel), WScale f32 [N], optional Bias f32 [N] " +
			"and Residual f32 [..., N]; Y f32 [..., N]. Static: Xq = clamp(roundEven(clamp(X*(1/act_scale), ±65536)) + act_zero_point, 0, 255), " +
			"acc = Xq@W - act_zero_point*colsum(W) (int32), v = float32(acc)*float32(act_scale*WScale[n]); dynamic: per row lo = min(0, min X), " +
			"hi = max(0, max X), s = (hi-lo)/255 (1 if 0), z = clamp(roundEven(-lo/s), 0, 255), Xq as static with s, z, v = float32(acc)*WScale[n]*s; " +
			"then v += Bias[n], v = gelu(v) if act = \"gelu\" (qgemm's float32 erf-GELU), gelu_tanh(v) if act = \"gelu_tanh\" (qgemm's float32 tanh-GELU), the same to u8 precision if act = \"gelu_u8\" or \"gelu_tanh_u8\" (degree-3 tables, abs. error < " + fmt.Sprint(gelu.ShortMaxError) + "; only with a u8 output of out_scale >= " + fmt.Sprint(gelu.ShortMinStep) + ") or relu(v) if act = \"relu\" (v if v > 0 or NaN, else +0), v += Residual (v *= Residual with residual_op = \"mul\"); every float32 op rounded separately.",
		MinInputs: 3, MaxInputs: 7, MinOutputs: 1, MaxOutputs: 1,
		Attrs: []AttrSpec{
			{Name: "act_mode", Kind: AttrString},
			{Name: "act_scale", Kind: AttrFloat},
			{Name: "act_zero_point", Kind: AttrInt},
			{Name: "act", Kind: AttrString},
			{Name: "residual_op", Kind: AttrString},
			{Name: "out_scale", Kind: AttrFloat},
			{Name: "out_zero_point", Kind: AttrInt},
		},
		// x is f32, or u8 already quantised (see QLinearInputQuantized);
		// y is f32, or u8 with out_scale (U8Output).
		DTypes: DTypeRule{In: []string{"", "i8", "f32", "f32", "f32", "f32", "i32"}, Out: []string{"attr"}, OutFromAttr: u8OutputDType(Float32)},
		Shape:  qlinearShape,
		Check:  qlinearCheck,
	}
}

// QLinearMode returns the node's act_mode ("static" when absent).
func QLinearMode(n *Node) string { return attrString(n, "act_mode", QLinearStatic) }

// QLinearAct returns the node's epilogue activation: its act attribute
// (absent: none) parsed with qgemm.ParseAct, so the IR, the interpreter,
// the INT8 engine and generated code name activations one way. An act the
// GEMM epilogue does not have is an error (the verifier reports it).
func QLinearAct(n *Node) (qgemm.Act, error) {
	return qgemm.ParseAct(attrString(n, "act", qgemm.ActNone.String()))
}

// EpilogueAct reports which GEMM epilogue activation a node computes, for
// the nodes a QLinear's epilogue absorbs (sqc.Gelu: the erf GELU, or the
// tanh GELU with approximate "tanh"; Relu; sqc.Silu), so passes and the
// INT8 engine fuse the same ones.
func EpilogueAct(n *Node) (qgemm.Act, bool) {
	switch n.Op {
	case "sqc.Gelu":
		switch GeluApproximate(n) {
		case GeluExact:
			return qgemm.ActGelu, true
		case GeluTanh:
			return qgemm.ActGeluTanh, true
		}
	case "Relu":
		return qgemm.ActRelu, true
	case "sqc.Silu":
		return qgemm.ActSilu, true
	}
	return qgemm.ActNone, false
}

// SetQLinearAct sets a QLinear's act attribute (removing it for none).
func SetQLinearAct(n *Node, act qgemm.Act) {
	if act == qgemm.ActNone {
		delete(n.Attrs, "act")
		return
	}
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	n.Attrs["act"] = StringAttr(act.String())
}

// describeU8Output names a node's output form for an error message.
func describeU8Output(u8 bool, scale float32) string {
	if !u8 {
		return "an f32 output"
	}
	return fmt.Sprintf("out_scale %g", scale)
}

func attrString(n *Node, name, def string) string {
	if a, ok := n.Attrs[name]; ok && a.Kind == AttrString {
		return a.String
	}
	return def
}

// QLinearRowParams returns the names of a QLinear's per-token row scales
// and zero points (inputs 5 and 6, given when its x is a dynamic
// sqc.Quantize's u8 output), or "" for none.
func QLinearRowParams(n *Node) (scale, zeroPoint string) {
	if len(n.Inputs) > 6 {
		return n.Inputs[5], n.Inputs[6]
	}
	return "", ""
}

func qlinearCheck(n *Node, _ int64) error {
	act, err := QLinearAct(n)
	if err != nil {
		return err
	}
	outScale, _, u8 := U8Output(n)
	if u8 {
		if err := checkU8Params(n, "out_scale", "out_zero_point"); err != nil {
			return err
		}
	}
	switch op := attrString(n, "residual_op", QLinearResidualAdd); {
	case op != QLinearResidualAdd && op != QLinearResidualMul:
		return fmt.Errorf("residual_op is %q, want %q or %q", op, QLinearResidualAdd, QLinearResidualMul)
	case op == QLinearResidualMul && (len(n.Inputs) < 5 || n.Inputs[4] == ""):
		return fmt.Errorf("residual_op %q without a residual (input 4) to multiply by", op)
	}
	if act.U8Only() && !(u8 && outScale >= gelu.ShortMinStep) {
		return fmt.Errorf("act %q needs a u8 output with out_scale >= %g (internal/gelu.ShortMinStep), has %s", act, gelu.ShortMinStep, describeU8Output(u8, outScale))
	}
	if rs, rz := QLinearRowParams(n); (rs == "") != (rz == "") || (rs != "" && QLinearMode(n) != QLinearDynamic) || len(n.Inputs) == 6 {
		return fmt.Errorf("row_scale and row_zero_point (inputs 5 and 6) come together, with dynamic act_mode only")
	}
	_, hasScale := n.Attrs["act_scale"]
	_, hasZero := n.Attrs["act_zero_point"]
	switch mode := QLinearMode(n); mode {
	case QLinearStatic:
		s := n.AttrFloat("act_scale", 0)
		if !hasScale || !(s > 0) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("static act_mode needs act_scale > 0 and finite, has %v", s)
		}
		if z := n.AttrInt("act_zero_point", 0); z < 0 || z > 255 {
			return fmt.Errorf("act_zero_point is %d, want 0..255", z)
		}
	case QLinearDynamic:
		if hasScale || hasZero {
			return fmt.Errorf("dynamic act_mode takes no act_scale or act_zero_point")
		}
	default:
		return fmt.Errorf("act_mode is %q, want %q or %q", mode, QLinearStatic, QLinearDynamic)
	}
	return nil
}

func qlinearShape(a *InferArgs) ([]Inferred, error) {
	x, w := a.in(0).Shape, a.in(1).Shape
	if err := requireRank("sqc.QLinear weight", w, 2); err != nil {
		return nil, err
	}
	for _, vec := range []struct {
		i    int
		what string
	}{{2, "weight scale"}, {3, "bias"}} {
		if !a.present(vec.i) {
			continue
		}
		s, what := a.in(vec.i).Shape, vec.what
		if err := requireRank("sqc.QLinear "+what, s, 1); err != nil {
			return nil, err
		}
		if w != nil && s != nil && !dimsMatch(s[0], w[1]) {
			return nil, fmt.Errorf("%w: sqc.QLinear %s %s for weight %s", ErrShapeMismatch, what, s, w)
		}
	}
	if x == nil || w == nil {
		return one(nil), nil
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("%w: sqc.QLinear of a scalar", ErrShapeMismatch)
	}
	if !dimsMatch(x[len(x)-1], w[0]) {
		return nil, fmt.Errorf("%w: sqc.QLinear input %s does not match weight %s", ErrShapeMismatch, x, w)
	}
	out := x.Clone()
	out[len(out)-1] = w[1]
	if r := a.in(4); r.Present && r.Shape != nil {
		match := len(r.Shape) == len(out)
		for i := 0; match && i < len(out); i++ {
			match = dimsMatch(r.Shape[i], out[i])
		}
		if !match {
			return nil, fmt.Errorf("%w: sqc.QLinear residual %s, want the output's shape %s", ErrShapeMismatch, r.Shape, out)
		}
	}
	return one(out), nil
}
