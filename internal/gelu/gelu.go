// Package gelu is sqc's float32 GELU in its two forms, the erf GELU
// gelu(x) = x*Phi(x) with Phi the standard normal CDF (Gelu, HuggingFace's
// "gelu") and the tanh approximation 0.5*x*(1+tanh(sqrt(2/pi)*(x +
// 0.044715*x^3))) (GeluTanh, "gelu_new" and "gelu_pytorch_tanh"): the one
// Go definition that the GEMM epilogue (runtime/qgemm, ActGelu and
// ActGeluTanh) and the standalone activations (runtime/nn.Gelu,
// nn.GeluTanh) share, and the tables that their AVX-512 versions (emitted
// by asmgen/geluavo) evaluate. The vector code computes Eval's float32
// operations in the same order, with a fused multiply-add exactly where
// Eval calls FMA32, so both give the same bits.
//
// Method. Both forms satisfy f(x) - f(-x) = x (Phi(x) + Phi(-x) = 1, tanh
// is odd), so f(x) = max(x, 0) + g(|x|) with g(u) = f(-u), a smooth
// function of u >= 0 that decays to 0 (|g| < 2e-8 from u = 5.8 on, for
// both). With b = min(|x|*InvWidth, Clamp) (InvWidth = 2.5: intervals 0.4
// wide), i = roundEven(b) in [0, 15] picks an interval and r = b - i in
// [-0.5, 0.5] is the position in it (exact: VREDUCEPS); g is then a
// degree-5 polynomial in r with the coefficients Table[k][i] (one VPERMPS
// per coefficient: a 16-entry table fits one zmm register), evaluated by
// Horner's rule with fused multiply-adds. The two forms differ only in
// their table (Coeffs, TanhCoeffs). Interval 15 (|x| >= 5.8) is all zeros,
// so f(x) = max(x, 0) there, and interval 0 has no constant term, so small
// x keep their relative accuracy (f(x) ~ x/2). The absolute error against
// the float64 function is below 3e-7 everywhere for both forms
// (TestAccuracy), half a float32 ulp of the largest results it affects.
//
// About 18 vector operations per 16 values, against ~80 and a division for
// the erfc-and-exp formulation this replaced (and a tanh, an exp and a
// division, for the tanh form written out).
//
// A GEMM epilogue whose output is quantised to u8 with a code step far
// above their error may evaluate the same intervals with degree-3
// polynomials (ShortCoeffs, ShortTanhCoeffs: GeluShort, GeluTanhShort;
// absolute error below 1e-5), two VPERMPS and two FMAs fewer per 16
// values: runtime/qgemm's ActGeluU8 and ActGeluTanhU8, which the IR pass
// passes.ShortenGeluForU8 chooses.
package gelu

import "math"

// Parameters of the interval split (see the package comment).
const (
	// InvWidth is 1 / the interval width (0.4), exact in float32.
	InvWidth float32 = 2.5
	// Clamp bounds |x|*InvWidth: it selects interval 15, all zeros, for
	// |x| >= 14.5/InvWidth = 5.8, for infinities and for NaN (MINPS gives
	// its second operand for a NaN).
	Clamp float32 = 15
	// Degree is the degree of the polynomial on each interval.
	Degree = 5
	// Intervals is the number of table entries: one zmm register of
	// float32 coefficients, indexed by VPERMPS.
	Intervals = 16
)

// Table[k][i] is the coefficient of r^k of interval i: a least-squares
// fit in float64 of g((i + r)/InvWidth) over 64 Chebyshev nodes of r in
// [-0.5, 0.5] ([0, 0.5] with no constant term for interval 0), rounded to
// float32 (fit_test.go refits and compares).
type Table [Degree + 1][Intervals]float32

// Coeffs is the erf GELU's table.
var Coeffs = Table{
	{0, -0.13783129, -0.16948433, -0.13808362, -0.08767887, -0.045500264, -0.019674081, -0.0071543623, -0.0021988407, -0.00057279115, -0.00012668526, -2.3815348e-05, -3.8080295e-06, -5.181644e-07, -6.0021435e-08, 0},
	{-0.19999997, -0.078908086, 0.00795913, 0.04718144, 0.04906962, 0.034092724, 0.018219735, 0.007843252, 0.002776777, 0.00081749517, 0.00020145992, 4.17338e-05, 7.288396e-06, 1.0752481e-06, 1.3420615e-07, 0},
	{0.063829884, 0.054208614, 0.031518918, 0.008700509, -0.004968711, -0.008638617, -0.006736559, -0.0036982882, -0.0015716391, -0.00053649984, -0.00014986859, -3.4628956e-05, -6.6637494e-06, -1.0728977e-06, -1.4500719e-07, 0},
	{8.095987e-06, -0.0060334727, -0.00830581, -0.0063631004, -0.0027261374, -9.956964e-08, 0.0010090041, 0.00090784195, 0.0005078155, 0.00021053929, 6.8519366e-05, 1.7978757e-05, 3.8606195e-06, 6.84781e-07, 1.0096366e-07, 0},
	{-0.0017346721, -0.0011333663, 1.664201e-05, 0.0008194502, 0.0008657749, 0.00046138917, 7.810216e-05, -8.735572e-05, -9.403135e-05, -5.3195497e-05, -2.1354452e-05, -6.591626e-06, -1.6200541e-06, -3.230557e-07, -5.287524e-08, 0},
	{5.9532173e-05, 0.00020233553, 0.00022303837, 8.427741e-05, -5.343779e-05, -9.1347516e-05, -5.5843397e-05, -1.3090099e-05, 6.4615024e-06, 8.111677e-06, 4.4904655e-06, 1.7016935e-06, 4.8765736e-07, 1.10121746e-07, 2.0026953e-08, 0},
}

