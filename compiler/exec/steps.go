package exec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Step is one runtime call of a Program. The concrete types below are the
// whole vocabulary (the code generator switches on them); their exported
// fields are the call's constant arguments and buffer slots.
type Step interface {
	// Call names the runtime function, e.g. "qgemm.GEMM" or "nn.LayerNorm".
	Call() string
	// Source is the graph node the step computes (the first one when
	// nodes were fused into it).
	Source() string
	// Describe is a one-line listing of the call with slot names.
	Describe(slots []*Slot) string
	// Operands are the slots the step reads and writes (operands.go).
	Operands() Operands
	run(p *Program) error
}

// QuantizeStep quantises the f32 value X ([..., K]) to u8 rows of Kp bytes
// in Out ([..., Kp]): nn.QuantizeU8Parallel(pool, out, Kp, x, K, rows, K,
// InvScale, ZeroPoint).
type QuantizeStep struct {
	Node      string
	X, Out    SlotID
	K, Kp     int
	InvScale  float32
	ZeroPoint int32
	shape     []int64
}

// QuantizeRowsStep is dynamic per-token quantisation: nn.QuantizeRowsU8Parallel of
// X into Out, with the rows' scales and zero points in Scales (f32 [rows])
// and ZeroPoints (i32 [rows]).
type QuantizeRowsStep struct {
	Node               string
	X, Out             SlotID
	Scales, ZeroPoints SlotID
	K, Kp              int
	shape              []int64
}

// GEMMStep is qgemm's Engine.GEMM of the quantised activations A (u8
// [..., B.Kp], the input's leading dims kept) with the packed weights B,
// its Epilogue built from the fields: per-column Scale, ColSum (B.ColSum)
// with AZeroPoint or the per-row RowScale/RowZeroPoint slots (dynamic
// mode), optional Bias, Act and Residual (a slot of the output's shape).
// The output Out is f32 [..., B.N], or, when OutU8, u8 [..., OutKp]
// quantised with OutInvScale and OutZeroPoint for the next QLinear.
type GEMMStep struct {
	Node   string
	Weight string // the i8 initializer B was packed from
	A      SlotID
	B      *qgemm.PackedB

	AZeroPoint             int32
	RowScale, RowZeroPoint SlotID
	Scale                  []float32
	Bias                   []float32
	BiasName               string
	Act                    qgemm.Act
	Residual               SlotID

	Out          SlotID
	OutU8        bool
	OutKp        int
	OutInvScale  float32
	OutZeroPoint int32

	ep    qgemm.Epilogue // rebound to the buffers on every run
	shape []int64
}

// LinearF32Step is the float32 Linear of FP32 graphs: nn.LinearF32 of X
// ([..., K]) with W ([K, N]) and optional Bias into Out ([..., N]).
type LinearF32Step struct {
	Node     string
	Weight   string
	X, Out   SlotID
	K, N     int
	W, Bias  []float32
	BiasName string
	shape    []int64
}

// LayerNormStep is nn.LayerNorm of X over its last dim into Out (f32), or
// nn.LayerNormU8 when OutU8 is set: u8 rows of Kp bytes quantised with
// InvScale and ZeroPoint, plus Out unless it is NoSlot. When GammaU8 is
// set (an sqc.LayerNormDual), it is nn.LayerNormDual: Out with Params and
// OutU8 normalised with GammaU8 and BetaU8 instead, from the same row
// statistics; Out and OutU8 are then both slots.
type LayerNormStep struct {
	Node                string
	X, Out, OutU8       SlotID
	Params              nn.LayerNormParams
	GammaName, BetaName string
	// The u8 output's own gamma and beta (nil: Params'), and the
	// initializers they come from.
	GammaU8, BetaU8         []float32
	GammaU8Name, BetaU8Name string
	Kp                      int
	InvScale                float32
	ZeroPoint               int32
	shape                   []int64
}

