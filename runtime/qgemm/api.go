// Package qgemm is sqc's u8 x s8 -> s32 matrix multiplication with fused
// epilogues: the kernels that carry almost all of an INT8 encoder's work.
//
// # Layouts (one layout for every ISA)
//
// K is padded to Kp = RoundUp(K, 64): 64 bytes of K is one AMX tile row and
// one zmm of VNNI groups.
//
// A (activations) is u8, row-major, M rows of stride lda >= Kp bytes. The
// bytes in columns K..Kp-1 may hold anything: the packed weights are zero
// there, so they contribute nothing.
//
// B (weights, K x N, s8) is packed once at compile time into PackedB.Data:
// N is padded to Np = RoundUp(N, 16) and cut into N-blocks of 16 columns;
// each N-block is a contiguous strip of Kp/4 rows of 64 bytes, row kg
// holding, for its 16 columns n, the 4 consecutive K values 4kg..4kg+3
// (the VNNI order):
//
//	Data[((nb*(Kp/4)+kg)*16+n)*4+j] = W[4*kg+j][16*nb+n]   (0 where padded)
//
// So one AMX B tile (16 rows x 64 bytes) is the 1 KiB at
// nb*Kp*16 + (k0/64)*1024, and one zmm VPDPBUSD operand is the 64 bytes at
// (nb*(Kp/4)+kg)*64: the same bytes for both.
//
// # Micro-kernel ABI
//
// Every ISA variant provides one Kernel with this contract:
//
//	C[i*ldc+j] = sum_{k<Kp} int32(A[i*lda+k]) * int32(B[...k, j...])
//	for i < m, j < nblocks*16
//
// where b points at the first N-block to compute (caller offsets it by
// nb0*Kp*16) and C is overwritten (s32, row stride ldc elements). A kernel
// reads only A rows < m and writes only C rows < m, columns < nblocks*16.
// An AMX kernel configures tiles (LDTILECFG) on entry and releases them
// (TILERELEASE) before it returns: tile state never outlives one call.
//
// # Epilogue
//
// The s32 block is turned into the output while it is still in cache,
// element-wise, in this exact float32 order (no fused multiply-add, so
// every ISA and the pure-Go path give identical bits):
//
//	acc := C - AZeroPoint*ColSum[n]                  (int32; RowZeroPoint[i] replaces
//	                                                  AZeroPoint if RowZeroPoint != nil)
//	v   := float32(acc) * Scale[n]
//	v    = v * RowScale[i]                           (if RowScale != nil)
//	v    = v + Bias[n]                               (if Bias != nil)
//	v    = Act.Apply(v)                              (act.go defines each activation)
//	v    = v + Residual[i*ResidualStride+n]          (if Residual != nil), or
//	v    = v * Residual[i*ResidualStride+n]          (with MulResidual: a gated unit's product)
//	OutF32[i*OutStride+n] = v                        (f32 output), or
//	OutU8[i*OutStride+n]  = clamp(roundEven(v*OutInvScale) + OutZeroPoint, 0, 255)
package qgemm

// ISA names a kernel family. Larger is faster; SQC_ISA forces a lower one.
type ISA int

// The kernel families, from portable to fastest.
const (
	ISAGo ISA = iota
	ISAAVX2
	ISAVNNI
	ISAAMX
)

func (i ISA) String() string {
	switch i {
	case ISAGo:
		return "go"
	case ISAAVX2:
		return "avx2"
	case ISAVNNI:
		return "vnni"
	case ISAAMX:
		return "amx"
	}
	return "unknown"
}

// KBlock is the K padding unit in bytes (one AMX tile row, one zmm).
const KBlock = 64

// NBlock is the width of one packed N-block in columns (one AMX C tile row
// of int32, one zmm of int32 accumulators).
const NBlock = 16

// RoundUp rounds n up to a multiple of m.
func RoundUp(n, m int) int { return (n + m - 1) / m * m }

// Kernel computes an m x (nblocks*16) s32 block; see the package comment.
type Kernel func(a *uint8, lda int, b *int8, kp int, c *int32, ldc int, m int, nblocks int)

// PackedB is a weight matrix in the blocked layout above.
type PackedB struct {
	K, N   int     // logical shape of W (K x N)
	Kp, Np int     // padded: Kp = RoundUp(K, 64), Np = RoundUp(N, 16)
	Data   []int8  // Np/16 strips of Kp*16 bytes
	ColSum []int32 // per column n < Np: sum over k of W[k][n] (0 where padded)
}

