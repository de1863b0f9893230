// Package geluavo emits sqc's float32 GELUs (erf and tanh, internal/gelu)
// with avo in two forms, AVX-512 (Eval) and AVX2+FMA3 (EvalAVX2), for both
// generators that need them: asmgen/qgemm (the GEMM epilogue with ActGelu,
// ActGeluTanh) and asmgen/nn (the standalone GELUs). The instructions are
// gelu.Eval's operations one for one, in its order, with a VFMADD213PS
// exactly where it calls gelu.FMA32, so the assembly and the Go reference
// give the same bits; the erf and tanh GELUs differ only in the
// coefficient tables loaded.
package geluavo

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/avogen"
	"github.com/sqc-dev/sqc/internal/gelu"
)

// tableBytes is the size of one coefficient table: gelu.Intervals float32,
// one zmm register.
const tableBytes = 4 * gelu.Intervals

// Form is a GELU formulation: which internal/gelu table is evaluated.
type Form int

// The forms (a Table holds those NewTable is given, in that order).
const (
	Erf       Form = iota // gelu.Gelu: gelu.Coeffs
	Tanh                  // gelu.GeluTanh: gelu.TanhCoeffs
	ErfShort              // gelu.GeluShort: gelu.ShortCoeffs, degree gelu.ShortDegree
	TanhShort             // gelu.GeluTanhShort: gelu.ShortTanhCoeffs
	formCount
)

// tables are the forms' coefficients.
var tables = [formCount]*gelu.Table{Erf: &gelu.Coeffs, Tanh: &gelu.TanhCoeffs, ErfShort: &gelu.ShortCoeffs, TanhShort: &gelu.ShortTanhCoeffs}

// Degree is the degree of the form's polynomials.
func (f Form) Degree() int {
	if f == ErfShort || f == TanhShort {
		return gelu.ShortDegree
	}
	return gelu.Degree
}

// Table is the read-only DATA section of GELU's constants: for each form
// it was made with, that form's degree+1 coefficient tables (64 bytes
// each, row k at the form's offset + 64k), then AbsMask, InvWidth and
// Clamp (shared by the forms) for embedded broadcasts.
type Table struct {
	mem     operand.Mem
	off     [formCount]int // byte offset of each form's tables; -1: not in the table
	scalars int            // byte offset of the shared constants
}

// NewTable declares the table of the given forms as the static global
// name. It starts a new DATA section: call it before a function, not while
// the caller is still adding data to another global.
func NewTable(ctx *build.Context, name string, forms ...Form) Table {
	t := Table{mem: ctx.StaticGlobal(name)}
	ctx.DataAttributes(attr.RODATA | attr.NOPTR)
	for f := range t.off {
		t.off[f] = -1
	}
	at := 0
	for _, f := range forms {
		if t.off[f] >= 0 {
			panic(fmt.Sprintf("geluavo: form %d given twice", f))
		}
		t.off[f] = at
		for k, row := range tables[f][:f.Degree()+1] {
			for i, c := range row {
				ctx.AddDatum(at+tableBytes*k+4*i, operand.U32(math.Float32bits(c)))
			}
		}
		at += tableBytes * (f.Degree() + 1)
	}
	t.scalars = at
	for i, v := range []uint32{gelu.AbsMask, math.Float32bits(gelu.InvWidth), math.Float32bits(gelu.Clamp), math.Float32bits(clampX)} {
		ctx.AddDatum(t.scalarOff(i), operand.U32(v))
	}
	return t
}

func (t Table) scalarOff(i int) int { return t.scalars + 4*i }

// clampX is gelu.Clamp in units of x: 15 / 2.5 = 6, exact, so that
// float32(min(|x|, clampX) * InvWidth) = min(float32(|x| * InvWidth),
// Clamp) for every x (rounding is monotonic and exact at 6 * 2.5): Eval's
// VRANGEPS clamps |x| before the multiply in one operation where the AND
// and the MINPS after it took two.
var clampX = func() float32 {
	c := gelu.Clamp / gelu.InvWidth
	if c*gelu.InvWidth != gelu.Clamp {
		panic("geluavo: Clamp / InvWidth is not exact")
	}
	return c
}()

// rangeMinAbsClearSign is VRANGEPS's imm8 for min(|a|, |b|) with the sign
// cleared: imm8[1:0] = 10b selects the operand of smaller magnitude,
// imm8[3:2] = 10b clears the sign. A NaN operand gives a NaN.
const rangeMinAbsClearSign = 0x0A

// Eval holds the coefficient tables in zmm registers: degree+1 of the
// 32, for the whole function (VPERMPS indexes them at register speed).
type Eval struct {
	t    Table
	coef []reg.VecVirtual // degree+1
}

// Coeffs is the address of form f's coefficient tables (for a LEAQ that
// picks the form at run time; see LoadFrom).
func (t Table) Coeffs(f Form) operand.Mem {
	if t.off[f] < 0 {
		panic(fmt.Sprintf("geluavo: form %d is not in the table", f))
	}
	return t.mem.Offset(t.off[f])
}

// Load emits the loads of form f's coefficient tables into new registers.
func (t Table) Load(ctx *build.Context, f Form) *Eval {
	return t.LoadFrom(ctx, t.Coeffs(f), f.Degree())
}

// LoadFrom emits the loads of the coefficient tables at coeffs (Coeffs of
// some form of the given degree, or a register holding such an address)
// into new registers.
func (t Table) LoadFrom(ctx *build.Context, coeffs operand.Mem, degree int) *Eval {
	e := &Eval{t: t, coef: make([]reg.VecVirtual, degree+1)}
	for k := range e.coef {
		e.coef[k] = ctx.ZMM()
		ctx.VMOVUPS(coeffs.Offset(tableBytes*k), e.coef[k])
	}
	return e
}