// AttentionStep is nn.Attention of Q, K, V ([batch, seq, Heads*d]) with the
// optional additive Mask (broadcast to [batch, Heads, seqQ, seqK], keys
// contiguous) into Out. When Packed (sqc.Attention's qkv_packed), Q is one
// [batch, seq, 3*Heads*d] buffer holding Q, K and V side by side, K and V
// are NoSlot, and the kernel reads K and V at column offsets W and 2W of
// Q's rows (row stride 3W; see PackedLayout).
type AttentionStep struct {
	Node          string
	Q, K, V, Mask SlotID
	Packed        bool
	Heads         int
	Scale         float32
	Out           SlotID
	dims          nn.AttentionDims
}

// AttentionMaskStep is nn.AttentionMask of an i64 [batch, seq] mask into
// the f32 [batch, 1, 1, seq] additive mask Out.
type AttentionMaskStep struct {
	Node      string
	Mask, Out SlotID
	Fill      float32
}

// AddStep is nn.AddParallel: Out = A + B, where B's shape equals A's or is a
// suffix of it (leading ones dropped) or the other way round.
type AddStep struct {
	Node      string
	A, B, Out SlotID
	shape     []int64
}

// ActivationStep applies an elementwise activation (Func: ActGelu,
// ActGeluTanh, ActTanh, ActRelu; activation.go) to X into Out.
type ActivationStep struct {
	Node   string
	Func   string
	X, Out SlotID
}

// GatherStep is nn.Gather of f32 Data along Axis at the i64 Indices (ONNX
// Gather): embedding lookups and the classifier's first-token pick.
type GatherStep struct {
	Node               string
	Data, Indices, Out SlotID
	Axis               int
	shape              []int64
}

func (s *QuantizeStep) Call() string      { return "nn.QuantizeU8Parallel" }
func (s *QuantizeRowsStep) Call() string  { return "nn.QuantizeRowsU8Parallel" }
func (s *GEMMStep) Call() string          { return "qgemm.GEMM" }
func (s *LinearF32Step) Call() string     { return "nn.LinearF32" }
func (s *AttentionStep) Call() string     { return "nn.Attention" }
func (s *AttentionMaskStep) Call() string { return "nn.AttentionMask" }
func (s *AddStep) Call() string           { return "nn.AddParallel" }
func (s *GatherStep) Call() string        { return "nn.Gather" }
func (s *LayerNormStep) Call() string {
	if s.GammaU8 != nil {
		return "nn.LayerNormDual"
	}
	if s.OutU8 != NoSlot {
		return "nn.LayerNormU8"
	}
	return "nn.LayerNorm"
}
func (s *ActivationStep) Call() string { return "nn." + s.Activation().NN }

func (s *QuantizeStep) Source() string      { return s.Node }
func (s *QuantizeRowsStep) Source() string  { return s.Node }
func (s *GEMMStep) Source() string          { return s.Node }
func (s *LinearF32Step) Source() string     { return s.Node }
func (s *LayerNormStep) Source() string     { return s.Node }
func (s *AttentionStep) Source() string     { return s.Node }
func (s *AttentionMaskStep) Source() string { return s.Node }
func (s *AddStep) Source() string           { return s.Node }
func (s *ActivationStep) Source() string    { return s.Node }
func (s *GatherStep) Source() string        { return s.Node }

// slotName names a slot in listings ("_" for NoSlot).
func slotName(slots []*Slot, id SlotID) string {
	if id == NoSlot {
		return "_"
	}
	return slots[id].String()
}

func (s *QuantizeStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s; K=%d, Kp=%d, inv_scale=%g, zero_point=%d)",
		slotName(sl, s.Out), s.Call(), slotName(sl, s.X), s.K, s.Kp, s.InvScale, s.ZeroPoint)
}

func (s *QuantizeRowsStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s, %s, %s = %s(%s; K=%d, Kp=%d)", slotName(sl, s.Out), slotName(sl, s.Scales),
		slotName(sl, s.ZeroPoints), s.Call(), slotName(sl, s.X), s.K, s.Kp)
}