// Epilogue says what happens to the s32 accumulators; see the package
// comment for the exact arithmetic. Row index i is the absolute row of A
// and of the output (m0+i inside an EpilogueFunc).
type Epilogue struct {
	AZeroPoint     int32     // zero point of A (128 when s8 activations run as u8)
	ColSum         []int32   // per output column: PackedB.ColSum (len >= N); may be nil when AZeroPoint == 0
	Scale          []float32 // per output column: activation scale x weight scale (len >= N)
	Bias           []float32 // optional, len >= N
	Act            Act
	Residual       []float32 // optional, row stride ResidualStride
	ResidualStride int
	// MulResidual multiplies v by the residual instead of adding it: the
	// product of a gated feed-forward (GEGLU, ReGLU), act(x·W1) · (x·W2),
	// applied in the epilogue of its second GEMM. It needs a Residual.
	MulResidual bool

	// RowScale and RowZeroPoint (len >= M) serve dynamic per-token
	// quantisation of A (runtime/nn.QuantizeRowsU8): row i of A was
	// quantised with its own scale and zero point. RowZeroPoint replaces
	// AZeroPoint (ColSum is then required); RowScale multiplies after Scale,
	// which then holds the weight scale alone. Either may be nil (the
	// AVX-512 epilogue runs them when both are set, as dynamic
	// quantisation sets them, and falls back to the pure-Go epilogue when
	// only one is).
	RowScale     []float32
	RowZeroPoint []int32

	// Exactly one output: OutF32, or OutU8 with OutInvScale/OutZeroPoint.
	OutF32       []float32
	OutU8        []uint8
	OutStride    int
	OutInvScale  float32
	OutZeroPoint int32

	// Finish, if set, is row-wise work fused into the GEMM (such as the
	// LayerNorm after BERT's residual add): the driver calls it once for
	// each block of output rows, as soon as every column of those rows has
	// been written. It is not part of the element arithmetic above; the
	// EpilogueFuncs ignore it.
	Finish RowFinisher
}

// RowFinisher is work on finished output rows (Epilogue.Finish).
type RowFinisher interface {
	// FinishRows is called exactly once for each block of rows [m0, m0+m)
	// of the output (the blocks partition [0, M)), after the epilogue has
	// written every column of those rows, on the worker that wrote the
	// last of them: worker is its id in [0, Engine.Threads()). Calls for
	// different blocks may run at the same time, and a block's call may
	// run while other blocks' GEMM work is still going on.
	FinishRows(worker, m0, m int)
}

// EpilogueFunc applies ep to an s32 block: c[i*ldc+j] is the accumulator of
// output element (m0+i, n0+j), for i < m, j < n. Every EpilogueFunc gives
// the same bits as the pure-Go one.
type EpilogueFunc func(ep *Epilogue, c []int32, ldc int, m0, n0, m, n int)

// Variant is one ISA's implementation. Epilogue may be nil, meaning the
// pure-Go epilogue is used.
type Variant struct {
	ISA      ISA
	Kernel   Kernel
	Epilogue EpilogueFunc
	// fusedBlock, if set, computes a macro-block with the epilogue applied
	// inside the kernel call (the AMX kernel's, per 32x32 block while it
	// is in L1); the driver uses it in place of Kernel then Epilogue
	// whenever it serves the GEMM's Epilogue.
	fusedBlock fusedBlockFunc
	// fusedPipelined says fusedBlock applies each block's epilogue during
	// the next block's tile work (for Describe).
	fusedPipelined bool
	// perBlock, if set, is fusedBlock's alternative that applies each
	// block's epilogue straight after its tiles instead of pipelining it
	// with the next block's (SQC_EPILOGUE=block, for comparisons).
	perBlock fusedBlockFunc
}

// fusedBlockFunc computes the output of the macro-block of rows m0..m0+m
// and N-blocks n0/NBlock.. (nblocks of them, their real columns n) of the
// GEMM a x b, applying ep, and returns true; c is the worker's s32
// scratch (row stride ldc) for partial sums. It returns false, having done
// nothing, when it cannot give ep's bits (then Kernel and Epilogue run).
type fusedBlockFunc func(a []uint8, lda int, b *PackedB, c []int32, ldc int, ep *Epilogue, m0, n0, m, nblocks, n int) bool
