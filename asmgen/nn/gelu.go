package main

import (
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GELU is qgemm's float32 erf-GELU (runtime/qgemm/epilogue.go: geluF32),
// the function a GEMM epilogue with ActGelu applies; nn.Gelu applies it
// standalone. The vector code below is asmgen/qgemm's geluZMM operation for
// operation (no FMA, same order, same constants), so standalone and fused
// GELU give the same bits.
const (
	geluUMax   float32 = 12.9
	geluTScale float32 = 0.5 / math.Sqrt2
	geluHiMask uint32  = 0xFFFFF000
)

var geluP = [...]float32{
	0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
	-0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223,
}

// geluChunks 16-float chunks go through GELU interleaved per step: more
// would not fit the 32 zmm registers (avo does not spill).
const geluChunks = 3

// genGelu emits geluAsm: dst[i] = gelu(src[i]) for i < n.
func genGelu(g *gen) {
	g.Function("geluAsm")
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr("func(dst *float32, src *float32, n int)")
	g.Pragma("noescape")
	g.Doc("geluAsm sets dst[i] = qgemm.Gelu(src[i]) for i < n (n >= 1); dst may be src.")
	dst, src, n := g.load("dst"), g.load("src"), g.load("n")
	zero := g.zeroZMM()
	one := g.ZMM()
	g.VBROADCASTSS(g.consts.f32(1), one)
	j := g.GP64()
	g.XORQ(j, j)
	loop := g.label("gelu_loop")
	g.Label(loop)
	left := g.GP64()
	g.MOVQ(n, left)
	g.SUBQ(j, left)
	kAll := g.maskOf(g.minConst(left, 16*geluChunks))
	ks := make([]reg.OpmaskVirtual, geluChunks)
	xs := make([]reg.VecVirtual, geluChunks)
	for u := range ks {
		ks[u] = kAll
		if u > 0 {
			ks[u] = g.K()
			g.KSHIFTRQ(operand.U8(16*u), kAll, ks[u])
		}
		xs[u] = g.ZMM()
		g.VMOVUPS_Z(operand.Mem{Base: src, Index: j, Scale: 4, Disp: 64 * u}, ks[u], xs[u])
	}
	for u, y := range g.geluZMM(xs, one, zero) {
		g.VMOVUPS(y, ks[u], operand.Mem{Base: dst, Index: j, Scale: 4, Disp: 64 * u})
	}
	g.ADDQ(operand.U8(16*geluChunks), j)
	g.CMPQ(j, n)
	g.JL(operand.LabelRef(loop))
	g.VZEROUPPER()
	g.RET()
}

// geluZMM emits geluF32 on the 16 lanes of each register of xs,
// interleaving the chunks step by step, and returns the registers holding
// the results (asmgen/qgemm's geluZMM).
func (g *gen) geluZMM(xs []reg.VecVirtual, zOne, zZero reg.VecVirtual) []reg.VecVirtual {
	c := g.consts
	n := len(xs)
	vecs := func() []reg.VecVirtual {
		v := make([]reg.VecVirtual, n)
		for i := range v {
			v[i] = g.ZMM()
		}
		return v
	}
	each := func(f func(i int)) { forEach(n, f) }
	uc, d, t, p := vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VPANDD_BCST(c.u32(0x7FFFFFFF), xs[i], uc[i]) }) // |x|
	each(func(i int) { g.VMINPS_BCST(c.f32(geluUMax), uc[i], uc[i]) })   // minps(|x|, uMax)
	each(func(i int) { g.VMULPS_BCST(c.f32(geluTScale), uc[i], d[i]) })
	each(func(i int) { g.VADDPS_BCST(c.f32(1), d[i], d[i]) })
	each(func(i int) { g.VDIVPS(d[i], zOne, t[i]) }) // t = 1 / (uc*tScale + 1)
	// P(t) in Estrin's scheme, in runtime/qgemm's geluPoly order, the
	// steps ordered so that few registers are live at once.
	coef := func(k int) operand.Mem { return c.f32(geluP[len(geluP)-1-k]) } // of t^k
	pair := func(dst []reg.VecVirtual, k int) {                             // a_k + a_{k+1} t
		each(func(i int) { g.VMULPS_BCST(coef(k+1), t[i], dst[i]) })
		each(func(i int) { g.VADDPS_BCST(coef(k), dst[i], dst[i]) })
	}
	mulAdd := func(dst, x, y, z []reg.VecVirtual) { // x*y + z
		each(func(i int) { g.VMULPS(y[i], x[i], dst[i]) })
		each(func(i int) { g.VADDPS(z[i], dst[i], dst[i]) })
	}
	t2, t4, t8, e0, e1, e2, e3, e4, f0, f1, g0 := vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VMULPS(t[i], t[i], t2[i]) })
	pair(e1, 2)
	pair(e0, 0)
	mulAdd(f0, e1, t2, e0)
	pair(e3, 6)
	pair(e2, 4)
	mulAdd(f1, e3, t2, e2)
	each(func(i int) { g.VMULPS(t2[i], t2[i], t4[i]) })
	mulAdd(g0, f1, t4, f0)
	each(func(i int) { g.VMULPS(t4[i], t4[i], t8[i]) })
	pair(e4, 8)
	mulAdd(p, e4, t8, g0)
	uh, a, lo, hi, b := vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VPANDD_BCST(c.u32(geluHiMask), uc[i], uh[i]) })
	each(func(i int) { g.VMULPS(uh[i], uh[i], a[i]) })
	each(func(i int) { g.VMULPS_BCST(c.f32(-0.5), a[i], a[i]) }) // a = (uh*uh) * -0.5, exact
	each(func(i int) { g.VSUBPS(uh[i], uc[i], lo[i]) })          // uc - uh
	each(func(i int) { g.VADDPS(uh[i], uc[i], hi[i]) })          // uc + uh
	each(func(i int) { g.VMULPS(hi[i], lo[i], b[i]) })
	each(func(i int) { g.VMULPS_BCST(c.f32(-0.5), b[i], b[i]) })
	each(func(i int) { g.VADDPS(p[i], b[i], b[i]) }) // b = ((uc-uh)*(uc+uh))*-0.5 + p
	// uc >= uMax (GE_OQ), taken before exp so that uc is dead there.
	big := make([]reg.OpmaskVirtual, n)
	each(func(i int) {
		big[i] = g.K()
		g.VCMPPS_BCST(operand.U8(0x1D), c.f32(geluUMax), uc[i], big[i])
	})
	e := g.exp2partZMM(a, b)
	q, omq, phi, res := vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VMULPS_BCST(c.f32(0.5), t[i], q[i]) })
	each(func(i int) { g.VMULPS(e[i], q[i], q[i]) })             // q = (t*0.5) * e
	each(func(i int) { g.VBLENDMPS(zZero, q[i], big[i], q[i]) }) // q = 0 where uc >= uMax
	each(func(i int) { g.VSUBPS(q[i], zOne, omq[i]) })           // 1 - q
	each(func(i int) {
		pos := g.K()
		g.VCMPPS(operand.U8(0x1D), zZero, xs[i], pos) // x >= 0 (GE_OQ)
		g.VBLENDMPS(omq[i], q[i], pos, phi[i])
	})
	each(func(i int) { g.VMULPS(phi[i], xs[i], res[i]) })
	return res
}