func (s *GEMMStep) Describe(sl []*Slot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s = %s(%s, %%%s [%dx%d, Kp=%d]", slotName(sl, s.Out), s.Call(), slotName(sl, s.A), s.Weight, s.B.K, s.B.N, s.B.Kp)
	if s.RowScale != NoSlot {
		fmt.Fprintf(&b, "; row_scale=%s, row_zero_point=%s", slotName(sl, s.RowScale), slotName(sl, s.RowZeroPoint))
	} else {
		fmt.Fprintf(&b, "; a_zero_point=%d", s.AZeroPoint)
	}
	if s.Bias != nil {
		fmt.Fprintf(&b, ", bias=%%%s", s.BiasName)
	}
	if s.Act != qgemm.ActNone {
		b.WriteString(", act=" + s.Act.String())
	}
	if s.Residual != NoSlot {
		fmt.Fprintf(&b, ", residual=%s", slotName(sl, s.Residual))
	}
	if s.OutU8 {
		fmt.Fprintf(&b, ", out=u8 Kp=%d inv_scale=%g zero_point=%d", s.OutKp, s.OutInvScale, s.OutZeroPoint)
	} else {
		b.WriteString(", out=f32")
	}
	b.WriteString(")")
	return b.String()
}

func (s *LinearF32Step) Describe(sl []*Slot) string {
	bias := ""
	if s.Bias != nil {
		bias = ", bias=%" + s.BiasName
	}
	return fmt.Sprintf("%s = %s(%s, %%%s [%dx%d]%s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X), s.Weight, s.K, s.N, bias)
}

func (s *LayerNormStep) Describe(sl []*Slot) string {
	outs := slotName(sl, s.Out)
	q := ""
	if s.OutU8 != NoSlot {
		outs += ", " + slotName(sl, s.OutU8)
		q = fmt.Sprintf(", Kp=%d, inv_scale=%g, zero_point=%d", s.Kp, s.InvScale, s.ZeroPoint)
		if s.GammaU8 != nil {
			u8 := ", gamma_u8=%" + s.GammaU8Name
			if s.BetaU8 != nil {
				u8 += ", beta_u8=%" + s.BetaU8Name
			}
			q = u8 + q
		}
	}
	beta := ""
	if s.Params.Beta != nil {
		beta = ", beta=%" + s.BetaName
	}
	return fmt.Sprintf("%s = %s(%s; N=%d, gamma=%%%s%s, eps=%g%s)", outs, s.Call(), slotName(sl, s.X), s.Params.N, s.GammaName, beta, s.Params.Epsilon, q)
}

func (s *AttentionStep) Describe(sl []*Slot) string {
	packed := ""
	if s.Packed {
		packed = ", qkv_packed"
	}
	return fmt.Sprintf("%s = %s(%s, %s, %s, %s; heads=%d, scale=%g%s)", slotName(sl, s.Out), s.Call(),
		slotName(sl, s.Q), slotName(sl, s.K), slotName(sl, s.V), slotName(sl, s.Mask), s.Heads, s.Scale, packed)
}

func (s *AttentionMaskStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s; fill=%g)", slotName(sl, s.Out), s.Call(), slotName(sl, s.Mask), s.Fill)
}

func (s *AddStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.A), slotName(sl, s.B))
}

func (s *ActivationStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s)", slotName(sl, s.Out), s.Call(), slotName(sl, s.X))
}

func (s *GatherStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s, %s; axis=%d)", slotName(sl, s.Out), s.Call(), slotName(sl, s.Data), slotName(sl, s.Indices), s.Axis)
}

// want checks a runtime operand: dtype, and last dim when cols > 0.
func want(t *compiler.Tensor, what string, dt compiler.DType, cols int) error {
	switch {
	case t.DType != dt:
		return fmt.Errorf("%w: %s is %s, want %s", compiler.ErrDTypeMismatch, what, t.DType, dt)
	case cols > 0 && (len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] != int64(cols)):
		return fmt.Errorf("%w: %s has shape %v, want last dim %d", compiler.ErrShapeMismatch, what, t.Shape, cols)
	}
	return nil
}

