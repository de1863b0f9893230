package qgemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gemmShape is one driver test case (logical sizes).
type gemmShape struct{ m, n, k int }

func (s gemmShape) String() string { return fmt.Sprintf("M=%d,N=%d,K=%d", s.m, s.n, s.k) }

// gemmShapes are all combinations of the brief's sizes whose product is at
// most 2^24 multiply-adds, plus a few big ones, so the whole test stays
// within seconds on two cores.
func gemmShapes() []gemmShape {
	big := map[gemmShape]bool{
		{128, 768, 768}: true, {384, 768, 768}: true, {128, 3072, 768}: true,
		{128, 768, 3072}: true, {33, 3072, 3072}: true,
	}
	var out []gemmShape
	for _, m := range []int{1, 7, 33, 128, 384} {
		for _, n := range []int{1, 17, 768, 3072} {
			for _, k := range []int{4, 20, 768, 3072} {
				s := gemmShape{m, n, k}
				if m*n*k <= 1<<24 || big[s] {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// testVariant is a variant under test; why says why it cannot run here.
type testVariant struct {
	name string
	v    Variant
	why  string
}

// testVariants lists every variant of Variants(), the reference kernel as
// a variant of its own, plus those of this build that the CPU lacks
// (skipped with their reason) and test-only ones (extraTestVariants).
func testVariants() []testVariant {
	var out []testVariant
	have := map[ISA]bool{}
	for _, v := range Variants() {
		have[v.ISA] = true
		out = append(out, testVariant{name: v.ISA.String(), v: v})
	}
	for isa := ISAGo; isa <= ISAAMX; isa++ {
		if !have[isa] {
			out = append(out, testVariant{name: isa.String(), why: fmt.Sprintf("%v variant not available in this build/CPU (features: %v)", isa, cpuFeatures())})
		}
	}
	out = append(out, testVariant{name: "ref", v: Variant{ISA: ISAGo, Kernel: refKernel}})
	return append(out, extraTestVariants()...)
}

// testProblem is one GEMM's inputs and its expected product.
type testProblem struct {
	s    gemmShape
	a    []uint8
	lda  int
	w    []int8 // K x N row-major
	b    *PackedB
	prod []int32 // m x n: A . W from the unpacked weights
}

func newProblem(t testing.TB, rng *rand.Rand, s gemmShape, ldaPad int) *testProblem {
	t.Helper()
	kp := RoundUp(s.k, KBlock)
	p := &testProblem{s: s, lda: kp + ldaPad}
	p.a = make([]uint8, s.m*p.lda)
	for i := range p.a {
		p.a[i] = uint8(rng.Uint32()) // including junk in columns K..lda-1
	}
	p.w = make([]int8, s.k*s.n)
	for i := range p.w {
		p.w[i] = int8(rng.Uint32())
	}
	// Extremes: row 0 of A all 255 against W's -128 and 127 columns.
	for kk := 0; kk < s.k; kk++ {
		p.a[kk] = 255
		p.w[kk*s.n] = -128
		if s.n > 1 {
			p.w[kk*s.n+1] = 127
		}
	}
	var err error
	if p.b, err = PackB(p.w, s.k, s.n); err != nil {
		t.Fatal(err)
	}
	p.prod = naiveProduct(p.a, p.lda, p.w, s.m, s.k, s.n)
	return p
}

// naiveProduct is the plain triple loop over the unpacked weights.
func naiveProduct(a []uint8, lda int, w []int8, m, k, n int) []int32 {
	c := make([]int32, m*n)
	for i := 0; i < m; i++ {
		row := c[i*n : i*n+n]
		for kk := 0; kk < k; kk++ {
			av := int32(a[i*lda+kk])
			for j, wv := range w[kk*n : kk*n+n] {
				row[j] += av * int32(wv)
			}
		}
	}
	return c
}

// Sentinels that fill every output buffer's guard regions (before, after
// and between rows); any write there is a failure.
const (
	guardF32Bits = 0x7FC0DEAD // a NaN payload no epilogue produces
	guardU8      = 0xA5
	guardElems   = 67
)

// epiOptions selects the epilogue features of a test case.
type epiOptions struct {
	u8, bias, residual, zeroPoint, rowScale, rowZeroPoint bool
	act                                                   Act
	mulResidual                                           bool // multiply by the residual (Epilogue.MulResidual)
}

func (o epiOptions) String() string {
	var parts []string
	add := func(on bool, s string) {
		if on {
			parts = append(parts, s)
		}
	}
	add(o.u8, "u8")
	add(!o.u8, "f32")
	add(o.bias, "bias")
	add(o.act != ActNone, o.act.String())
	add(o.residual && !o.mulResidual, "res")
	add(o.mulResidual, "mulres")
	add(o.zeroPoint, "zp128")
	add(o.rowScale, "rowscale")
	add(o.rowZeroPoint, "rowzp")
	return strings.Join(parts, "+")
}

// allEpiOptions returns every combination of the options GEMM takes: 2^6
// of the flags times the activations, those for u8 outputs only
// (Act.U8Only) with the u8 flags. The residual is multiplied where A has
// the static zero point and added elsewhere, so both forms meet every
// other option without doubling the cases.
func allEpiOptions() []epiOptions {
	var out []epiOptions
	for bits := 0; bits < 1<<6; bits++ {
		for act := range actCount {
			o := epiOptions{bits&1 != 0, bits&2 != 0, bits&4 != 0, bits&8 != 0, bits&16 != 0, bits&32 != 0, act, bits&4 != 0 && bits&8 != 0}
			if act.U8Only() && !o.u8 {
				continue
			}
			out = append(out, o)
		}
	}
	return out
}

// newEpilogue builds an Epilogue for p with options o; outputs sit inside
// guarded buffers (returned whole, for comparison), with row strides wider
// than N.
func newEpilogue(rng *rand.Rand, p *testProblem, o epiOptions) (ep *Epilogue, f32buf []float32, u8buf []uint8) {
	m, n, k := p.s.m, p.s.n, p.s.k
	randF := func(lo, hi float32) float32 { return lo + (hi-lo)*rng.Float32() }
	// Put typical accumulators (std ~ 11000*sqrt(K)) in the range of a few
	// units, where GELU and the u8 clamps both matter.
	unit := float32(3 / (11000 * math.Sqrt(float64(k))))
	ep = &Epilogue{Scale: make([]float32, n)}
	for j := range ep.Scale {
		ep.Scale[j] = unit * randF(0.5, 1.5)
	}
	if o.zeroPoint {
		ep.AZeroPoint = 128
		ep.ColSum = p.b.ColSum
	}
	if o.rowZeroPoint {
		ep.RowZeroPoint = make([]int32, m)
		for i := range ep.RowZeroPoint {
			ep.RowZeroPoint[i] = rng.Int32N(256)
		}
		ep.ColSum = p.b.ColSum
	}
	if o.rowScale {
		ep.RowScale = make([]float32, m)
		for i := range ep.RowScale {
			ep.RowScale[i] = randF(0.25, 2)
		}
	}
	if o.bias {
		ep.Bias = make([]float32, n)
		for j := range ep.Bias {
			ep.Bias[j] = randF(-2, 2)
		}
	}
	ep.Act = o.act
	if o.residual {
		ep.ResidualStride = n + 3
		ep.Residual = make([]float32, (m-1)*ep.ResidualStride+n)
		for i := range ep.Residual {
			ep.Residual[i] = randF(-2, 2)
		}
		ep.MulResidual = o.mulResidual
	}
	ep.OutStride = n + 5
	size := guardElems + (m-1)*ep.OutStride + n + guardElems
	if o.u8 {
		u8buf = make([]uint8, size)
		for i := range u8buf {
			u8buf[i] = guardU8
		}
		ep.OutU8 = u8buf[guardElems:]
		ep.OutInvScale = randF(10, 40)
		ep.OutZeroPoint = rng.Int32N(256)
	} else {
		f32buf = make([]float32, size)
		for i := range f32buf {
			f32buf[i] = math.Float32frombits(guardF32Bits)
		}
		ep.OutF32 = f32buf[guardElems:]
	}
	return ep, f32buf, u8buf
}

// expected runs the pure-Go epilogue on the naive product into fresh
// guarded buffers laid out like ep's.
func expected(p *testProblem, ep *Epilogue, f32buf []float32, u8buf []uint8) ([]float32, []uint8) {
	want := *ep
	wf, wu := pristine(f32buf, u8buf)
	if wf != nil {
		want.OutF32 = wf[guardElems:]
	} else {
		want.OutU8 = wu[guardElems:]
	}
	epilogueGo(&want, p.prod, p.s.n, 0, 0, p.s.m, p.s.n)
	return wf, wu
}

// pristine returns buffers the size of f32buf or u8buf (one is nil) filled
// with their guard values only.
func pristine(f32buf []float32, u8buf []uint8) ([]float32, []uint8) {
	if f32buf != nil {
		f := make([]float32, len(f32buf))
		for i := range f {
			f[i] = math.Float32frombits(guardF32Bits)
		}
		return f, nil
	}
	u := make([]uint8, len(u8buf))
	for i := range u {
		u[i] = guardU8
	}
	return nil, u
}

// compareOutputs checks got against want bit for bit over the whole
// buffers, guards included.
func compareOutputs(t *testing.T, what string, ep *Epilogue, gotF, wantF []float32, gotU, wantU []uint8) {
	t.Helper()
	bad := 0
	where := func(idx int) string {
		off := idx - guardElems
		if off < 0 || off >= len(gotF)+len(gotU)-2*guardElems || off%ep.OutStride >= len(ep.Scale) {
			return fmt.Sprintf("guard element %d", idx)
		}
		return fmt.Sprintf("out[%d][%d]", off/ep.OutStride, off%ep.OutStride)
	}
	for i := range gotF {
		if g, w := math.Float32bits(gotF[i]), math.Float32bits(wantF[i]); g != w {
			if bad < 5 {
				t.Errorf("%s: %s = %g (%#x), want %g (%#x)", what, where(i), gotF[i], g, wantF[i], w)
			}
			bad++
		}
	}
	for i := range gotU {
		if gotU[i] != wantU[i] {
			if bad < 5 {
				t.Errorf("%s: %s = %d, want %d", what, where(i), gotU[i], wantU[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d wrong bytes/elements", what, bad)
	}
}

// checkKernel runs one Kernel on p with guard rows and columns around C.
func checkKernel(t *testing.T, kern Kernel, p *testProblem) {
	t.Helper()
	const guardRows, padCols = 2, 3
	const guard = int32(0x5A5A5A5A)
	m, n := p.s.m, p.s.n
	nblocks := p.b.Np / NBlock
	ldc := p.b.Np + padCols
	buf := make([]int32, (m+2*guardRows)*ldc)
	for i := range buf {
		buf[i] = guard
	}
	c := buf[guardRows*ldc:]
	kern(&p.a[0], p.lda, &p.b.Data[0], p.b.Kp, &c[0], ldc, m, nblocks)
	bad := 0
	for i := -guardRows; i < m+guardRows; i++ {
		for j := 0; j < ldc; j++ {
			want := guard
			switch {
			case i < 0 || i >= m || j >= p.b.Np:
			case j < n:
				want = p.prod[i*n+j]
			default:
				want = 0 // padded columns have zero weights
			}
			if got := buf[(i+guardRows)*ldc+j]; got != want {
				if bad < 5 {
					t.Errorf("%v: C[%d][%d] = %d, want %d", p.s, i, j, got, want)
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%v: %d wrong elements", p.s, bad)
	}
}

// TestPackB checks the packed layout element by element against the
// formula of the package comment, for both input orders.
func TestPackB(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct{ k, n int }{{1, 1}, {4, 16}, {5, 17}, {64, 32}, {130, 47}} {
		w := make([]int8, s.k*s.n)
		wt := make([]int8, s.k*s.n)
		for kk := 0; kk < s.k; kk++ {
			for j := 0; j < s.n; j++ {
				v := int8(rng.Uint32())
				w[kk*s.n+j], wt[j*s.k+kk] = v, v
			}
		}
		p, err := PackB(w, s.k, s.n)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := PackBTransposed(wt, s.n, s.k)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kp != RoundUp(s.k, 64) || p.Np != RoundUp(s.n, 16) || len(p.Data) != p.Kp*p.Np || len(p.ColSum) != p.Np {
			t.Fatalf("K=%d N=%d: Kp=%d Np=%d len(Data)=%d len(ColSum)=%d", s.k, s.n, p.Kp, p.Np, len(p.Data), len(p.ColSum))
		}
		for nb := 0; nb < p.Np/16; nb++ {
			for kg := 0; kg < p.Kp/4; kg++ {
				for c := 0; c < 16; c++ {
					for j := 0; j < 4; j++ {
						kk, col := 4*kg+j, 16*nb+c
						var want int8
						if kk < s.k && col < s.n {
							want = w[kk*s.n+col]
						}
						idx := ((nb*(p.Kp/4)+kg)*16+c)*4 + j
						if p.Data[idx] != want || pt.Data[idx] != want {
							t.Fatalf("K=%d N=%d: Data[%d] (W[%d][%d]) = %d / transposed %d, want %d", s.k, s.n, idx, kk, col, p.Data[idx], pt.Data[idx], want)
						}
					}
				}
			}
		}
		for col := 0; col < p.Np; col++ {
			var want int32
			for kk := 0; kk < s.k && col < s.n; kk++ {
				want += int32(w[kk*s.n+col])
			}
			if p.ColSum[col] != want || pt.ColSum[col] != want {
				t.Fatalf("K=%d N=%d: ColSum[%d] = %d / %d, want %d", s.k, s.n, col, p.ColSum[col], pt.ColSum[col], want)
			}
		}
	}
}

func TestPackBRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		w    []int8
		k, n int
	}{{nil, 0, 4}, {make([]int8, 4), 4, 0}, {make([]int8, 5), 2, 3}, {make([]int8, 4), -1, -4}} {
		if _, err := PackB(c.w, c.k, c.n); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("PackB(len %d, %d, %d) = %v, want ErrInvalidArgument", len(c.w), c.k, c.n, err)
		}
		if _, err := PackBTransposed(c.w, c.n, c.k); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("PackBTransposed(len %d, %d, %d) = %v, want ErrInvalidArgument", len(c.w), c.n, c.k, err)
		}
	}
}

// TestVariantsMatchReference runs every variant's kernel on its own, and
// the driver forced to every variant (1 and 3 threads), against the naive
// product and the pure-Go epilogue, bit for bit, on the brief's shapes;
// the epilogue options rotate over the shapes.
func TestVariantsMatchReference(t *testing.T) {
	variants := testVariants()
	engines := map[string][2]*Engine{}
	for _, tv := range variants {
		if tv.why != "" {
			continue
		}
		var pair [2]*Engine
		for i, threads := range []int{1, 3} {
			e, err := New(Options{Threads: threads, Variant: &tv.v})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			pair[i] = e
		}
		engines[tv.name] = pair
	}
	rng := rand.New(rand.NewPCG(1, 2))
	opts := allEpiOptions()
	for si, s := range gemmShapes() {
		p := newProblem(t, rng, s, []int{0, 13, 64}[si%3])
		for vi, tv := range variants {
			if tv.why != "" {
				continue
			}
			t.Run(tv.name+"/kernel/"+s.String(), func(t *testing.T) { checkKernel(t, tv.v.Kernel, p) })
			o := opts[(si*7+vi*3)%len(opts)]
			e := engines[tv.name][(si+vi)%2]
			t.Run(fmt.Sprintf("%s/gemm/T=%d/%v/%v", tv.name, e.Threads(), s, o), func(t *testing.T) {
				runAndCompare(t, e, rng, p, o)
			})
		}
	}
	for _, tv := range variants {
		if tv.why != "" {
			t.Run(tv.name, func(t *testing.T) { t.Skip(tv.why) })
		}
	}
}

// runAndCompare runs e.GEMM on p with epilogue options o and compares the
// whole output buffer with the reference.
func runAndCompare(t *testing.T, e *Engine, rng *rand.Rand, p *testProblem, o epiOptions) {
	t.Helper()
	ep, f32buf, u8buf := newEpilogue(rng, p, o)
	wantF, wantU := expected(p, ep, f32buf, u8buf)
	if err := e.GEMM(p.a, p.s.m, p.lda, p.b, ep); err != nil {
		t.Fatal(err)
	}
	compareOutputs(t, fmt.Sprintf("%s %v %v", e.ISA(), p.s, o), ep, f32buf, wantF, u8buf, wantU)
}

// TestEveryEpilogueOption runs all 192 combinations of the epilogue
// options through the driver with every variant, on a shape with tails in
// every dimension and several macro-blocks.
func TestEveryEpilogueOption(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := newProblem(t, rng, gemmShape{m: 45, n: 83, k: 150}, 7)
	for _, tv := range testVariants() {
		if tv.why != "" {
			continue
		}
		e, err := New(Options{Threads: 2, Variant: &tv.v})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range allEpiOptions() {
			t.Run(tv.name+"/"+o.String(), func(t *testing.T) { runAndCompare(t, e, rng, p, o) })
		}
		e.Close()
	}
}

// TestStressConcurrentGEMMUnderGC runs GEMMs from 16 goroutines on shared
// Engines (every variant) while the GC runs in a loop; every result must
// stay exact.
func TestStressConcurrentGEMMUnderGC(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []gemmShape{{7, 40, 64}, {33, 100, 200}, {64, 96, 768}, {100, 257, 130}}
	type job struct {
		p      *testProblem
		ep     *Epilogue
		wantF  []float32
		wantU  []uint8
		f32buf []float32
		u8buf  []uint8
	}
	var engines []*Engine
	for _, tv := range testVariants() {
		if tv.why == "" {
			e, err := New(Options{Threads: 2, Variant: &tv.v})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			engines = append(engines, e)
		}
	}
	const goroutines, rounds = 16, 30
	var stop atomic.Bool
	var gcs atomic.Int64
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for !stop.Load() {
			runtime.GC()
			gcs.Add(1)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan string, goroutines)
	for g := range goroutines {
		// Each goroutine owns its problems and output buffers.
		var jobs []job
		for i, s := range shapes {
			p := newProblem(t, rng, s, g%3)
			opts := allEpiOptions()
			o := opts[(g*5+i*11)%len(opts)]
			ep, f32buf, u8buf := newEpilogue(rng, p, o)
			wantF, wantU := expected(p, ep, f32buf, u8buf)
			jobs = append(jobs, job{p, ep, wantF, wantU, f32buf, u8buf})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				j := jobs[r%len(jobs)]
				e := engines[(g+r)%len(engines)]
				// Back to all sentinels: after the GEMM the buffer must
				// equal the expected one, guards included.
				for i := range j.f32buf {
					j.f32buf[i] = math.Float32frombits(guardF32Bits)
				}
				for i := range j.u8buf {
					j.u8buf[i] = guardU8
				}
				if err := e.GEMM(j.p.a, j.p.s.m, j.p.lda, j.p.b, j.ep); err != nil {
					errs <- err.Error()
					return
				}
				for i := range j.f32buf {
					if math.Float32bits(j.f32buf[i]) != math.Float32bits(j.wantF[i]) {
						errs <- fmt.Sprintf("goroutine %d round %d (%s, %v): f32 element %d = %g, want %g", g, r, e.ISA(), j.p.s, i, j.f32buf[i], j.wantF[i])
						return
					}
				}
				for i := range j.u8buf {
					if j.u8buf[i] != j.wantU[i] {
						errs <- fmt.Sprintf("goroutine %d round %d (%s, %v): u8 element %d = %d, want %d", g, r, e.ISA(), j.p.s, i, j.u8buf[i], j.wantU[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-gcDone
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	t.Logf("%d goroutines x %d GEMMs on %d engines, %d GC cycles meanwhile", goroutines, rounds, len(engines), gcs.Load())
}

func TestSQCISAForcing(t *testing.T) {
	vs := Variants()
	if vs[len(vs)-1].ISA != ISAGo {
		t.Fatalf("Variants() does not end with the Go variant: %v", vs)
	}
	available := map[ISA]bool{}
	for _, v := range vs {
		available[v.ISA] = true
	}

	t.Setenv(EnvISA, "")
	e, err := New(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.ISA() != vs[0].ISA {
		t.Errorf("no SQC_ISA: got %v, want the fastest, %v", e.ISA(), vs[0].ISA)
	}
	t.Log(e.Describe())
	e.Close()

	for isa := ISAGo; isa <= ISAAMX; isa++ {
		for _, spelling := range []string{isa.String(), " " + strings.ToUpper(isa.String()) + " "} {
			t.Setenv(EnvISA, spelling)
			e, err := New(Options{Threads: 1})
			if err != nil {
				t.Fatalf("SQC_ISA=%q: %v", spelling, err)
			}
			got := e.ISA()
			switch {
			case available[isa] && got != isa:
				t.Errorf("SQC_ISA=%q: got %v, want %v", spelling, got, isa)
			case got > isa:
				t.Errorf("SQC_ISA=%q: got %v, above the ceiling", spelling, got)
			case !available[isa] && got != bestVariant(vs, isa).ISA:
				t.Errorf("SQC_ISA=%q (unavailable): got %v, want the best below, %v", spelling, got, bestVariant(vs, isa).ISA)
			}
			t.Logf("SQC_ISA=%q: %s", spelling, e.Describe())
			e.Close()
		}
	}

	t.Setenv(EnvISA, "sse9")
	if _, err := New(Options{}); !errors.Is(err, ErrUnknownISA) || !strings.Contains(err.Error(), EnvISA) {
		t.Errorf("SQC_ISA=sse9: err = %v, want ErrUnknownISA naming %s", err, EnvISA)
	}
	// Options.ISA takes precedence over the environment.
	e, err = New(Options{Threads: 1, ISA: "go"})
	if err != nil || e.ISA() != ISAGo {
		t.Fatalf("Options.ISA=go with SQC_ISA=sse9: %v, %v", e, err)
	}
	e.Close()
	if _, err := New(Options{ISA: "fast"}); !errors.Is(err, ErrUnknownISA) || !strings.Contains(err.Error(), "Options.ISA") {
		t.Errorf("Options.ISA=fast: err = %v, want ErrUnknownISA naming Options.ISA", err)
	}
	if _, err := New(Options{Variant: &Variant{ISA: ISAVNNI}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Variant without Kernel: err = %v, want ErrInvalidArgument", err)
	}
}

// TestSQCISAEmulatedAMX: SQC_ISA=amx-emulated selects the AMX variant with
// its tiles emulated wherever the CPU can emulate them, and its GEMMs give
// the reference bits on odd shapes and every epilogue set; elsewhere New
// fails with ErrISAUnavailable naming SQC_ISA.
func TestSQCISAEmulatedAMX(t *testing.T) {
	for _, name := range []string{"", ISAEmulatedAMX, " AMX-Emulated ", "vnni"} {
		if err := CheckISAName(name); err != nil {
			t.Errorf("CheckISAName(%q) = %v", name, err)
		}
	}
	if err := CheckISAName("amx-emulate"); !errors.Is(err, ErrUnknownISA) {
		t.Errorf("CheckISAName(amx-emulate) = %v, want ErrUnknownISA", err)
	}
	t.Setenv(EnvISA, " AMX-Emulated ")
	e, err := New(Options{Threads: 2})
	if _, can := EmulatedAMX(); !can {
		if !errors.Is(err, ErrISAUnavailable) || !strings.Contains(err.Error(), EnvISA) {
			t.Fatalf("SQC_ISA=amx-emulated without AVX512-VNNI: err = %v, want ErrISAUnavailable naming %s", err, EnvISA)
		}
		t.Skipf("this build or CPU cannot emulate AMX: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.ISA() != ISAAMX || !strings.Contains(e.Describe(), "emulated") {
		t.Fatalf("SQC_ISA=amx-emulated: %v, %s", e.ISA(), e.Describe())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i, o := range allEpiOptions() {
		s := gemmShape{m: 5 + 11*(i%6), n: 17 + 23*(i%7), k: 40 + 37*(i%9)} // odd sizes, no two alike in a row
		p := newProblem(t, rng, s, 5)
		ep, f32buf, u8buf := newEpilogue(rng, p, o)
		wantF, wantU := expected(p, ep, f32buf, u8buf)
		if err := e.GEMM(p.a, s.m, p.lda, p.b, ep); err != nil {
			t.Fatal(err)
		}
		compareOutputs(t, fmt.Sprintf("amx-emulated %v %v", s, o), ep, f32buf, wantF, u8buf, wantU)
	}
}

func TestSQCEpilogueForcing(t *testing.T) {
	t.Setenv(EnvISA, "")
	best := Variants()[0]
	fused := best.fusedBlock != nil
	for _, c := range []struct {
		value     string
		wantFused bool
		wantHow   string // in Describe, where the epilogue is fused
	}{
		{"", fused, "during the next block's tile work"},
		{"fused", fused, "during the next block's tile work"},
		{"block", fused, "per 32x32 block"},
		{" Separate ", false, ""},
	} {
		t.Setenv(EnvEpilogue, c.value)
		e, err := New(Options{Threads: 1})
		if err != nil {
			t.Fatalf("SQC_EPILOGUE=%q: %v", c.value, err)
		}
		if got := e.FusedEpilogue(); got != c.wantFused {
			t.Errorf("SQC_EPILOGUE=%q: fused kernel %v, want %v (%s)", c.value, got, c.wantFused, e.Describe())
		}
		if c.wantFused != strings.Contains(e.Describe(), "in the kernel call") || c.wantFused && !strings.Contains(e.Describe(), c.wantHow) {
			t.Errorf("SQC_EPILOGUE=%q: Describe() = %q does not say where the epilogue runs", c.value, e.Describe())
		}
		e.Close()
	}
	// The forced emulation of the pipelined kernel gives way to its
	// per-block form under SQC_EPILOGUE=block, on any CPU it runs on.
	for _, tv := range testVariants() {
		if tv.why != "" || tv.v.perBlock == nil {
			continue
		}
		t.Setenv(EnvEpilogue, "block")
		e, err := New(Options{Threads: 1, Variant: &tv.v})
		if err != nil {
			t.Fatal(err)
		}
		if d := e.Describe(); !strings.Contains(d, "per 32x32 block") {
			t.Errorf("%s under SQC_EPILOGUE=block: %s", tv.name, d)
		}
		e.Close()
	}
	t.Setenv(EnvEpilogue, "")
	e, err := New(Options{Threads: 1, SeparateEpilogue: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.FusedEpilogue() {
		t.Errorf("Options.SeparateEpilogue: the epilogue is still fused (%s)", e.Describe())
	}
	e.Close()
	// A forced variant with a fused kernel (the AMX emulation's, on CPUs
	// without AMX) keeps it unless told otherwise.
	for _, tv := range testVariants() {
		if tv.why != "" || tv.v.fusedBlock == nil {
			continue
		}
		for _, separate := range []bool{false, true} {
			e, err := New(Options{Threads: 1, Variant: &tv.v, SeparateEpilogue: separate})
			if err != nil {
				t.Fatal(err)
			}
			if e.FusedEpilogue() == separate {
				t.Errorf("%s with SeparateEpilogue=%v: FusedEpilogue() = %v (%s)", tv.name, separate, e.FusedEpilogue(), e.Describe())
			}
			e.Close()
		}
	}
	t.Setenv(EnvEpilogue, "inline")
	if _, err := New(Options{}); !errors.Is(err, ErrUnknownEpilogue) || !strings.Contains(err.Error(), EnvEpilogue) {
		t.Errorf("SQC_EPILOGUE=inline: err = %v, want ErrUnknownEpilogue naming %s", err, EnvEpilogue)
	}
}

func TestGEMMRejectsBadArguments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := newProblem(t, rng, gemmShape{m: 5, n: 20, k: 70}, 0)
	e, err := New(Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	good := func() *Epilogue {
		ep, _, _ := newEpilogue(rng, p, epiOptions{bias: true, residual: true, zeroPoint: true})
		return ep
	}
	if err := e.GEMM(p.a, 5, p.lda, p.b, good()); err != nil {
		t.Fatalf("valid call: %v", err)
	}
	badB := *p.b
	badB.Kp = 64
	shortB := *p.b
	shortB.Data = shortB.Data[:10]
	cases := []struct {
		name string
		a    []uint8
		m    int
		lda  int
		b    *PackedB
		edit func(*Epilogue) *Epilogue
	}{
		{"nil B", p.a, 5, p.lda, nil, nil},
		{"inconsistent Kp", p.a, 5, p.lda, &badB, nil},
		{"short B data", p.a, 5, p.lda, &shortB, nil},
		{"negative m", p.a, -1, p.lda, p.b, nil},
		{"lda < Kp", p.a, 5, 70, p.b, nil},
		{"short A", p.a[:len(p.a)-1], 5, p.lda, p.b, nil},
		{"nil epilogue", p.a, 5, p.lda, p.b, func(*Epilogue) *Epilogue { return nil }},
		{"short scale", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Scale = ep.Scale[:19]; return ep }},
		{"short bias", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Bias = ep.Bias[:0]; return ep }},
		{"zero point without ColSum", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.ColSum = nil; return ep }},
		{"short ColSum", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.ColSum = ep.ColSum[:3]; return ep }},
		{"short RowScale", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.RowScale = make([]float32, 4); return ep }},
		{"short RowZeroPoint", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.RowZeroPoint = make([]int32, 4); return ep }},
		{"bad activation", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Act = 9; return ep }},
		{"activation past the last", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Act = actCount; return ep }},
		{"residual stride < N", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.ResidualStride = 19; return ep }},
		{"short residual", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Residual = ep.Residual[:len(ep.Residual)-1]; return ep }},
		{"multiply without a residual", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.Residual, ep.MulResidual = nil, true; return ep }},
		{"two outputs", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.OutU8 = make([]uint8, 1000); return ep }},
		{"no output", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.OutF32 = nil; return ep }},
		{"out stride < N", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue { ep.OutStride = 19; return ep }},
		{"short output", p.a, 5, p.lda, p.b, func(ep *Epilogue) *Epilogue {
			ep.OutF32 = ep.OutF32[:4*ep.OutStride+19]
			return ep
		}},
	}
	for _, c := range cases {
		ep := good()
		if c.edit != nil {
			ep = c.edit(ep)
		}
		var before []float32
		if ep != nil {
			before = append(before, ep.OutF32...)
		}
		err := e.GEMM(c.a, c.m, c.lda, c.b, ep)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", c.name, err)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		if ep != nil {
			for i := range before {
				if math.Float32bits(ep.OutF32[i]) != math.Float32bits(before[i]) {
					t.Errorf("%s: output written despite the error", c.name)
					break
				}
			}
		}
	}
	if err := e.GEMM(nil, 0, p.lda, p.b, good()); err != nil {
		t.Errorf("m = 0: %v, want no-op", err)
	}
}

func TestGEMMDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	p := newProblem(t, rng, gemmShape{m: 100, n: 300, k: 200}, 0)
	ep, _, _ := newEpilogue(rng, p, epiOptions{bias: true, zeroPoint: true})
	for _, tv := range testVariants() {
		if tv.why != "" {
			continue
		}
		e, err := New(Options{Threads: 2, Variant: &tv.v})
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if err := e.GEMM(p.a, p.s.m, p.lda, p.b, ep); err != nil {
				t.Fatal(err)
			}
		})
		e.Close()
		if allocs != 0 {
			t.Errorf("%s: GEMM allocates %.1f times per call", tv.name, allocs)
		}
	}
}

// TestPlanBlocks checks the planner's invariants on many shapes: blocks
// fit the scratch, tile the output, and nc is a whole number of N-blocks.
func TestPlanBlocks(t *testing.T) {
	for _, isa := range []ISA{ISAGo, ISAAVX2, ISAVNNI, ISAAMX} {
		for _, workers := range []int{1, 2, 3, 8, 64} {
			for _, m := range []int{1, 2, 15, 16, 17, 31, 33, 100, 128, 384, 1024, 5000} {
				for _, nblocks := range []int{1, 2, 3, 48, 144, 192, 1000} {
					for _, kp := range []int{64, 768, 3072, 16384} {
						mc, nc, _ := planBlocks(m, nblocks, kp, workers, costsFor(isa), false)
						if mc < 1 || mc > max(m, 1) || nc < NBlock || nc%NBlock != 0 || nc > nblocks*NBlock ||
							mc*scratchStride(nc) > scratchElems {
							t.Fatalf("%v W=%d m=%d nblocks=%d kp=%d: mc=%d nc=%d", isa, workers, m, nblocks, kp, mc, nc)
						}
					}
				}
			}
		}
	}
}