// exp2partZMM emits qgemm's exp2part on each (a, b) register pair,
// interleaved: exp(a+b) without rounding a+b.
func (g *gen) exp2partZMM(as, bs []reg.VecVirtual) []reg.VecVirtual {
	c := g.consts
	n := len(as)
	vecs := func() []reg.VecVirtual {
		v := make([]reg.VecVirtual, n)
		for i := range v {
			v[i] = g.ZMM()
		}
		return v
	}
	each := func(f func(i int)) { forEach(n, f) }
	s, f, ki, kf, h, r, l, p, res := vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VADDPS(bs[i], as[i], s[i]) })
	each(func(i int) { g.VMULPS_BCST(c.f32(expLog2E), s[i], f[i]) })
	each(func(i int) { g.VCVTPS2DQ(f[i], ki[i]) }) // round to nearest even
	each(func(i int) { g.VCVTDQ2PS(ki[i], kf[i]) })
	each(func(i int) { g.VMULPS_BCST(c.f32(expLn2Hi), kf[i], h[i]) })
	each(func(i int) { g.VSUBPS(h[i], as[i], r[i]) }) // a - k*ln2Hi (exact)
	each(func(i int) { g.VADDPS(bs[i], r[i], r[i]) })
	each(func(i int) { g.VMULPS_BCST(c.f32(expLn2Lo), kf[i], l[i]) })
	each(func(i int) { g.VSUBPS(l[i], r[i], r[i]) }) // r - k*ln2Lo
	// E(r) in Estrin's scheme, in runtime/qgemm's exp2part order.
	coef := func(k int) operand.Mem { return c.f32(expPoly[7-k]) } // 1/k!, k = 2..7
	pair := func(dst []reg.VecVirtual, k int) {                    // b_k + b_{k+1} r
		each(func(i int) { g.VMULPS_BCST(coef(k+1), r[i], dst[i]) })
		each(func(i int) { g.VADDPS_BCST(coef(k), dst[i], dst[i]) })
	}
	mulAdd := func(dst, x, y, z []reg.VecVirtual) { // x*y + z
		each(func(i int) { g.VMULPS(y[i], x[i], dst[i]) })
		each(func(i int) { g.VADDPS(z[i], dst[i], dst[i]) })
	}
	r2, r4, e0, e1, e2, e3, f0, f1 := vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs(), vecs()
	each(func(i int) { g.VMULPS(r[i], r[i], r2[i]) })
	pair(e1, 2)
	each(func(i int) { g.VADDPS_BCST(c.f32(1), r[i], e0[i]) }) // 1 + r
	mulAdd(f0, e1, r2, e0)
	pair(e3, 6)
	pair(e2, 4)
	mulAdd(f1, e3, r2, e2)
	each(func(i int) { g.VMULPS(r2[i], r2[i], r4[i]) })
	mulAdd(p, f1, r4, f0)
	each(func(i int) { g.VPADDD_BCST(c.u32(127), ki[i], ki[i]) })
	each(func(i int) { g.VPSLLD(operand.U8(23), ki[i], ki[i]) }) // 2^k
	each(func(i int) { g.VMULPS(ki[i], p[i], res[i]) })
	return res
}
