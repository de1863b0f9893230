package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// LayerNormStep is nn.LayerNorm of X over its last dim into Out (f32), or
// nn.LayerNormU8 when OutU8 is set: u8 rows of Kp bytes quantised with
// InvScale and ZeroPoint, plus Out unless it is NoSlot. When GammaU8 is
// set (an sqc.LayerNormDual), it is nn.LayerNormDual: Out with Params and
// OutU8 normalised with GammaU8 and BetaU8 instead, from the same row
// statistics; Out and OutU8 are then both slots.
type LayerNormStep struct {
	node
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

func (s *LayerNormStep) Call() string {
	if s.GammaU8 != nil {
		return "nn.LayerNormDual"
	}
	if s.OutU8 != NoSlot {
		return "nn.LayerNormU8"
	}
	return "nn.LayerNorm"
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

func (s *LayerNormStep) run(p *Program) error {
	x := p.bufs[s.X]
	n := s.Params.N
	if err := want(x, "LayerNormalization input", compiler.Float32, n); err != nil {
		return err
	}
	rows, _ := rowsOf(x.Shape)
	out := s.bindOutputs(p, x.Shape)
	switch {
	case out.U8 == nil:
		nn.LayerNorm(p.pool, out.F32, n, x.F32, n, rows, &s.Params)
	case out.GammaU8 != nil:
		nn.LayerNormDual(p.pool, out.F32, n, out.U8, s.Kp, x.F32, n, rows, &s.Params, s.GammaU8, s.BetaU8, s.InvScale, s.ZeroPoint)
	default:
		nn.LayerNormU8(p.pool, out.F32, n, out.U8, s.Kp, x.F32, n, rows, &s.Params, s.InvScale, s.ZeroPoint)
	}
	return nil
}

// bindOutputs sizes the output buffers for an input of shape xShape and
// returns them with the quantisation, as nn's LayerNorms take them (U8
// nil: nn.LayerNorm; GammaU8 set: nn.LayerNormDual; else nn.LayerNormU8).
func (s *LayerNormStep) bindOutputs(p *Program, xShape []int64) nn.LayerNormOutputs {
	out := nn.LayerNormOutputs{F32Stride: s.Params.N, U8Stride: s.Kp, InvScale: s.InvScale, ZeroPoint: s.ZeroPoint}
	if s.Out != NoSlot {
		f := p.bufs[s.Out]
		resize(f, compiler.Float32, xShape...)
		out.F32 = f.F32
	}
	if s.OutU8 != NoSlot {
		q := p.bufs[s.OutU8]
		s.shape = withLast(s.shape, xShape, s.Kp)
		resize(q, compiler.Uint8, s.shape...)
		out.U8 = q.U8
		out.GammaU8, out.BetaU8 = s.GammaU8, s.BetaU8
	}
	return out
}

func (s *LayerNormStep) Operands() Operands { return operands(reads(s.X), s.Out, s.OutU8) }

func (s *LayerNormStep) cost(p *Program) Cost {
	rows, n := rowsOf(p.bufs[s.X].Shape)
	c := Cost{Kind: KindLayerNorm, Label: fmt.Sprintf("LayerNorm %d", n), Ops: float64(opsLayerNorm * rows * n),
		Bytes: p.operandBytes(s)}
	switch {
	case s.OutU8 == NoSlot:
		return c
	case s.Out == NoSlot:
		c.Label += " ->u8"
	default:
		c.Label += " ->f32+u8"
	}
	c.Ops += float64(opsQuantize * rows * n)
	if s.GammaU8 != nil { // one pass, two normalisations
		c.Ops += float64(opsLayerNormDual * rows * n)
		c.Label += " (dual)"
	}
	return c
}
