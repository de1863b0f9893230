//go:build amd64 && !noasm

package qgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/internal/gelu"
	"github.com/sqc-dev/sqc/runtime/cpu"
)

// asmEpilogue is one assembly epilogue: its EpilogueFunc and the
// generated function under it.
type asmEpilogue struct {
	name string
	f    EpilogueFunc
	asm  epilogueAsm
}

// allAsmEpilogues are the assembly epilogues and whether a CPU runs them.
var allAsmEpilogues = []struct {
	asmEpilogue
	runs func(cpu.Features) bool
}{
	{asmEpilogue{"avx512", epilogueAVX512, epilogueAVX512Asm}, func(f cpu.Features) bool { return f.AVX512 }},
	{asmEpilogue{"avx2", epilogueAVX2, epilogueAVX2Asm}, func(f cpu.Features) bool { return f.AVX2 && f.FMA }},
}

// asmEpilogues returns the assembly epilogues this CPU runs, and skips
// the test when there is none.
func asmEpilogues(t testing.TB) []asmEpilogue {
	var es []asmEpilogue
	f := cpu.Detect()
	for _, e := range allAsmEpilogues {
		if e.runs(f) {
			es = append(es, e.asmEpilogue)
		}
	}
	if len(es) == 0 {
		t.Skipf("CPU runs no assembly epilogue (features: %v)", f)
	}
	return es
}

// epilogueCase builds an Epilogue for an m x n block at (m0, n0) of an
// output of rows x cols, with the options in flags (the epi* bits and the
// Act above epiActShift, as epilogueAVX512 passes them), and random data
// covering the clamps of the u8 output and the GELU range.
func epilogueCase(rng *rand.Rand, flags, m0, n0, m, n int) (*Epilogue, []int32, int) {
	rows, cols := m0+m+1, n0+n+3
	ldc := n + 5
	c := make([]int32, m*ldc)
	for i := range c {
		switch rng.IntN(8) {
		case 0:
			c[i] = int32(rng.Uint32()) // anywhere in int32
		default:
			c[i] = rng.Int32N(1<<17) - 1<<16
		}
	}
	randF := func(lo, hi float32) float32 { return lo + (hi-lo)*rng.Float32() }
	ep := &Epilogue{Scale: make([]float32, cols)}
	for j := range ep.Scale {
		ep.Scale[j] = randF(-2e-4, 2e-4)
	}
	if flags&epiColSum != 0 {
		ep.AZeroPoint = 128
		ep.ColSum = make([]int32, cols)
		for j := range ep.ColSum {
			ep.ColSum[j] = rng.Int32N(1<<15) - 1<<14
		}
	}
	if flags&epiBias != 0 {
		ep.Bias = make([]float32, cols)
		for j := range ep.Bias {
			ep.Bias[j] = randF(-3, 3)
		}
	}
	ep.Act = Act(flags >> epiActShift)
	if flags&epiRow != 0 {
		// Dynamic quantisation: every row its own zero point and scale
		// (RowZeroPoint is ignored without ColSum, as in epilogueGo).
		ep.RowScale = make([]float32, rows)
		ep.RowZeroPoint = make([]int32, rows)
		for i := range ep.RowScale {
			ep.RowScale[i] = randF(0.001, 0.05)
			ep.RowZeroPoint[i] = rng.Int32N(256)
		}
	}
	if flags&epiResidual != 0 {
		ep.ResidualStride = cols + 2
		ep.Residual = make([]float32, rows*ep.ResidualStride)
		for j := range ep.Residual {
			ep.Residual[j] = randF(-2, 2)
		}
		ep.MulResidual = flags&epiResidualMul != 0
	}
	ep.OutStride = cols + 1
	if flags&epiU8 != 0 {
		ep.OutU8 = make([]uint8, rows*ep.OutStride)
		for j := range ep.OutU8 {
			ep.OutU8[j] = 0xA5 // sentinel: must survive outside the block
		}
		ep.OutInvScale = randF(5, 40)
		ep.OutZeroPoint = rng.Int32N(256)
	} else {
		ep.OutF32 = make([]float32, rows*ep.OutStride)
		for j := range ep.OutF32 {
			ep.OutF32[j] = -12345
		}
	}
	return ep, c, ldc
}

