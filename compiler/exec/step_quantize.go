package exec

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
)

// QuantizeStep quantises the f32 value X ([..., K]) to u8 rows of Kp bytes
// in Out ([..., Kp]): nn.QuantizeU8Parallel(pool, out, Kp, x, K, rows, K,
// InvScale, ZeroPoint).
type QuantizeStep struct {
	node
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
	node
	X, Out             SlotID
	Scales, ZeroPoints SlotID
	K, Kp              int
	shape              []int64
}

func (s *QuantizeStep) Call() string     { return "nn.QuantizeU8Parallel" }
func (s *QuantizeRowsStep) Call() string { return "nn.QuantizeRowsU8Parallel" }

func (s *QuantizeStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s; K=%d, Kp=%d, inv_scale=%g, zero_point=%d)",
		slotName(sl, s.Out), s.Call(), slotName(sl, s.X), s.K, s.Kp, s.InvScale, s.ZeroPoint)
}

func (s *QuantizeRowsStep) Describe(sl []*Slot) string {
	return fmt.Sprintf("%s = %s(%s; K=%d, Kp=%d)", slotNames(sl, s.Out, s.Scales, s.ZeroPoints), s.Call(), slotName(sl, s.X), s.K, s.Kp)
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

func (s *QuantizeStep) Operands() Operands { return operands(reads(s.X), s.Out) }

func (s *QuantizeRowsStep) Operands() Operands {
	return operands(reads(s.X), s.Out, s.Scales, s.ZeroPoints)
}

func (s *QuantizeStep) cost(p *Program) Cost {
	rows, k := rowsOf(p.bufs[s.X].Shape)
	return Cost{Kind: KindQuantize, Label: fmt.Sprintf("Quantize %d", k), Ops: float64(opsQuantize * rows * k),
		Bytes: p.operandBytes(s)}
}

func (s *QuantizeRowsStep) cost(p *Program) Cost {
	rows, k := rowsOf(p.bufs[s.X].Shape)
	return Cost{Kind: KindQuantize, Label: fmt.Sprintf("QuantizeRows %d", k), Ops: float64(opsQuantizeRow * rows * k),
		Bytes: p.operandBytes(s)}
}
