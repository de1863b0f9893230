package qgemm

import (
	"math/rand/v2"
	"testing"
	"time"
)

// sleepFinisher is a RowFinisher that takes a known time per call.
type sleepFinisher struct{ d time.Duration }

func (s sleepFinisher) FinishRows(int, int, int) { time.Sleep(s.d) }

// TestProfile checks that an Engine built with Options.Profile splits its
// GEMMs' time into the parts its variant runs (kernel and epilogue, or the
// fused call), counts the row finishes and the serial calls, and that
// one without it reports nothing.
func TestProfile(t *testing.T) {
	const m, k, n = 100, 96, 80
	prob := newProblem(t, rand.New(rand.NewPCG(91, 92)), gemmShape{m: m, n: n, k: k}, 0)
	a, b := prob.a, prob.b
	scale := make([]float32, n)
	for j := range scale {
		scale[j] = 1e-3
	}
	for _, tv := range testVariants() {
		if tv.why != "" {
			continue // TestVariantsMatchReference reports the skip
		}
		v := tv.v
		t.Run(tv.name, func(t *testing.T) {
			plain, err := New(Options{Threads: 2, Variant: &v})
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			if p, ok := plain.Profile(); ok || p != (Profile{}) {
				t.Errorf("without Options.Profile: Profile() = %+v, %v; want nothing", p, ok)
			}
			e, err := New(Options{Threads: 2, Variant: &v, Profile: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			out := make([]float32, m*n)
			const finishSleep = 2 * time.Millisecond
			ep := &Epilogue{AZeroPoint: 128, ColSum: b.ColSum, Scale: scale, OutF32: out, OutStride: n, Finish: sleepFinisher{finishSleep}}
			before, _ := e.Profile()
			if err := e.GEMM(a, m, b.Kp, b, ep); err != nil {
				t.Fatal(err)
			}
			p, ok := e.Profile()
			if !ok {
				t.Fatal("with Options.Profile: Profile() reports nothing")
			}
			p = p.Sub(before)
			pl := e.plan(m, b, ep)
			rowBlocks := (m + pl.mc - 1) / pl.mc
			if want := int64(rowBlocks * ((b.Np + pl.nc - 1) / pl.nc)); p.Blocks != want {
				t.Errorf("Blocks = %d, want the plan's %d", p.Blocks, want)
			}
			// Every row block is finished once, after sleeping finishSleep.
			if p.Finish < time.Duration(rowBlocks)*finishSleep {
				t.Errorf("Finish = %v, want at least %d row blocks x %v", p.Finish, rowBlocks, finishSleep)
			}
			if v.fusedBlock != nil {
				if p.Fused <= 0 || p.Kernel != 0 || p.Epilogue != 0 {
					t.Errorf("fused variant: %+v, want only Fused (and Finish) timed", p)
				}
			} else if p.Kernel <= 0 || p.Epilogue <= 0 || p.Fused != 0 {
				t.Errorf("%+v, want Kernel and Epilogue timed, no Fused", p)
			}
			if p.Total() != p.Kernel+p.Epilogue+p.Fused+p.Finish {
				t.Errorf("Total() = %v, want the sum of the parts of %+v", p.Total(), p)
			}
			// Serial calls count as a block each.
			before, _ = e.Profile()
			c := make([]int32, GEMMSerialScratchLen(m, b))
			ep.Finish = nil
			if err := e.GEMMSerial(c, a, m, b.Kp, b, ep); err != nil {
				t.Fatal(err)
			}
			if err := e.KernelSerial(c, a, m, b.Kp, b); err != nil {
				t.Fatal(err)
			}
			if err := e.EpilogueSerial(ep, c, b.Np, m, n); err != nil {
				t.Fatal(err)
			}
			after, _ := e.Profile()
			if d := after.Sub(before); d.Blocks != 3 || d.Kernel <= 0 || d.Epilogue <= 0 || d.Finish != 0 {
				t.Errorf("three serial calls: %+v, want 3 blocks, kernel and epilogue time, no finish", d)
			}
		})
	}
}