func (s *QuantizeStep) run(p *Program) error {
	x := p.bufs[s.X]
	if err := want(x, "QLinear input", compiler.Float32, s.K); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	out := p.bufs[s.Out]
	s.shape = withLast(s.shape, x.Shape, s.Kp)
	resize(out, compiler.Uint8, s.shape...)
	nn.QuantizeU8Parallel(p.pool, out.U8, s.Kp, x.F32, s.K, rows, s.K, s.InvScale, s.ZeroPoint)
	return nil
}

func (s *QuantizeRowsStep) run(p *Program) error {
	x := p.bufs[s.X]
	if err := want(x, "QLinear input", compiler.Float32, s.K); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	out, scales, zps := p.bufs[s.Out], p.bufs[s.Scales], p.bufs[s.ZeroPoints]
	s.shape = withLast(s.shape, x.Shape, s.Kp)
	resize(out, compiler.Uint8, s.shape...)
	resize(scales, compiler.Float32, int64(rows))
	resize(zps, compiler.Int32, int64(rows))
	nn.QuantizeRowsU8Parallel(p.pool, out.U8, s.Kp, x.F32, s.K, rows, s.K, scales.F32, zps.I32)
	return nil
}

func (s *GEMMStep) run(p *Program) error {
	a := p.bufs[s.A]
	rows, kp := rowsOf(a.Shape)
	if a.DType != compiler.Uint8 || len(a.Shape) == 0 || kp != s.B.Kp {
		return fmt.Errorf("internal error: quantised input %s%v, want u8[..., %d]", a.DType, a.Shape, s.B.Kp)
	}
	ep := &s.ep
	*ep = qgemm.Epilogue{
		AZeroPoint: s.AZeroPoint, ColSum: s.B.ColSum, Scale: s.Scale, Bias: s.Bias, Act: s.Act,
	}
	if s.RowScale != NoSlot {
		ep.RowScale, ep.RowZeroPoint = p.bufs[s.RowScale].F32, p.bufs[s.RowZeroPoint].I32
	}
	out := p.bufs[s.Out]
	if s.OutU8 {
		s.shape = withLast(s.shape, a.Shape, s.OutKp)
		resize(out, compiler.Uint8, s.shape...)
		ep.OutU8, ep.OutStride = out.U8, s.OutKp
		ep.OutInvScale, ep.OutZeroPoint = s.OutInvScale, s.OutZeroPoint
	} else {
		s.shape = withLast(s.shape, a.Shape, s.B.N)
		resize(out, compiler.Float32, s.shape...)
		ep.OutF32, ep.OutStride = out.F32, s.B.N
	}
	if s.Residual != NoSlot {
		r := p.bufs[s.Residual]
		if err := want(r, "QLinear residual", compiler.Float32, s.B.N); err != nil {
			return err
		}
		if rr, _ := rowsOf(r.Shape); rr != rows {
			return fmt.Errorf("%w: QLinear residual %v for %d rows", compiler.ErrShapeMismatch, r.Shape, rows)
		}
		ep.Residual, ep.ResidualStride = r.F32, s.B.N
	}
	err := p.engine.GEMM(a.U8, rows, s.B.Kp, s.B, ep)
	*ep = qgemm.Epilogue{} // hold no buffers between runs
	return err
}

func (s *LinearF32Step) run(p *Program) error {
	x := p.bufs[s.X]
	if err := want(x, "Linear input", compiler.Float32, s.K); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	out := p.bufs[s.Out]
	s.shape = withLast(s.shape, x.Shape, s.N)
	resize(out, compiler.Float32, s.shape...)
	nn.LinearF32(p.pool, out.F32, s.N, x.F32, s.K, rows, s.K, s.N, s.W, s.Bias)
	return nil
}