// AbsMask clears a float32's sign bit (VANDPS).
const AbsMask uint32 = 0x7FFFFFFF

// TanhCoeffs is the tanh GELU's table.
var TanhCoeffs = Table{
	{0, -0.13783883, -0.16956832, -0.13829724, -0.08786304, -0.045402303, -0.019276842, -0.006688891, -0.0018695643, -0.00041258038, -7.024629e-05, -9.002126e-06, -8.463921e-07, -5.688568e-08, -2.6620983e-09, 0},
	{-0.19999997, -0.07893647, 0.0078334855, 0.047090456, 0.04924021, 0.034439705, 0.018423984, 0.0077833836, 0.002597256, 0.0006752724, 0.00013404932, 1.985035e-05, 2.1394044e-06, 1.6362411e-07, 8.655019e-09, 0},
	{0.06382986, 0.054171067, 0.031480316, 0.008785739, -0.0048243236, -0.008630061, -0.006866778, -0.0038068087, -0.0015835126, -0.00049911503, -0.000117899835, -2.0478865e-05, -2.557916e-06, -2.243163e-07, -1.3470794e-08, 0},
	{8.275946e-06, -0.006050488, -0.008282305, -0.006317312, -0.002741894, -6.123939e-05, 0.0009881704, 0.0009365733, 0.0005357961, 0.00021562094, 6.2613e-05, 1.3049421e-05, 1.9216038e-06, 1.9598207e-07, 1.3539695e-08, 0},
	{-0.0017438236, -0.0011302717, 2.9420722e-05, 0.00081362965, 0.00084687263, 0.00046154304, 9.341444e-05, -8.10289e-05, -9.8879646e-05, -5.8012953e-05, -2.2184704e-05, -5.8145242e-06, -1.049035e-06, -1.2898433e-07, -1.0636236e-08, 0},
	{6.0872906e-05, 0.00020588166, 0.00022213068, 7.91934e-05, -5.243424e-05, -8.6330605e-05, -5.553647e-05, -1.6020429e-05, 5.3778185e-06, 8.867384e-06, 5.1131965e-06, 1.7687697e-06, 3.9697878e-07, 5.864718e-08, 5.6751754e-09, 0},
}

// Gelu returns the float32 erf-GELU of x, Eval with Coeffs.
//
//go:noinline
func Gelu(x float32) float32 { return Eval(x, &Coeffs) }

// GeluTanh returns the float32 tanh-GELU of x, Eval with TanhCoeffs.
//
//go:noinline
func GeluTanh(x float32) float32 { return Eval(x, &TanhCoeffs) }

// ShortDegree is the degree of the short tables, ShortCoeffs and
// ShortTanhCoeffs: the GELU of a GEMM epilogue that quantises its output
// to u8 with a code step of at least ShortMinStep, so that their absolute
// error, below ShortMaxError (TestAccuracy), moves a value across a
// rounding boundary only where it lies within 1% of a step of one. Two
// fewer coefficients
// are two fewer VPERMPS and FMAs per 16 values, of about 25 vector
// operations: the u8 GELU epilogue is bound by the two ports that run
// 512-bit operations (Zen 5 here, Sapphire Rapids and its successors: p0
// and p5), and measured 0.82x the time with degree 3 on Zen 5.
const ShortDegree = 3

// ShortMaxError bounds the absolute error of GeluShort and GeluTanhShort
// against the exact GELUs (TestAccuracy holds them to it; the fit reaches
// 9.2e-6).
const ShortMaxError = 2e-5

// ShortMinStep is the smallest u8 code step (quantisation scale) for which
// the short tables may replace the full ones: ShortMaxError is 1% of it.
// BERT's FFN GELU outputs, about [-0.17, 5..10], have steps of 0.02-0.04.
const ShortMinStep = 100 * ShortMaxError