// withAct returns the flags bits that carry a.
func withAct(a Act) int { return int(a) << epiActShift }

// TestEpilogueAsmCoversEveryAct asks, of each assembly epilogue, for an assembly loop for every
// Act (an Act without one runs correctly, on the Go epilogue, but slowly),
// with a u8 output for those made for u8 outputs only (Act.U8Only), and
// checks that the assembly leaves the output alone and says so for a value
// that is no Act and for an f32 output of a u8-only Act.
func TestEpilogueAsmCoversEveryAct(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		// 8 columns: the AVX2 epilogue's smallest block.
		c := []int32{3, 3, 3, 3, 3, 3, 3, 3}
		scale := []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
		for a := range actCount + 1 {
			out := make([]float32, 8)
			out[0] = -7
			ok := e.asm(&c[0], 8, 1, 8, nil, 0, nil, &scale[0], nil, nil, nil, 0, &out[0], nil, 8, 0, 0, 0, 0, withAct(a))
			switch {
			case a < actCount && !a.U8Only() && (!ok || out[0] != a.Apply(1.5)):
				t.Errorf("%s %v: returned %v and wrote %g, want true and %g: give it a loop in asmgen/qgemm's epilogueActs", e.name, a, ok, out[0], a.Apply(1.5))
			case (a == actCount || a.U8Only()) && (ok || out[0] != -7):
				t.Errorf("%s %v, f32 output: returned %v and wrote %g, want false and the output untouched", e.name, a, ok, out[0])
			}
			if a < actCount {
				// 1.5 times invScale 100 is code 150, inside [0, 255].
				out8 := make([]uint8, 8)
				ok := e.asm(&c[0], 8, 1, 8, nil, 0, nil, &scale[0], nil, nil, nil, 0, nil, &out8[0], 8, 100, 0, 0, 255, withAct(a)|epiU8)
				if want := QuantizeU8(a.Apply(1.5), 100, 0); !ok || out8[0] != want {
					t.Errorf("%s %v, u8 output: returned %v and wrote %d, want true and %d: give it a loop in asmgen/qgemm's epilogueActs", e.name, a, ok, out8[0], want)
				}
			}
		}
	}
}

// cloneOutputs returns a copy of ep with fresh copies of its outputs.
func cloneOutputs(ep *Epilogue) *Epilogue {
	e := *ep
	e.OutF32 = append([]float32(nil), ep.OutF32...)
	e.OutU8 = append([]uint8(nil), ep.OutU8...)
	if ep.OutF32 == nil {
		e.OutF32 = nil
	}
	return &e
}