func (s *LayerNormStep) run(p *Program) error {
	x := p.bufs[s.X]
	n := s.Params.N
	if err := want(x, "LayerNormalization input", compiler.Float32, n); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	var f32 []float32
	if s.Out != NoSlot {
		out := p.bufs[s.Out]
		resize(out, compiler.Float32, x.Shape...)
		f32 = out.F32
	}
	if s.OutU8 == NoSlot {
		nn.LayerNorm(p.pool, f32, n, x.F32, n, rows, &s.Params)
		return nil
	}
	q := p.bufs[s.OutU8]
	s.shape = withLast(s.shape, x.Shape, s.Kp)
	resize(q, compiler.Uint8, s.shape...)
	if s.GammaU8 != nil {
		nn.LayerNormDual(p.pool, f32, n, q.U8, s.Kp, x.F32, n, rows, &s.Params, s.GammaU8, s.BetaU8, s.InvScale, s.ZeroPoint)
		return nil
	}
	nn.LayerNormU8(p.pool, f32, n, q.U8, s.Kp, x.F32, n, rows, &s.Params, s.InvScale, s.ZeroPoint)
	return nil
}

func (s *AttentionStep) run(p *Program) error {
	if p.run.offsets != nil {
		return s.runVarlen(p)
	}
	if s.Packed {
		return s.runPacked(p)
	}
	q, k, v := p.bufs[s.Q], p.bufs[s.K], p.bufs[s.V]
	for _, t := range []*compiler.Tensor{q, k, v} {
		if t.DType != compiler.Float32 || len(t.Shape) != 3 {
			return fmt.Errorf("%w: Attention operand %s%v, want f32 [batch, seq, width]", compiler.ErrShapeMismatch, t.DType, t.Shape)
		}
	}
	batch, sq, width, sk := int(q.Shape[0]), int(q.Shape[1]), int(q.Shape[2]), int(k.Shape[1])
	if !slices.Equal(k.Shape, v.Shape) || k.Shape[0] != q.Shape[0] || k.Shape[2] != q.Shape[2] || width%s.Heads != 0 {
		return fmt.Errorf("%w: Attention q %v, k %v, v %v with %d heads", compiler.ErrShapeMismatch, q.Shape, k.Shape, v.Shape, s.Heads)
	}
	d := &s.dims
	*d = nn.AttentionDims{
		Batch: batch, SeqQ: sq, SeqK: sk, Heads: s.Heads, HeadDim: width / s.Heads, Scale: s.Scale,
		QStride: width, KStride: width, VStride: width, OutStride: width,
	}
	return s.attend(p, q.F32, k.F32, v.F32, q.Shape)
}

// attend runs nn.Attention with s.dims (mask strides still to set) into
// Out of the given shape.
func (s *AttentionStep) attend(p *Program, q, k, v []float32, outShape []int64) error {
	d := &s.dims
	var mask []float32
	if s.Mask != NoSlot {
		m := p.bufs[s.Mask]
		if err := maskStrides(m, d); err != nil {
			return err
		}
		mask = m.F32
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, outShape...)
	p.scratch = grow(p.scratch, nn.AttentionScratchLen(p.pool.Workers(), d.SeqK, d.HeadDim))
	nn.Attention(p.pool, p.scratch, out.F32, q, k, v, mask, d)
	return nil
}

// maskStrides sets d's mask strides for mask m, which must broadcast to
// [batch, heads, seqQ, seqK] with its last dim seqK.
func maskStrides(m *compiler.Tensor, d *nn.AttentionDims) error {
	full := [4]int64{int64(d.Batch), int64(d.Heads), int64(d.SeqQ), int64(d.SeqK)}
	bad := func() error { // built only on failure: Run allocates nothing otherwise
		return fmt.Errorf("%w: Attention mask %s%v does not broadcast to scores %v with keys contiguous", compiler.ErrShapeMismatch, m.DType, m.Shape, full)
	}
	r := len(m.Shape)
	if m.DType != compiler.Float32 || r == 0 || r > 4 || m.Shape[r-1] != full[3] {
		return bad()
	}
	var strides [4]int
	stride := 1
	for i := 3; i >= 0; i-- {
		j := i - (4 - r) // the mask's dim aligned with score dim i
		if j < 0 {
			continue
		}
		switch m.Shape[j] {
		case full[i]:
			strides[i] = stride
		case 1:
		default:
			return bad()
		}
		stride *= int(m.Shape[j])
	}
	d.MaskBatchStride, d.MaskHeadStride, d.MaskRowStride = strides[0], strides[1], strides[2]
	return nil
}

