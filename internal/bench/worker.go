package bench

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/sqc-dev/sqc/compiler"

	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/cpu"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Worker modes offered by NewWorker.
const (
	ModeINT8     = "int8"      // fastest INT8 kernels (AMX where allowed)
	ModeINT8VNNI = "int8-vnni" // INT8 with AMX off: the AVX512-VNNI kernels
	// ModeINT8AttnFP32 is ModeINT8 with FP32 attention (--attention
	// fp32), offered beside it when the worker's own quantisation has
	// INT8 attention (the default), and ModeINT8Attn8 the reverse, so that
	// one peer-harness run times both side by side.
	ModeINT8AttnFP32 = "int8-attn32"
	ModeINT8Attn8    = "int8-attn8"
	// ModeINT8SeparateEpilogue is ModeINT8 with the GEMM epilogue kept out
	// of the kernel call (exec.Options.SeparateEpilogue), offered where
	// ModeINT8's kernels apply it inside (AMX): what fusing it gains.
	ModeINT8SeparateEpilogue = "int8-sepepi"
	// ModeINT8FinishColumn and ModeINT8FinishRow are ModeINT8 with the
	// block order of the GEMMs that end in a fused LayerNorm forced
	// (exec.Options.FinishOrder, as SQC_FINISH_ORDER=column|row does),
	// offered where ModeINT8 runs AMX kernels: the planner's rule for that
	// order was measured on VNNI only, so one peer-harness run on AMX rates
	// its choice against both orders.
	ModeINT8FinishColumn = "int8-fincol"
	ModeINT8FinishRow    = "int8-finrow"
)

// WorkerOptions configure NewWorker.
type WorkerOptions struct {
	Source  Source
	Threads int
	Quant   QuantOptions
	// Log receives progress and request errors (stderr in the CLI).
	Log io.Writer
}

// NewWorker builds the model once, quantises it and compiles one engine
// per mode (int8, and int8-vnni where a VNNI engine can be made), ready to
// Serve. The FP32 reference outputs of the check inputs are computed
// first, so {"op": "check"} reports each mode's agreement with sqc's FP32
// interpreter (the peers' weights differ from ours, so torch/fp32 cannot
// be the reference).
func NewWorker(o WorkerOptions) (*Worker, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "sqc worker: "+format+"\n", args...)
		}
	}
	m, err := Load(o.Source)
	if err != nil {
		return nil, err
	}
	checkIn, err := m.CheckInputs()
	if err != nil {
		return nil, err
	}
	wideIn, err := m.WideCheckInputs()
	if err != nil {
		return nil, err
	}
	fp32, err := NewFP32(m.Graph, EngineOptions{Threads: o.Threads})
	if err != nil {
		return nil, err
	}
	ref, err := fp32.Run(checkIn)
	var wideRef map[string]*compiler.Tensor
	if err == nil {
		wideRef, err = fp32.Run(wideIn)
	}
	fp32.Close()
	if err != nil {
		return nil, fmt.Errorf("FP32 reference of the check input: %w", err)
	}
	// Positions the mask excludes hold no meaning (zero in packed runs,
	// computed values in the interpreter's): Agreement compares the rest.
	compiler.ZeroMaskedTokens(ref, checkIn["attention_mask"])
	compiler.ZeroMaskedTokens(wideRef, wideIn["attention_mask"])
	q := o.Quant
	if q.Threads == 0 {
		q.Threads = o.Threads
	}
	info, err := m.Quantize(q)
	if err != nil {
		return nil, err
	}
	logf("%s: calibrated on %d x %d random tokens in %.1f s, %d Linears quantised", m.Name, info.CalibSequences, info.CalibSeq, info.Calibration.Seconds(), info.QLinears)
	w := &Worker{System: "sqc", Model: m, Log: o.Log}
	engines := map[string]any{}
	modes := []modeSpec{{name: ModeINT8, graph: m.Graph}, {name: ModeINT8VNNI, isa: "vnni", graph: m.Graph}}
	other, err := otherAttention(m, q)
	if err != nil {
		return nil, err
	}
	modes = append(modes, other, modeSpec{name: ModeINT8SeparateEpilogue, graph: m.Graph, separate: true},
		modeSpec{name: ModeINT8FinishColumn, graph: m.Graph, finish: qgemm.FinishColumnMajor},
		modeSpec{name: ModeINT8FinishRow, graph: m.Graph, finish: qgemm.FinishRowMajor})
	int8Fused, int8ISA := false, qgemm.ISAGo // set by the first mode, ModeINT8
	for _, mode := range modes {
		if why := mode.notOffered(int8ISA, int8Fused); mode.name != ModeINT8 && why != "" {
			logf("mode %s not offered: %s", mode.name, why)
			continue
		}
		e, err := NewINT8(mode.graph, EngineOptions{Threads: o.Threads, ISA: mode.isa, SeparateEpilogue: mode.separate, FinishOrder: mode.finish})
		if err != nil {
			if mode.isa == "" {
				w.Close()
				return nil, err
			}
			logf("mode %s not offered: %v", mode.name, err)
			continue
		}
		if mode.isa != "" {
			// qgemm takes the ISA as a ceiling and quietly runs a lower
			// family where the CPU lacks it: offer the mode only if it
			// really runs the kernels it is named after.
			if got := e.(*int8Engine).prog.Engine().ISA().String(); got != mode.isa {
				logf("mode %s not offered: the GEMM kernel would be %s", mode.name, got)
				e.Close()
				continue
			}
		}
		fused := e.(*int8Engine).prog.Engine().FusedEpilogue()
		if mode.name == ModeINT8 {
			int8Fused, int8ISA = fused, e.(*int8Engine).prog.Engine().ISA()
		}
		w.Modes = append(w.Modes, WorkerMode{Name: mode.name, Engine: e})
		engines[mode.name] = e.Describe()
	}
	w.Env = map[string]any{
		"go": runtime.Version(), "gomaxprocs": runtime.GOMAXPROCS(0), "threads": o.Threads,
		"cpu": cpu.Detect().String(), "engines": engines, "model": m.Name, "random_weights": m.Random,
		"calibration": fmt.Sprintf("%d x %d random token ids", info.CalibSequences, info.CalibSeq),
	}
	w.Check = func() (map[string]any, error) {
		acc := map[string]any{}
		for _, mode := range w.Modes {
			out, err := mode.Engine.Run(checkIn)
			if err != nil {
				return nil, fmt.Errorf("mode %s: %w", mode.Name, err)
			}
			compiler.ZeroMaskedTokens(out, checkIn["attention_mask"])
			a, err := Agreement(ref, out, "sqc/fp32-interp")
			if err != nil {
				return nil, fmt.Errorf("mode %s: %w", mode.Name, err)
			}
			// The same over WideCheckInputs, as "cos_logits_wide" etc.
			if out, err = mode.Engine.Run(wideIn); err != nil {
				return nil, fmt.Errorf("mode %s: %w", mode.Name, err)
			}
			compiler.ZeroMaskedTokens(out, wideIn["attention_mask"])
			wide, err := Agreement(wideRef, out, "sqc/fp32-interp")
			if err != nil {
				return nil, fmt.Errorf("mode %s: %w", mode.Name, err)
			}
			for k, v := range wide {
				if strings.HasPrefix(k, "cos_") {
					a[k+"_wide"] = v
				}
			}
			a["wide_sequences"] = WideCheckSequences
			acc[mode.Name] = a
		}
		return acc, nil
	}
	return w, nil
}

