// Package expavo emits internal/expf's float32 Exp and Silu with avo, in
// AVX-512 (ZMM, SiluZMM) and AVX2 (YMM, SiluYMM) forms, for both
// generators that need them: asmgen/nn (the softmax's exp) and
// asmgen/qgemm (the GEMM epilogue's SiLU). The instructions are expf's
// operations one for one, in its order, each rounding once as the Go
// does, so the assembly gives expf's bits; runtime/nn's TestAttnSoftmaxExp
// and runtime/qgemm's TestEpilogueAsmMatchesGo check it.
package expavo

import (
	"math"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/sqc-dev/sqc/asmgen/avogen"
	"github.com/sqc-dev/sqc/internal/expf"
)

// Consts gives the addresses of the constants the emitters read, from
// the caller's read-only DATA section (every value Scalars and Vectors
// list must be in it).
type Consts interface {
	// F32 addresses the 4-byte constant v, for embedded broadcasts.
	F32(v float32) operand.Mem
	// F32x8 and U32x8 address 32 bytes of eight copies of v, the memory
	// operands of the AVX2 forms (no embedded broadcast there).
	F32x8(v float32) operand.Mem
	U32x8(v uint32) operand.Mem
}

// negZero is -0: its bits are expf.SignBit, so x | negZero is -|x|.
var negZero = math.Float32frombits(expf.SignBit)

// Scalars are the 4-byte constants of ZMM and SiluZMM, as float32 bits.
func Scalars() []uint32 {
	vs := []float32{expf.Min, expf.Log2E, expf.Ln2Hi, expf.Ln2Lo, 1, negZero}
	return f32Bits(append(vs, expf.Poly[:]...))
}

// Vectors are the values of the 32-byte constants of YMM and SiluYMM
// (the integer 127 first, then float32 bits).
func Vectors() []uint32 {
	vs := []float32{expf.Log2E, expf.Ln2Hi, expf.Ln2Lo, 1, expf.Min, expf.Max, float32(math.Inf(1))}
	return append([]uint32{127}, f32Bits(append(append(vs, expf.Poly[:]...), negZero))...)
}

func f32Bits(fs []float32) []uint32 {
	bits := make([]uint32, len(fs))
	for i, f := range fs {
		bits[i] = math.Float32bits(f)
	}
	return bits
}

// VCMPPS predicates.
const (
	cmpLTOQ   = 0x11 // less than, ordered, quiet
	cmpUnordQ = 0x03 // either is NaN
	cmpNGEUQ  = 0x19 // not greater than or equal, unordered, quiet: src1 < src2 or NaN
	cmpGTOQ   = 0x1E // greater than, ordered, quiet
	cmpNLTUQ  = 0x15 // not less than, unordered, quiet: src1 >= src2 or NaN
)

// ZMM emits expf.Exp on every lane of each register of xs (left
// unchanged), interleaved step by step so that the chains overlap, and
// returns the registers holding the results, for x <= expf.Max, -Inf or
// NaN (a NaN with the quiet bit set, as arithmetic makes it); lo holds
// expf.Min in every lane. Per lane, in Exp's order:
//
//	k = roundEven(x*log2e); r = (x - k*ln2Hi) - k*ln2Lo
//	p = Horner(r) ending with *r+1 twice
//	exp = p * 2^k (VSCALEFPS, one rounding)
//
// and 0 where x < expf.Min. Exp's own p * 2^k (with (p+p) * 2^127 for k =
// 128) rounds once too, so the bits are Exp's for every x <= expf.Max:
// what took clamps, a shift and four compare-and-blends is one VSCALEFPS
// under the zeroing mask x >= Min (or NaN), and k comes from VRNDSCALEPS
// rather than two conversions: 23 operations instead of 34. x is first
// raised to at least Min so that masked lanes stay finite and normal (no
// -Inf - -Inf, no underflow); the maximum keeps x where it is NaN (MAXPS
// returns its second source then), and so does every later step, so a
// NaN lane gives x's own bits, as Exp's return x does.
func ZMM(ctx *build.Context, c Consts, xs []reg.VecVirtual, lo reg.VecVirtual) []reg.VecVirtual {
	chunks := avogen.Interleave(ctx, len(xs))
	vecs, each := chunks.ZMMs, chunks.Each
	keep := make([]reg.OpmaskVirtual, len(xs))
	each(func(i int) {
		keep[i] = ctx.K()
		ctx.VCMPPS_BCST(operand.U8(cmpNLTUQ), c.F32(expf.Min), xs[i], keep[i]) // !(x < Min): x >= Min or NaN
	})
	xc, kf, r, t, p := vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { ctx.VMAXPS(xs[i], lo, xc[i]) }) // maxps(Min, x): NaN gives x
	each(func(i int) { ctx.VMULPS_BCST(c.F32(expf.Log2E), xc[i], t[i]) })
	each(func(i int) { ctx.VRNDSCALEPS(operand.U8(0), t[i], kf[i]) }) // k = roundEven(x*log2e), as a float
	each(func(i int) { ctx.VMULPS_BCST(c.F32(expf.Ln2Hi), kf[i], t[i]) })
	each(func(i int) { ctx.VSUBPS(t[i], xc[i], r[i]) }) // x - k*ln2Hi
	each(func(i int) { ctx.VMULPS_BCST(c.F32(expf.Ln2Lo), kf[i], t[i]) })
	each(func(i int) { ctx.VSUBPS(t[i], r[i], r[i]) })                     // - k*ln2Lo
	each(func(i int) { ctx.VMULPS_BCST(c.F32(expf.Poly[0]), r[i], p[i]) }) // Poly[0] * r
	for j, coef := range expf.Poly[1:] {
		if j > 0 {
			each(func(i int) { ctx.VMULPS(r[i], p[i], p[i]) })
		}
		each(func(i int) { ctx.VADDPS_BCST(c.F32(coef), p[i], p[i]) })
	}
	for range 2 {
		each(func(i int) { ctx.VMULPS(r[i], p[i], p[i]) })
		each(func(i int) { ctx.VADDPS_BCST(c.F32(1), p[i], p[i]) })
	}
	res := vecs()
	each(func(i int) { ctx.VSCALEFPS_Z(kf[i], p[i], keep[i], res[i]) }) // p * 2^k, 0 where x < Min
	return res
}