// Emit emits gelu.EvalDegree with the loaded tables on the 16 lanes of each register of xs (left
// unchanged), the chunks interleaved step by step so that their
// dependency chains overlap, and returns the registers holding the
// results. zero is a zeroed zmm register. b = minps(|x*InvWidth|, Clamp)
// is computed as float32(min(|x|, clampX) * InvWidth), the same value (17
// operations per 16 values instead of 18); only a NaN x takes a
// different path (interval 0 with r NaN, instead of interval 15) to the
// same NaN result, x's own bits.
func (e *Eval) Emit(ctx *build.Context, xs []reg.VecVirtual, zero reg.VecVirtual) []reg.VecVirtual {
	chunks := avogen.Interleave(ctx, len(xs))
	vecs, each := chunks.ZMMs, chunks.Each
	invWidth, clamp := e.t.mem.Offset(e.t.scalarOff(1)), e.t.mem.Offset(e.t.scalarOff(3))
	b, idx, r, p, relu, out := vecs(), vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { ctx.VRANGEPS_BCST(operand.U8(rangeMinAbsClearSign), clamp, xs[i], b[i]) }) // min(|x|, clampX)
	each(func(i int) { ctx.VMULPS_BCST(invWidth, b[i], b[i]) })                                   // b = that*InvWidth: Eval's b (see clampX)
	each(func(i int) { ctx.VCVTPS2DQ(b[i], idx[i]) })                                             // i = roundEven(b) (MXCSR default)
	each(func(i int) { ctx.VREDUCEPS(operand.U8(0), b[i], r[i]) })                                // r = b - roundEven(b), exact
	degree := len(e.coef) - 1
	each(func(i int) { ctx.VPERMPS(e.coef[degree], idx[i], p[i]) })
	for k := degree - 1; k >= 0; k-- {
		c := vecs()
		each(func(i int) { ctx.VPERMPS(e.coef[k], idx[i], c[i]) })
		each(func(i int) { ctx.VFMADD213PS(c[i], r[i], p[i]) }) // p = p*r + c, one rounding
	}
	each(func(i int) { ctx.VMAXPS(xs[i], zero, relu[i]) }) // maxps(0, x): NaN x gives x
	each(func(i int) { ctx.VADDPS(p[i], relu[i], out[i]) })
	return out
}

// EvalAVX2 is Eval's AVX2+FMA3 form, for CPUs without AVX-512: the
// coefficient tables stay in memory (a 16-entry table is two ymm halves,
// and six tables would take 12 of the 16 ymm registers), each looked up
// with two VPERMPS and a VBLENDVPS on bit 3 of the index; the scalars are
// broadcast into registers once.
type EvalAVX2 struct {
	coeffs                   operand.Mem
	degree                   int
	absMask, invWidth, clamp reg.VecVirtual
}

// LoadAVX2 emits the broadcasts of the scalars and returns the evaluator
// of the coefficient tables at coeffs (Coeffs of some form of the given
// degree, or a register holding such an address).
func (t Table) LoadAVX2(ctx *build.Context, coeffs operand.Mem, degree int) *EvalAVX2 {
	e := &EvalAVX2{coeffs: coeffs, degree: degree}
	for i, r := range []*reg.VecVirtual{&e.absMask, &e.invWidth, &e.clamp} {
		*r = ctx.YMM()
		ctx.VBROADCASTSS(t.mem.Offset(t.scalarOff(i)), *r)
	}
	return e
}

// Emit emits gelu.EvalDegree on the 8 lanes of x (left unchanged) and returns
// the register holding the result; zero is a zeroed ymm register. The
// operations are Eval's: VREDUCEPS's exact b - roundEven(b) becomes
// b - float32(i), the same value (i is roundEven(b) and both are exact).
func (e *EvalAVX2) Emit(ctx *build.Context, x, zero reg.VecVirtual) reg.VecVirtual {
	b, idx, sel := ctx.YMM(), ctx.YMM(), ctx.YMM()
	ctx.VMULPS(e.invWidth, x, b) // y = x*InvWidth
	ctx.VANDPS(e.absMask, b, b)  // |y|
	ctx.VMINPS(e.clamp, b, b)    // b = minps(|y|, Clamp): NaN gives Clamp
	ctx.VCVTPS2DQ(b, idx)        // i = roundEven(b) (MXCSR default), 0..15
	r := ctx.YMM()
	ctx.VCVTDQ2PS(idx, r)
	ctx.VSUBPS(r, b, r)                  // r = b - float32(i), exact
	ctx.VPSLLD(operand.U8(28), idx, sel) // sign bit = bit 3 of i: the table's upper half
	coef := func(k int) reg.VecVirtual {
		lo, hi := ctx.YMM(), ctx.YMM()
		ctx.VPERMPS(e.coeffs.Offset(tableBytes*k), idx, lo)    // entries 0..7
		ctx.VPERMPS(e.coeffs.Offset(tableBytes*k+32), idx, hi) // entries 8..15
		ctx.VBLENDVPS(sel, hi, lo, lo)
		return lo
	}
	p := coef(e.degree)
	for k := e.degree - 1; k >= 0; k-- {
		ctx.VFMADD213PS(coef(k), r, p) // p = p*r + c, one rounding
	}
	relu, out := ctx.YMM(), ctx.YMM()
	ctx.VMAXPS(x, zero, relu) // maxps(0, x): NaN x gives x
	ctx.VADDPS(p, relu, out)
	return out
}
