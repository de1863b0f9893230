package qgemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGEMMSerialMatchesGEMM: GEMMSerial, and KernelSerial with
// EpilogueSerial on column blocks, give GEMM's bits on every variant (the
// test-only emulations too, the fused AMX kernel's among them), for
// shapes with row and column tails and per-row quantisation.
func TestGEMMSerialMatchesGEMM(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, tv := range testVariants() {
		if tv.why != "" {
			continue // TestVariantsMatchReference reports the skip
		}
		v := tv.v
		e, err := New(Options{Threads: 2, Variant: &v})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for _, sh := range [][3]int{{1, 1, 1}, {17, 64, 16}, {130, 64, 64}, {33, 150, 37}, {5, 200, 90}} {
			m, k, n := sh[0], sh[1], sh[2]
			w := make([]int8, k*n)
			for i := range w {
				w[i] = int8(r.IntN(255) - 127)
			}
			b, err := PackB(w, k, n)
			if err != nil {
				t.Fatal(err)
			}
			a := make([]uint8, m*b.Kp)
			for i := range a {
				a[i] = uint8(r.Uint32())
			}
			scale, rowScale, rowZP := make([]float32, n), make([]float32, m), make([]int32, m)
			for j := range scale {
				scale[j] = r.Float32() + 0.01
			}
			for i := range rowScale {
				rowScale[i], rowZP[i] = r.Float32()+0.01, int32(r.IntN(256))
			}
			ep := func(out []float32) Epilogue {
				return Epilogue{ColSum: b.ColSum, Scale: scale, RowScale: rowScale, RowZeroPoint: rowZP, OutF32: out, OutStride: n}
			}
			want := make([]float32, m*n)
			ew := ep(want)
			if err := e.GEMM(a, m, b.Kp, b, &ew); err != nil {
				t.Fatal(err)
			}
			c := make([]int32, GEMMSerialScratchLen(m, b))
			got := make([]float32, m*n)
			eg := ep(got)
			if err := e.GEMMSerial(c, a, m, b.Kp, b, &eg); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s %dx%dx%d", tv.name, m, k, n)
			sameF32(t, what+" GEMMSerial", got, want)
			// Column blocks of 16 into separate outputs, stitched back.
			if err := e.KernelSerial(c, a, m, b.Kp, b); err != nil {
				t.Fatal(err)
			}
			blocks := make([]float32, m*n)
			for j0 := 0; j0 < n; j0 += NBlock {
				nb := min(NBlock, n-j0)
				part := make([]float32, m*nb)
				epb := Epilogue{ColSum: b.ColSum[j0:], Scale: scale[j0:], RowScale: rowScale, RowZeroPoint: rowZP, OutF32: part, OutStride: nb}
				if err := e.EpilogueSerial(&epb, c[j0:], b.Np, m, nb); err != nil {
					t.Fatal(err)
				}
				for i := range m {
					copy(blocks[i*n+j0:i*n+j0+nb], part[i*nb:(i+1)*nb])
				}
			}
			sameF32(t, what+" KernelSerial+EpilogueSerial", blocks, want)
		}
	}
}

func sameF32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// TestSerialRejectsBadArguments: short scratch, short A, a narrow stride
// and a nil Epilogue are errors wrapping ErrInvalidArgument, and nothing is
// written.
func TestSerialRejectsBadArguments(t *testing.T) {
	e, err := New(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b, err := PackB(make([]int8, 64*20), 64, 20)
	if err != nil {
		t.Fatal(err)
	}
	a := make([]uint8, 3*64)
	out := make([]float32, 3*20)
	ep := &Epilogue{Scale: make([]float32, 20), OutF32: out, OutStride: 20}
	c := make([]int32, GEMMSerialScratchLen(3, b))
	for name, err := range map[string]error{
		"short scratch":    e.GEMMSerial(c[:len(c)-1], a, 3, 64, b, ep),
		"short A":          e.KernelSerial(c, a[:2*64], 3, 64, b),
		"lda below Kp":     e.KernelSerial(c, a, 3, 32, b),
		"nil epilogue":     e.EpilogueSerial(nil, c, b.Np, 3, 20),
		"ldc below n":      e.EpilogueSerial(ep, c, 16, 3, 20),
		"short c":          e.EpilogueSerial(ep, c[:2*b.Np], b.Np, 3, 20),
		"short Scale":      e.EpilogueSerial(&Epilogue{Scale: make([]float32, 5), OutF32: out, OutStride: 20}, c, b.Np, 3, 20),
		"no output matrix": e.EpilogueSerial(&Epilogue{Scale: make([]float32, 20)}, c, b.Np, 3, 20),
	} {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: error %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, x := range out {
		if x != 0 {
			t.Fatal("a rejected call wrote output")
		}
	}
}