func (s *AttentionMaskStep) run(p *Program) error {
	m := p.bufs[s.Mask]
	if m.DType != compiler.Int64 || len(m.Shape) != 2 {
		return fmt.Errorf("%w: AttentionMask input %s%v, want i64 [batch, seq]", compiler.ErrShapeMismatch, m.DType, m.Shape)
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, m.Shape[0], 1, 1, m.Shape[1])
	nn.AttentionMask(out.F32, m.I64, s.Fill)
	return nil
}

func (s *AddStep) run(p *Program) error {
	a, b := p.bufs[s.A], p.bufs[s.B]
	if a.DType != compiler.Float32 || b.DType != compiler.Float32 {
		return fmt.Errorf("%w: Add of %s and %s", compiler.ErrDTypeMismatch, a.DType, b.DType)
	}
	if !isSuffix(b.Shape, a.Shape) {
		if !isSuffix(a.Shape, b.Shape) {
			return fmt.Errorf("%w: Add of %v and %v is not a suffix broadcast", compiler.ErrShapeMismatch, a.Shape, b.Shape)
		}
		a, b = b, a // a + b = b + a bit for bit
	}
	s.shape = broadcastShape(s.shape, b.Shape, a.Shape)
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, s.shape...)
	if len(b.F32) > 0 {
		nn.AddParallel(p.pool, out.F32, a.F32, b.F32)
	}
	return nil
}

// isSuffix reports whether small, without its leading ones, equals the
// trailing dims of big, so that small broadcasts over big's leading dims.
func isSuffix(small, big []int64) bool {
	for len(small) > 0 && small[0] == 1 {
		small = small[1:]
	}
	return len(small) <= len(big) && slices.Equal(small, big[len(big)-len(small):])
}

// broadcastShape is the shape of big + small for isSuffix(small, big):
// big's, with leading ones if small has the higher rank.
func broadcastShape(buf, small, big []int64) []int64 {
	buf = buf[:0]
	for range len(small) - len(big) {
		buf = append(buf, 1)
	}
	return append(buf, big...)
}

func (s *ActivationStep) run(p *Program) error {
	x := p.bufs[s.X]
	if x.DType != compiler.Float32 {
		return fmt.Errorf("%w: %s of %s", compiler.ErrDTypeMismatch, s.Func, x.DType)
	}
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, x.Shape...)
	s.Activation().Run(p.pool, out.F32, x.F32)
	return nil
}

func (s *GatherStep) run(p *Program) error {
	data, ix := p.bufs[s.Data], p.bufs[s.Indices]
	if data.DType != compiler.Float32 || ix.DType != compiler.Int64 || s.Axis >= len(data.Shape) {
		return fmt.Errorf("%w: Gather of %s%v at %s indices along axis %d", compiler.ErrShapeMismatch, data.DType, data.Shape, ix.DType, s.Axis)
	}
	if off := p.run.offsets; off != nil && p.pack.tokenWise[s.Data] { // packed.go: [tokens, inner]
		inner := int(compiler.NumElements(data.Shape[1:]))
		s.shape = append(append(append(s.shape[:0], int64(len(off)-1)), ix.Shape...), data.Shape[1:]...)
		out := p.bufs[s.Out]
		resize(out, compiler.Float32, s.shape...)
		if err := nn.GatherPacked(out.F32, data.F32, inner, off, ix.I64); err != nil {
			return fmt.Errorf("%w: Gather: %v", compiler.ErrInvalidRequest, err)
		}
		return nil
	}
	s.shape = append(append(append(s.shape[:0], data.Shape[:s.Axis]...), ix.Shape...), data.Shape[s.Axis+1:]...)
	out := p.bufs[s.Out]
	resize(out, compiler.Float32, s.shape...)
	outer := int(compiler.NumElements(data.Shape[:s.Axis]))
	inner := int(compiler.NumElements(data.Shape[s.Axis+1:]))
	if err := nn.Gather(out.F32, data.F32, outer, int(data.Shape[s.Axis]), inner, ix.I64); err != nil {
		return fmt.Errorf("%w: Gather: %v", compiler.ErrInvalidRequest, err)
	}
	return nil
}