// otherAttention is the worker mode with the attention precision the
// worker's quantisation q did not choose, on a copy of m's quantised graph
// that differs in that alone.
func otherAttention(m *Model, q QuantOptions) (modeSpec, error) {
	a, err := passes.AttentionPrecision(q.Passes.Attention)
	if err != nil {
		return modeSpec{}, err
	}
	spec := modeSpec{name: ModeINT8AttnFP32, graph: m.Graph.Clone()}
	other := passes.AttentionFP32
	if a == passes.AttentionFP32 {
		spec.name, other = ModeINT8Attn8, passes.AttentionINT8
	}
	// QuantizeAttention sets the precision on the quantised graph (an
	// attention made FP32 gets back the sqc.Quantize of its output), and
	// WriteU8Directly, the only later pass that reads it, fuses that
	// quantisation into an attention made INT8: the graph the other
	// precision would have made.
	list := []passes.Pass{passes.QuantizeAttention(passes.QuantOptions{Attention: other}), passes.WriteU8Directly}
	if err := passes.Run(spec.graph, list, passes.Options{CheckIR: true, Level: compiler.VerifyQuantized}); err != nil {
		return modeSpec{}, fmt.Errorf("%s: %s attention for mode %s: %w", m.Name, other, spec.name, err)
	}
	return spec, nil
}

// modeSpec is a worker mode to build: its name, the ISA cap of its
// kernels ("": the fastest) and its graph.
type modeSpec struct {
	name, isa string
	graph     *compiler.Graph
	separate  bool              // EngineOptions.SeparateEpilogue
	finish    qgemm.FinishOrder // EngineOptions.FinishOrder
}

// notOffered says why mode, a variant of ModeINT8 for a comparison, would
// compare nothing beside a ModeINT8 engine running int8ISA kernels (with
// the GEMM epilogue inside the kernel call where int8Fused): "" where it
// is worth offering.
func (s modeSpec) notOffered(int8ISA qgemm.ISA, int8Fused bool) string {
	switch {
	case s.separate && !int8Fused:
		return fmt.Sprintf("mode %s applies its GEMM epilogues outside the kernel call already", ModeINT8)
	case s.finish != qgemm.FinishByModel && int8ISA != qgemm.ISAAMX:
		return fmt.Sprintf("mode %s runs %s kernels, whose finish order was measured (%s forces it)", ModeINT8, int8ISA, qgemm.EnvFinishOrder)
	}
	return ""
}

// Close closes the worker's engines.
func (w *Worker) Close() {
	for _, m := range w.Modes {
		m.Engine.Close()
	}
	w.Modes = nil
}