// YMM emits expf.Exp on the 8 lanes of x and returns the register holding
// the results, the steps of ZMM with blends for the opmasks: 0 where
// x < expf.Min, +Inf where x > expf.Max, x itself for NaN.
func YMM(ctx *build.Context, c Consts, x reg.VecVirtual) reg.VecVirtual {
	t, ki, kf, r, p := ctx.YMM(), ctx.YMM(), ctx.YMM(), ctx.YMM(), ctx.YMM()
	ctx.VMULPS(c.F32x8(expf.Log2E), x, t)
	ctx.VCVTPS2DQ(t, ki) // round to nearest even (MXCSR default)
	ctx.VCVTDQ2PS(ki, kf)
	ctx.VMULPS(c.F32x8(expf.Ln2Hi), kf, t)
	ctx.VSUBPS(t, x, r) // x - k*ln2Hi
	ctx.VMULPS(c.F32x8(expf.Ln2Lo), kf, t)
	ctx.VSUBPS(t, r, r) // - k*ln2Lo
	ctx.VMOVUPS(c.F32x8(expf.Poly[0]), p)
	for _, coef := range expf.Poly[1:] {
		ctx.VMULPS(r, p, p)
		ctx.VADDPS(c.F32x8(coef), p, p)
	}
	for range 2 {
		ctx.VMULPS(r, p, p)
		ctx.VADDPS(c.F32x8(1), p, p)
	}
	big, twice := ctx.YMM(), ctx.YMM()
	ctx.VPCMPGTD(c.U32x8(127), ki, big) // k > 127
	ctx.VADDPS(p, p, twice)
	ctx.VBLENDVPS(big, twice, p, p) // p*2 there
	ctx.VPMINSD(c.U32x8(127), ki, ki)
	ctx.VPADDD(c.U32x8(127), ki, ki)
	ctx.VPSLLD(operand.U8(23), ki, ki) // 2^k
	res := ctx.YMM()
	ctx.VMULPS(ki, p, res)
	low := ctx.YMM()
	ctx.VCMPPS(operand.U8(cmpLTOQ), c.F32x8(expf.Min), x, low) // x < Min
	ctx.VANDNPS(res, low, res)                                 // +0 there
	high := ctx.YMM()
	ctx.VCMPPS(operand.U8(cmpGTOQ), c.F32x8(expf.Max), x, high) // x > Max
	ctx.VBLENDVPS(high, c.F32x8(float32(math.Inf(1))), res, res)
	nan := ctx.YMM()
	ctx.VCMPPS(operand.U8(cmpUnordQ), x, x, nan)
	ctx.VBLENDVPS(nan, x, res, res)
	return res
}

// SiluZMM emits expf.Silu on every lane of each register of xs (left
// unchanged), interleaved as ZMM, and returns the registers holding the
// results; lo holds expf.Min and zero +0 in every lane. Per lane, in
// Silu's order: t = Exp(x | signbit), n = x, or x*t where !(x >= 0),
// then n / (1 + t) (VDIVPS rounds correctly, as Go's division).
func SiluZMM(ctx *build.Context, c Consts, xs []reg.VecVirtual, lo, zero reg.VecVirtual) []reg.VecVirtual {
	negAbs := make([]reg.VecVirtual, len(xs))
	for i, x := range xs {
		negAbs[i] = ctx.ZMM()
		ctx.VORPS_BCST(c.F32(negZero), x, negAbs[i]) // -|x|
	}
	ts := ZMM(ctx, c, negAbs, lo)
	out := make([]reg.VecVirtual, len(xs))
	for i, x := range xs {
		neg := ctx.K()
		ctx.VCMPPS(operand.U8(cmpNGEUQ), zero, x, neg) // !(x >= 0)
		n := ctx.ZMM()
		ctx.VMOVAPS(x, n)
		ctx.VMULPS(ts[i], x, neg, n) // x*t there, x elsewhere
		d := ctx.ZMM()
		ctx.VADDPS_BCST(c.F32(1), ts[i], d)
		out[i] = ctx.ZMM()
		ctx.VDIVPS(d, n, out[i])
	}
	return out
}

// SiluYMM emits expf.Silu on the 8 lanes of x and returns the register
// holding the results: SiluZMM's steps with a blend for the opmask; zero
// holds +0 in every lane.
func SiluYMM(ctx *build.Context, c Consts, x, zero reg.VecVirtual) reg.VecVirtual {
	negAbs := ctx.YMM()
	ctx.VORPS(c.F32x8(negZero), x, negAbs) // -|x|
	t := YMM(ctx, c, negAbs)
	xt, neg, n := ctx.YMM(), ctx.YMM(), ctx.YMM()
	ctx.VMULPS(t, x, xt)
	ctx.VCMPPS(operand.U8(cmpNGEUQ), zero, x, neg) // !(x >= 0)
	ctx.VBLENDVPS(neg, xt, x, n)                   // x*t there, x elsewhere
	d := ctx.YMM()
	ctx.VADDPS(c.F32x8(1), t, d)
	out := ctx.YMM()
	ctx.VDIVPS(d, n, out)
	return out
}
