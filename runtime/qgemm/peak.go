package qgemm

// PeakLoop is a register-only compute loop: independent multiply-adds with
// no memory traffic, the ceiling a kernel family can approach (roofline
// plots, `sqc roofline`). Timing it is the caller's business.
type PeakLoop struct {
	// Name is the instruction stream: "amx" (TDPBUSD), "vnni" (VPDPBUSD
	// zmm), "avx2" (VPMADDWD + VPADDD ymm), "fp32" (VFMADD231PS zmm) or
	// "fp32-ymm" (VFMADD231PS ymm, on CPUs without AVX-512).
	Name string
	// OpsPerIter is the operations (2 per multiply-add) of one iteration.
	OpsPerIter float64
	// Run runs iters iterations on the calling thread. An AMX loop
	// configures and releases the tiles within the call.
	Run func(iters int)
}

// PeakLoops returns the peak loops this process may run (CPU features and
// the AMX permission checked, as for Variants), fastest first; none on
// other architectures or with -tags noasm.
func PeakLoops() []PeakLoop { return archPeakLoops() }