// sameBits compares the outputs of two epilogue runs bit for bit.
func sameBits(t *testing.T, what string, want, got *Epilogue) {
	t.Helper()
	bad := 0
	for i := range want.OutF32 {
		w, g := math.Float32bits(want.OutF32[i]), math.Float32bits(got.OutF32[i])
		if w != g {
			if bad < 5 {
				t.Errorf("%s: OutF32[%d] = %g (%#x), Go gives %g (%#x)", what, i, got.OutF32[i], g, want.OutF32[i], w)
			}
			bad++
		}
	}
	for i := range want.OutU8 {
		if want.OutU8[i] != got.OutU8[i] {
			if bad < 5 {
				t.Errorf("%s: OutU8[%d] = %d, Go gives %d", what, i, got.OutU8[i], want.OutU8[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d differences", what, bad)
	}
}

// TestEpilogueAsmMatchesGo runs every option combination (colsum/zero
// point, bias, each Act, residual added or multiplied, f32 or u8 output,
// per-row zero point and scale) on odd block sizes at odd offsets and compares the whole
// output buffers, so a stray write outside the block fails too.
func TestEpilogueAsmMatchesGo(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		rng := rand.New(rand.NewPCG(5, 6))
		for features := range 1 << 6 {
			for act := range actCount {
				flags := features | withAct(act)
				for _, n := range []int{1, 7, 16, 17, 33, 100} {
					for _, m := range []int{1, 3} {
						m0, n0 := rng.IntN(3), rng.IntN(20)
						ep, c, ldc := epilogueCase(rng, flags, m0, n0, m, n)
						want, got := cloneOutputs(ep), cloneOutputs(ep)
						epilogueGo(want, c, ldc, m0, n0, m, n)
						e.f(got, c, ldc, m0, n0, m, n)
						sameBits(t, fmt.Sprintf(e.name+" %v features=%06b m=%d n=%d at (%d,%d)", act, features, m, n, m0, n0), want, got)
					}
				}
			}
		}
	}
}

// TestEpilogueAsmZeroPoints covers u8 zero points at and past the ends
// of the range the assembly's float clamp handles (past them it falls
// back to the Go epilogue), with outputs spread over the whole u8 range
// and beyond (including NaN and infinities).
func TestEpilogueAsmZeroPoints(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		rng := rand.New(rand.NewPCG(13, 14))
		for _, zp := range []int32{0, 1, 128, 255, 256, -1, 1000, -65281, -65282, 65536, 65537, 1 << 30, -1 << 30} {
			for k, flags := range []int{epiU8, epiColSum | epiBias | withAct(ActGelu) | epiU8, epiColSum | epiRow | epiResidual | epiU8, epiU8, epiColSum | epiBias | withAct(ActRelu) | epiU8, epiColSum | epiBias | withAct(ActGeluTanh) | epiU8, epiColSum | epiBias | withAct(ActGeluU8) | epiU8, epiColSum | epiBias | withAct(ActGeluTanhU8) | epiU8} {
				ep, c, ldc := epilogueCase(rng, flags, 1, 2, 3, 37)
				ep.OutZeroPoint = zp
				if k == 0 {
					ep.OutInvScale = 1 << 20 // v*invScale far past the clamps either way
				}
				if len(ep.Scale) > 5 {
					ep.Scale[3] = float32(math.NaN())
					ep.Scale[4] = float32(math.Inf(-1))
					ep.Scale[5] = 1e-12 // |v*invScale| about 1: rounding near 0
				}
				want, got := cloneOutputs(ep), cloneOutputs(ep)
				epilogueGo(want, c, ldc, 1, 2, 3, 37)
				e.f(got, c, ldc, 1, 2, 3, 37)
				sameBits(t, fmt.Sprintf(e.name+" zp=%d flags=%07b", zp, flags), want, got)
			}
		}
	}
}

// TestEpilogueAsmOneRowOperand covers the Go fallback for an Epilogue
// with only one of RowScale and RowZeroPoint.
func TestEpilogueAsmOneRowOperand(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, drop := range []string{"RowScale", "RowZeroPoint"} {
			ep, c, ldc := epilogueCase(rng, epiColSum|epiBias|withAct(ActGelu)|epiRow, 2, 3, 5, 37)
			if drop == "RowScale" {
				ep.RowScale = nil
			} else {
				ep.RowZeroPoint = nil
			}
			want, got := cloneOutputs(ep), cloneOutputs(ep)
			epilogueGo(want, c, ldc, 2, 3, 5, 37)
			e.f(got, c, ldc, 2, 3, 5, 37)
			sameBits(t, e.name+" without "+drop, want, got)
		}
	}
}

// TestEpilogueAsmRowBounds requires a panic, not a stray read, when
// the per-row operands are shorter than the block's rows.
func TestEpilogueAsmRowBounds(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		func() {
			ep, c, ldc := epilogueCase(rand.New(rand.NewPCG(11, 12)), epiColSum|epiRow, 1, 0, 3, 16)
			ep.RowScale = ep.RowScale[:3] // rows 1..3 need 4
			defer func() {
				if recover() == nil {
					t.Error(e.name + " accepted a RowScale shorter than the block")
				}
			}()
			e.f(ep, c, ldc, 1, 0, 3, 16)
		}()
	}
}

