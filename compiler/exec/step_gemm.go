package exec

import (
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// GEMMStep is qgemm's Engine.Linear of the quantised activations A (u8
// [..., Kp], the input's leading dims kept) with Linear: its packed
// weights, per-column scales, optional bias, activation and output
// quantisation (qgemm.Linear). In dynamic mode RowScale and RowZeroPoint
// are the slots of A's per-row quantisation; Residual (a slot of the
// output's shape) is added last. The output Out is f32 [..., N], or, when
// Linear.OutKp > 0, u8 [..., OutKp] for the next QLinear.
//
// Norm, if set, is the LayerNorm of Out run inside the GEMM
// (compiler.InProducer): nn.LinearLayerNorm normalises each block of
// rows as soon as the GEMM has written it. Norm.X is Out; its outputs are
// this step's too. Where the LayerNorm has an f32 output, that is Out as
// well: the rows are normalised in place (see emitLayerNorm).
type GEMMStep struct {
	node
	Weight   string // the i8 initializer Linear.B was packed from
	BiasName string // the initializer Linear.Bias is ("" for none)
	Linear   qgemm.Linear
	Norm     *LayerNormStep

	A, RowScale, RowZeroPoint, Residual, Out SlotID

	io    qgemm.LinearIO // rebound to the buffers on every run
	shape []int64
}

func (s *GEMMStep) Call() string {
	if s.Norm != nil {
		return "nn.LinearLayerNorm"
	}
	return "qgemm.GEMM"
}

func (s *GEMMStep) Describe(sl []*Slot) string {
	var b strings.Builder
	l := &s.Linear
	fmt.Fprintf(&b, "%s = %s(%s, %%%s [%dx%d, Kp=%d]", slotName(sl, s.Out), s.Call(), slotName(sl, s.A), s.Weight, l.B.K, l.B.N, l.B.Kp)
	if s.RowScale != NoSlot {
		fmt.Fprintf(&b, "; row_scale=%s, row_zero_point=%s", slotName(sl, s.RowScale), slotName(sl, s.RowZeroPoint))
	} else {
		fmt.Fprintf(&b, "; a_zero_point=%d", l.AZeroPoint)
	}
	if l.Bias != nil {
		fmt.Fprintf(&b, ", bias=%%%s", s.BiasName)
	}
	if l.Act != qgemm.ActNone {
		b.WriteString(", act=" + l.Act.String())
	}
	if s.Residual != NoSlot {
		op := "residual"
		if l.MulResidual {
			op = "multiplier"
		}
		fmt.Fprintf(&b, ", %s=%s", op, slotName(sl, s.Residual))
	}
	if l.OutKp > 0 {
		fmt.Fprintf(&b, ", out=u8 Kp=%d inv_scale=%g zero_point=%d", l.OutKp, l.OutInvScale, l.OutZeroPoint)
	} else {
		b.WriteString(", out=f32")
	}
	b.WriteString(")")
	if s.Norm != nil {
		b.WriteString("; then " + s.Norm.Describe(sl))
	}
	return b.String()
}

func (s *GEMMStep) run(p *Program) error {
	l := &s.Linear
	a := p.bufs[s.A]
	rows, kp := rowsOf(a.Shape)
	if a.DType != compiler.Uint8 || len(a.Shape) == 0 || kp != l.B.Kp {
		return fmt.Errorf("internal error: quantised input %s%v, want u8[..., %d]", a.DType, a.Shape, l.B.Kp)
	}
	io := &s.io
	*io = qgemm.LinearIO{A: a.U8, Rows: rows}
	if s.RowScale != NoSlot {
		io.RowScale, io.RowZeroPoint = p.bufs[s.RowScale].F32, p.bufs[s.RowZeroPoint].I32
	}
	out := p.bufs[s.Out]
	if l.OutKp > 0 {
		s.shape = withLast(s.shape, a.Shape, l.OutKp)
		resize(out, compiler.Uint8, s.shape...)
		io.OutU8 = out.U8
	} else {
		s.shape = withLast(s.shape, a.Shape, l.B.N)
		resize(out, compiler.Float32, s.shape...)
		io.OutF32 = out.F32
	}
	if s.Residual != NoSlot {
		r := p.bufs[s.Residual]
		if err := want(r, "QLinear residual", compiler.Float32, l.B.N); err != nil {
			return err
		}
		if rr, _ := rowsOf(r.Shape); rr != rows {
			return fmt.Errorf("%w: QLinear residual %v for %d rows", compiler.ErrShapeMismatch, r.Shape, rows)
		}
		io.Residual = r.F32
	}
	var err error
	if s.Norm != nil {
		norm := s.Norm.bindOutputs(p, s.shape)
		err = nn.LinearLayerNorm(p.engine, qgemm.SpecializedKernel{}, l, io, &s.Norm.Params, &norm)
	} else {
		err = p.engine.Linear(qgemm.SpecializedKernel{}, l, io)
	}
	*io = qgemm.LinearIO{} // hold no buffers between runs
	return err
}

func (s *GEMMStep) Operands() Operands {
	if s.Norm != nil { // Norm.X is Out, and so is Norm.Out where the LayerNorm runs in place
		normOut := s.Norm.Out
		if normOut == s.Out {
			normOut = NoSlot
		}
		return operands(reads(s.A, s.RowScale, s.RowZeroPoint, s.Residual), s.Out, normOut, s.Norm.OutU8)
	}
	return operands(reads(s.A, s.RowScale, s.RowZeroPoint, s.Residual), s.Out)
}

// cost counts the packed weights, their column sums and scales, and the
// bias besides the operand slots.
func (s *GEMMStep) cost(p *Program) Cost {
	m, _ := rowsOf(p.bufs[s.A].Shape)
	l := &s.Linear
	b := &l.B
	c := Cost{Kind: KindGEMM, INT8: true, Label: fmt.Sprintf("GEMM %dx%d", b.K, b.N), Ops: 2 * float64(m) * float64(b.K) * float64(b.N),
		Bytes: float64(b.Kp*b.Np+4*b.N+4*len(l.Scale)+4*len(l.Bias)) + p.operandBytes(s)}
	var label strings.Builder
	label.WriteString(c.Label)
	if s.RowScale != NoSlot {
		label.WriteString(" dyn")
	}
	if l.Act != qgemm.ActNone {
		label.WriteString(" +" + l.Act.String())
	}
	if s.Residual != NoSlot {
		label.WriteString(" +res")
	}
	if l.OutKp > 0 {
		label.WriteString(" ->u8")
	}
	if s.Norm != nil {
		norm := s.Norm.cost(p)
		c.Ops += norm.Ops
		label.WriteString(" + " + norm.Label)
	}
	c.Label = label.String()
	return c
}
