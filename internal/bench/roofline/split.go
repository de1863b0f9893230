package roofline

import (
	"fmt"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// GEMMSplit is where a GEMM step's time goes: shares of the time its
// engine's workers spent in it (qgemm.Profile, summed over workers) in
// kernel calls, in epilogues run after them, in fused kernel-and-epilogue
// calls (the AMX variant's; SQC_EPILOGUE=separate splits those) and in row
// finishes (the LayerNorm fused after a residual GEMM). The shares add up
// to 1; the time workers wait between blocks is in none of them.
type GEMMSplit struct {
	Kernel   float64 `json:"kernel"`
	Epilogue float64 `json:"epilogue"`
	Fused    float64 `json:"fused"`
	Finish   float64 `json:"finish"`
}

// String is e.g. "kernel 86% + epilogue 9% + finish 5%", parts of 0 left out.
func (s GEMMSplit) String() string {
	out := ""
	for _, p := range []struct {
		name  string
		share float64
	}{{"kernel", s.Kernel}, {"epilogue", s.Epilogue}, {"kernel+epilogue fused", s.Fused}, {"finish", s.Finish}} {
		if p.share <= 0 {
			continue
		}
		if out != "" {
			out += " + "
		}
		out += fmt.Sprintf("%s %.0f%%", p.name, 100*p.share)
	}
	return out
}

// SplitGEMMs repeats the first step of each distinct GEMM step of p (by
// exec.Cost label) for about perOp, p having been compiled with
// exec.Options.ProfileGEMM, and returns each label's GEMMSplit.
func SplitGEMMs(p *exec.Program, inputs map[string]*compiler.Tensor, perOp time.Duration) (map[string]GEMMSplit, error) {
	e := p.Engine()
	if _, ok := e.Profile(); !ok {
		return nil, fmt.Errorf("roofline: the program's GEMM engine does not profile (compile it with exec.Options.ProfileGEMM)")
	}
	splits := map[string]GEMMSplit{}
	err := p.Replay(inputs, func(i int, s exec.Step, c exec.Cost, again func() error) error {
		if _, done := splits[c.Label]; done || c.Kind != exec.KindGEMM {
			return nil
		}
		before, _ := e.Profile()
		for calls, start := 0, time.Now(); calls < 3 || time.Since(start) < perOp; calls++ {
			if err := again(); err != nil {
				return fmt.Errorf("roofline: replay of step #%d %s: %w", i, s.Call(), err)
			}
		}
		after, _ := e.Profile()
		d := after.Sub(before)
		if total := d.Total().Seconds(); total > 0 {
			splits[c.Label] = GEMMSplit{Kernel: d.Kernel.Seconds() / total, Epilogue: d.Epilogue.Seconds() / total,
				Fused: d.Fused.Seconds() / total, Finish: d.Finish.Seconds() / total}
		}
		return nil
	})
	return splits, err
}
