package exec

import (
	"unsafe"

	"github.com/sqc-dev/sqc/compiler"
)

// Memory is what a Program holds, in bytes, by kind: computed from the
// slices its steps and buffers reference (each backing array counted
// once, at its capacity, however many steps share it), not from a plan.
type Memory struct {
	// PackedGEMM is the INT8 GEMM weights in qgemm's packed layout with
	// their per-column sums (PackedB.Data and ColSum).
	PackedGEMM int64
	// GEMMParams is the GEMM epilogues' per-column scales (made at
	// Compile) and biases (the graph's f32 initializers).
	GEMMParams int64
	// Embeddings is the f32 word, position and token-type tables.
	Embeddings int64
	// NormParams is the LayerNorms' gamma and beta.
	NormParams int64
	// F32Linear is the weights and biases of Linears kept in FP32.
	F32Linear int64
	// Constants is the initializers read through slots (e.g. index
	// tensors, constants of OpSteps).
	Constants int64
	// I8Initializers is the part of Constants held as int8: a quantised
	// weight kept in its graph form besides its packed one would show
	// here (0 when nothing is held twice).
	I8Initializers int64

	// Activations is the buffers of values and quantised activations, as
	// grown by the largest call so far (0 before the first Run): the arena
	// of the MemoryPlan at the largest sizes run (ArenaBytes of Plan()),
	// plus any buffer held outside it.
	Activations int64
	// Scratch is the attention scratch, grown like Activations.
	Scratch int64
	// SharedRefs counts references to an array already counted under
	// another kind or step (e.g. a bias read by two steps): informative,
	// the bytes are counted once.
	SharedRefs int
}

// Weights is every constant the program holds: the packed GEMM weights
// and every f32 table and parameter its steps read.
func (m Memory) Weights() int64 {
	return m.PackedGEMM + m.GEMMParams + m.Embeddings + m.NormParams + m.F32Linear + m.Constants
}

// Arena is the activation workspace: Activations + Scratch.
func (m Memory) Arena() int64 { return m.Activations + m.Scratch }

// Memory reports what p holds now. Activations and Scratch depend on the
// calls run so far; call it after a Run of the shape of interest. It waits
// for a Run in progress.
func (p *Program) Memory() Memory {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m Memory
	seen := map[unsafe.Pointer]bool{}
	count := func(dst *int64, ptr unsafe.Pointer, bytes int64) {
		if ptr == nil || bytes == 0 {
			return
		}
		if seen[ptr] {
			m.SharedRefs++
			return
		}
		seen[ptr] = true
		*dst += bytes
	}
	for _, st := range p.steps {
		switch s := st.(type) {
		case *GEMMStep:
			l := &s.Linear
			count(&m.PackedGEMM, ptrOf(l.B.Data), sliceBytes(l.B.Data))
			count(&m.PackedGEMM, ptrOf(l.B.ColSum), sliceBytes(l.B.ColSum))
			count(&m.GEMMParams, ptrOf(l.Scale), sliceBytes(l.Scale))
			count(&m.GEMMParams, ptrOf(l.Bias), sliceBytes(l.Bias))
			if s.Norm != nil {
				count(&m.NormParams, ptrOf(s.Norm.Params.Gamma), sliceBytes(s.Norm.Params.Gamma))
				count(&m.NormParams, ptrOf(s.Norm.Params.Beta), sliceBytes(s.Norm.Params.Beta))
			}
		case *EmbedStep:
			for _, t := range [][]float32{s.Params.Words, s.Params.Positions, s.Params.TokenTypes} {
				count(&m.Embeddings, ptrOf(t), sliceBytes(t))
			}
		case *LayerNormStep:
			count(&m.NormParams, ptrOf(s.Params.Gamma), sliceBytes(s.Params.Gamma))
			count(&m.NormParams, ptrOf(s.Params.Beta), sliceBytes(s.Params.Beta))
		case *LinearF32Step:
			count(&m.F32Linear, ptrOf(s.W), sliceBytes(s.W))
			count(&m.F32Linear, ptrOf(s.Bias), sliceBytes(s.Bias))
		}
	}
	for _, s := range p.slots {
		if s.Const == nil || (s.Kind != SlotConst && s.Kind != SlotInput) {
			continue
		}
		before := m.Constants
		tensorArrays(s.Const, func(ptr unsafe.Pointer, bytes int64) { count(&m.Constants, ptr, bytes) })
		if s.Const.DType == compiler.Int8 {
			m.I8Initializers += m.Constants - before
		}
	}
	// The arena counts once; a buffer carved from it is part of it, and
	// only storage outside it (unplanned slots, or a buffer a run
	// outgrew) counts besides.
	count(&m.Activations, ptrOf(p.arena), sliceBytes(p.arena))
	lo := uintptr(ptrOf(p.arena))
	hi := lo + uintptr(len(p.arena))
	for _, s := range p.slots {
		if s.Kind == SlotConst || s.Kind == SlotInput {
			continue
		}
		if t := p.bufs[s.ID]; t != nil {
			tensorArrays(t, func(ptr unsafe.Pointer, bytes int64) {
				if at := uintptr(ptr); at < lo || at >= hi {
					count(&m.Activations, ptr, bytes)
				}
			})
		}
	}
	count(&m.Scratch, ptrOf(p.scratch), sliceBytes(p.scratch))
	return m
}

// ptrOf is the start of s's backing array (nil for a nil or unallocated
// slice).
func ptrOf[T any](s []T) unsafe.Pointer {
	if cap(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// sliceBytes is the size of s's backing array from its start: capacity
// times element size.
func sliceBytes[T any](s []T) int64 {
	var zero T
	return int64(cap(s)) * int64(unsafe.Sizeof(zero))
}

// tensorArrays calls f with every backing array t holds (a tensor keeps
// storage of one dtype, but a reused buffer may hold others).
func tensorArrays(t *compiler.Tensor, f func(unsafe.Pointer, int64)) {
	f(ptrOf(t.F32), sliceBytes(t.F32))
	f(ptrOf(t.F64), sliceBytes(t.F64))
	f(ptrOf(t.I64), sliceBytes(t.I64))
	f(ptrOf(t.I32), sliceBytes(t.I32))
	f(ptrOf(t.I8), sliceBytes(t.I8))
	f(ptrOf(t.U8), sliceBytes(t.U8))
	f(ptrOf(t.Bool), sliceBytes(t.Bool))
}
