package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/sqc-dev/sqc/compiler/exec"
)

// RunMemory is the memory the timed forward passes need, measured apart
// from the build: Run releases the FP32 graph, the calibration data and
// everything else only the build used, returns the freed memory to the
// OS, resets the kernel's peak RSS and only then warms up and times.
type RunMemory struct {
	// Held is what the compiled program holds (INT8 only): its weights
	// by kind and its activation workspace, after the runs.
	Held *HeldMemory `json:"held,omitempty"`
	// StartRSSBytes is the RSS after the release, before the first run;
	// RunPeakRSSBytes the peak RSS during warm-up and timed runs (0:
	// unknown, see Method).
	StartRSSBytes   int64 `json:"start_rss_bytes,omitempty"`
	RunPeakRSSBytes int64 `json:"run_peak_rss_bytes,omitempty"`
	// BuildPeakRSSBytes is the process's peak RSS before the release:
	// the build's (FP32 model, calibration, quantisation, compilation).
	BuildPeakRSSBytes int64 `json:"build_peak_rss_bytes,omitempty"`
	// Ratio is RunPeakRSSBytes / (Held.WeightBytes + Held.ArenaBytes),
	// when both are known.
	Ratio float64 `json:"ratio,omitempty"`
	// Method says how the run's peak was measured, or why it was not.
	Method string `json:"method"`
}

// HeldMemory is exec.Memory for reports, in bytes.
type HeldMemory struct {
	WeightBytes     int64 `json:"weight_bytes"`      // every constant: the sum of the next six
	PackedGEMMBytes int64 `json:"packed_gemm_bytes"` // INT8 GEMM weights, packed, with column sums
	GEMMParamBytes  int64 `json:"gemm_param_bytes"`  // epilogue scales and biases
	EmbeddingBytes  int64 `json:"embedding_bytes"`   // f32 word, position, token-type tables
	NormParamBytes  int64 `json:"norm_param_bytes"`  // LayerNorm gamma and beta
	F32LinearBytes  int64 `json:"f32_linear_bytes"`  // Linears kept in FP32
	ConstantBytes   int64 `json:"constant_bytes"`    // other initializers
	// I8InitializerBytes is i8 data held besides the packed weights (0:
	// no quantised weight is held twice).
	I8InitializerBytes int64 `json:"i8_initializer_bytes"`
	ArenaBytes         int64 `json:"arena_bytes"` // activations + attention scratch
	ActivationBytes    int64 `json:"activation_bytes"`
	ScratchBytes       int64 `json:"scratch_bytes"`
	// PlannedArenaBytes is the arena of exec.PlanMemory at this batch x
	// sequence: what the engine's activations hold after a run of that
	// shape besides buffers it cannot plan, and a generated package's
	// arena; 0 if the schedule cannot be planned.
	PlannedArenaBytes int64 `json:"planned_arena_bytes,omitempty"`
}

func heldMemory(m exec.Memory) *HeldMemory {
	return &HeldMemory{
		WeightBytes: m.Weights(), PackedGEMMBytes: m.PackedGEMM, GEMMParamBytes: m.GEMMParams,
		EmbeddingBytes: m.Embeddings, NormParamBytes: m.NormParams, F32LinearBytes: m.F32Linear,
		ConstantBytes: m.Constants, I8InitializerBytes: m.I8Initializers,
		ArenaBytes: m.Arena(), ActivationBytes: m.Activations, ScratchBytes: m.Scratch,
	}
}

// releaseBuild drops what only the build needed: the model's graph (the
// FP32 graph, quantised in place; its i8 weights are packed into the
// program) unless the engine runs it (FP32). Inputs must be made before.
func (p *Prepared) releaseBuild(fp32 bool) {
	if !fp32 {
		p.Model.Graph = nil
	}
	p.Build.Quant = nil
}