// TestEpilogueAsmActBits feeds float32 values from the whole range
// (every 4099th bit pattern, including infinities, NaNs of both signs and
// denormals, plus a dense sweep of [-16, 16]) through each activation:
// c = 1 and Scale = x give v = x exactly (NaNs quiet, as every v is).
func TestEpilogueAsmActBits(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		var xs []float32
		for bits := uint64(0); bits < 1<<32; bits += 4099 {
			xs = append(xs, math.Float32frombits(uint32(bits)))
		}
		for i := -1600000; i <= 1600000; i += 7 {
			xs = append(xs, float32(i)*1e-5)
		}
		// Every interval boundary of GELU's table lookup, and its neighbours.
		for k := float32(0.5); k <= gelu.Clamp; k++ {
			for _, x := range []float32{k / gelu.InvWidth, -k / gelu.InvWidth} {
				xs = append(xs, x, math.Nextafter32(x, 0), math.Nextafter32(x, 2*x))
			}
		}
		xs = append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
			math.Float32frombits(1), math.Float32frombits(0x80000001), // smallest denormals
			math.Float32frombits(0x7FC00000), math.Float32frombits(0xFFC00000), math.Float32frombits(0x7FC12345), math.Float32frombits(0xFFF54321))
		n := len(xs)
		c := make([]int32, n)
		for i := range c {
			c[i] = 1
		}
		for act := ActNone + 1; act < actCount; act++ {
			ep := &Epilogue{Scale: xs, Act: act, OutF32: make([]float32, n), OutStride: n}
			want, got := cloneOutputs(ep), cloneOutputs(ep)
			epilogueGo(want, c, n, 0, 0, 1, n)
			e.f(got, c, n, 0, 0, 1, n)
			sameBits(t, e.name+" "+act.String(), want, got)
		}
	}
}

func TestEpilogueAsmBounds(t *testing.T) {
	for _, e := range asmEpilogues(t) {
		func() {
			ep := &Epilogue{Scale: make([]float32, 10), OutF32: make([]float32, 20), OutStride: 10}
			c := make([]int32, 20)
			defer func() {
				if recover() == nil {
					t.Error(e.name + " accepted a block past the end of OutF32")
				}
			}()
			e.f(ep, c, 10, 1, 0, 2, 10) // rows 1..2 of a 2-row output
		}()
	}
}

// BenchmarkEpilogue compares the Go, AVX-512 and AVX2 epilogues on a 64 x 768
// block (one driver macro-block of a hidden=768 layer): f32 output, and
// bias + GELU or ReLU + u8 output (the FFN1 epilogue).
func BenchmarkEpilogue(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	const m, n = 64, 768
	for _, c := range []struct {
		name  string
		flags int
	}{{"f32", epiColSum}, {"u8", epiColSum | epiU8}, {"gelu-f32", epiColSum | withAct(ActGelu)}, {"bias-gelu-u8", epiColSum | epiBias | withAct(ActGelu) | epiU8}, {"row-bias-f32", epiColSum | epiRow | epiBias}, {"row-bias-gelu-f32", epiColSum | epiRow | epiBias | withAct(ActGelu)}, {"relu-f32", epiColSum | withAct(ActRelu)}, {"bias-relu-u8", epiColSum | epiBias | withAct(ActRelu) | epiU8}, {"row-bias-relu-f32", epiColSum | epiRow | epiBias | withAct(ActRelu)}, {"bias-gelutanh-u8", epiColSum | epiBias | withAct(ActGeluTanh) | epiU8}, {"bias-gelu_u8-u8", epiColSum | epiBias | withAct(ActGeluU8) | epiU8},
		{"silu-mulres-u8", epiColSum | withAct(ActSilu) | epiResidual | epiResidualMul | epiU8}, {"gelu-mulres-u8", epiColSum | withAct(ActGelu) | epiResidual | epiResidualMul | epiU8}} {
		for _, impl := range []struct {
			name string
			f    EpilogueFunc
		}{{"go", epilogueGo}, {"avx512", epilogueAVX512}, {"avx2", epilogueAVX2}} {
			b.Run(c.name+"/"+impl.name, func(b *testing.B) {
				if impl.name != "go" && !slices.ContainsFunc(asmEpilogues(b), func(e asmEpilogue) bool { return e.name == impl.name }) {
					b.Skip("CPU does not run the " + impl.name + " epilogue")
				}
				ep, acc, ldc := epilogueCase(rng, c.flags, 0, 0, m, n)
				clock := startCPUClock(b)
				for b.Loop() {
					impl.f(ep, acc, ldc, 0, 0, m, n)
				}
				clock.reportRate(b, m*n, "Melem/s")
			})
		}
	}
}