// ShortCoeffs is the erf GELU's short table (coefficients above
// ShortDegree are zero and never read), fitted as Coeffs is.
var ShortCoeffs = Table{
	{0, -0.13782243, -0.16948445, -0.13809001, -0.08768564, -0.045503866, -0.019674692, -0.0071536796, -0.0021981061, -0.00057237555, -0.00012651843, -2.376385e-05, -3.7953728e-06, -5.156406e-07, -5.960835e-08, 0},
	{-0.2000392, -0.07891204, 0.007954774, 0.047179792, 0.049070667, 0.03409451, 0.018220825, 0.007843508, 0.0027766507, 0.0008173367, 0.00020137221, 4.1700565e-05, 7.278871e-06, 1.0730972e-06, 1.3381499e-07, 0},
	{0.06430241, 0.053925272, 0.03152308, 0.008905372, -0.0047522676, -0.008523269, -0.006717033, -0.0037201273, -0.001595147, -0.0005497987, -0.00015520719, -3.6276862e-05, -7.068763e-06, -1.1536616e-06, -1.58226e-07, 0},
	{-0.001625157, -0.005970243, -0.008236111, -0.0063367635, -0.0027428367, -2.8645669e-05, 0.0009915531, 0.0009037513, 0.00050983473, 0.00021307419, 6.992264e-05, 1.8510535e-05, 4.013012e-06, 7.191941e-07, 1.0722208e-07, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
}

// ShortTanhCoeffs is the tanh GELU's short table.
var ShortTanhCoeffs = Table{
	{0, -0.13782999, -0.16956854, -0.13830361, -0.08786966, -0.04540591, -0.019277573, -0.006688258, -0.0018687918, -0.00041212715, -7.007298e-05, -8.9567e-06, -8.381965e-07, -5.5877987e-08, -2.5790028e-09, 0},
	{-0.20003937, -0.078940496, 0.007829146, 0.04708891, 0.049241234, 0.034441393, 0.018425068, 0.0077836965, 0.002597151, 0.00067509915, 0.00013394945, 1.9815803e-05, 2.131651e-06, 1.6247866e-07, 8.544176e-09, 0},
	{0.06430462, 0.053888496, 0.03148767, 0.008989146, -0.0046126056, -0.008514674, -0.0068434244, -0.0038270662, -0.0016082326, -0.0005136183, -0.000123446, -2.1932496e-05, -2.8201748e-06, -2.5656237e-07, -1.6129853e-08, 0},
	{-0.0016329128, -0.00598615, -0.008212889, -0.006292564, -0.0027582797, -8.8217705e-05, 0.00097081525, 0.00093156693, 0.0005374767, 0.00021839199, 6.421087e-05, 1.3602161e-05, 2.0456598e-06, 2.1430932e-07, 1.5313187e-08, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
}

// GeluShort returns the erf GELU of x with the short table.
//
//go:noinline
func GeluShort(x float32) float32 { return EvalDegree(x, &ShortCoeffs, ShortDegree) }

// GeluTanhShort returns the tanh GELU of x with the short table.
//
//go:noinline
func GeluTanhShort(x float32) float32 { return EvalDegree(x, &ShortTanhCoeffs, ShortDegree) }

// Eval returns the GELU whose table is c (see the package comment):
// f(±Inf) = +Inf / 0, f(NaN) = NaN. Every step is one vector instruction
// of the assembly, in this order. Gelu and GeluTanh are not inlined:
// FMA32's float64 arithmetic stays out of their callers, whose listings
// runtime/nn's TestNoFusedMultiplyAdd searches for fused multiply-adds.
func Eval(x float32, c *Table) float32 { return EvalDegree(x, c, Degree) }

// EvalDegree is Eval with the polynomial's degree (at most Degree): the
// coefficients of c above it are not read.
func EvalDegree(x float32, c *Table, degree int) float32 {
	y := x * InvWidth                                                    // VMULPS
	b := MinPS(math.Float32frombits(math.Float32bits(y)&AbsMask), Clamp) // VANDPS, VMINPS
	i := int32(math.RoundToEven(float64(b)))                             // VCVTPS2DQ: 0..15
	r := b - float32(i)                                                  // VREDUCEPS: exact
	p := c[degree][i]                                                    // VPERMPS (each coefficient)
	for k := degree - 1; k >= 0; k-- {
		p = FMA32(p, r, c[k][i]) // VFMADD213PS
	}
	return MaxPS(0, x) + p // VMAXPS, VADDPS
}

// FMA32 returns a*b + c rounded once to float32, as VFMADD*PS does. The
// product is exact in float64; the sum is rounded to float64 with round
// to odd (nearest, then the odd neighbour if inexact), which makes the
// final rounding to float32 correct: float32(math.FMA(a, b, c)) would
// round twice and can differ in the last bit.
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 48 significant bits
	fc := float64(c)
	s := p + fc
	// Two-sum: e = (p + fc) - s exactly.
	bp := s - fc
	bc := s - bp
	e := (p - bp) + (fc - bc)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		// Inexact and even: step one ulp towards the exact sum (s != 0
		// here, and the neighbour is odd).
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	return float32(s)
}

// MinPS and MaxPS are the x86 MINPS/MAXPS lane operations: if either
// operand is NaN (or both are zeros), the second operand is returned. Go
// references of assembly that uses them (here, runtime/qgemm's epilogue)
// call these so that NaNs and signed zeros come out the same.
func MinPS(a, b float32) float32 {
	if a < b {
		return a
	}
	return b
}

func MaxPS(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}