// startRunMemory returns freed memory to the OS and resets the peak RSS,
// so that the peak read after the runs is theirs.
func startRunMemory(fp32 bool) *RunMemory {
	runtime.GC()
	debug.FreeOSMemory()
	rm := &RunMemory{}
	// Read before the reset: on Linux, clear_refs also resets getrusage's
	// ru_maxrss for a process whose threads have not exited.
	rm.BuildPeakRSSBytes, _ = PeakRSS()
	if err := ResetPeakRSS(); err != nil {
		rm.Method = fmt.Sprintf("unknown: %v; the process peak (build included) is all there is", err)
		return rm
	}
	cur, _, ok := RSS()
	if !ok {
		rm.Method = "unknown: no /proc/self/status VmRSS/VmHWM"
		return rm
	}
	rm.StartRSSBytes = cur
	rm.Method = "VmHWM after GC, FreeOSMemory and a reset by /proc/self/clear_refs"
	if fp32 {
		rm.Method += "; the FP32 graph stays (the interpreter runs it)"
	}
	return rm
}

// finish reads the run's peak and, for a compiled program, what it holds.
func (rm *RunMemory) finish(prog *exec.Program, batch, seq int) {
	if rm.StartRSSBytes > 0 {
		if _, peak, ok := RSS(); ok {
			// The high-water mark since the reset includes the moment
			// StartRSSBytes was read, but the kernel's RSS counters are
			// per-CPU batched and approximate (tens of pages), so VmHWM
			// can read a little below that earlier VmRSS.
			rm.RunPeakRSSBytes = max(peak, rm.StartRSSBytes)
		}
	}
	if prog == nil {
		return
	}
	rm.Held = heldMemory(prog.Memory())
	if p, err := exec.PlanMemory(prog.Schedule, batch, seq); err == nil {
		rm.Held.PlannedArenaBytes = p.ArenaBytes
	}
	if total := rm.Held.WeightBytes + rm.Held.ArenaBytes; total > 0 && rm.RunPeakRSSBytes > 0 {
		rm.Ratio = float64(rm.RunPeakRSSBytes) / float64(total)
	}
}

// text describes rm in the lines of WriteText ("memory", "run RSS").
func (rm *RunMemory) text(processPeak int64) string {
	var b strings.Builder
	if h := rm.Held; h != nil {
		fmt.Fprintf(&b, "memory     weights %s (packed INT8 GEMM %s, f32 embeddings %s, epilogue %s, LayerNorm %s, FP32 Linears %s, other %s",
			byteSize(float64(h.WeightBytes)), byteSize(float64(h.PackedGEMMBytes)), byteSize(float64(h.EmbeddingBytes)),
			byteSize(float64(h.GEMMParamBytes)), byteSize(float64(h.NormParamBytes)), byteSize(float64(h.F32LinearBytes)), byteSize(float64(h.ConstantBytes)))
		if h.I8InitializerBytes > 0 {
			fmt.Fprintf(&b, "; %s of i8 initializers held twice", byteSize(float64(h.I8InitializerBytes)))
		}
		fmt.Fprintf(&b, ")\n           + arena %s (activations %s, attention scratch %s) = %s\n",
			byteSize(float64(h.ArenaBytes)), byteSize(float64(h.ActivationBytes)), byteSize(float64(h.ScratchBytes)),
			byteSize(float64(h.WeightBytes+h.ArenaBytes)))
		if h.PlannedArenaBytes > 0 {
			fmt.Fprintf(&b, "           (the memory plan for this shape, compiler/exec's arena and a generated package's: %s)\n",
				byteSize(float64(h.PlannedArenaBytes)))
		}
	}
	if rm.RunPeakRSSBytes > 0 {
		fmt.Fprintf(&b, "run RSS    peak %s during warm-up and timed runs", byteSize(float64(rm.RunPeakRSSBytes)))
		if rm.Ratio > 0 {
			fmt.Fprintf(&b, " = %.3f x (weights + arena)", rm.Ratio)
		}
		fmt.Fprintf(&b, "; %s before them\n           (%s)\n", byteSize(float64(rm.StartRSSBytes)), rm.Method)
	} else {
		fmt.Fprintf(&b, "run RSS    %s\n", rm.Method)
	}
	fmt.Fprintf(&b, "peak RSS   %s for the whole process, build included\n", rssText(max(processPeak, rm.BuildPeakRSSBytes)))
	return b.String()
}
