//go:build amd64 && !noasm

package nn

import (
	"os"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/cpu"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestActiveKernels checks the dispatch: the AVX-512 kernels on a CPU
// with AVX-512, else the AVX2 kernels on one with AVX2 and FMA3 (unless
// SQC_ISA=go), the Go kernels otherwise, and none offered without them.
func TestActiveKernels(t *testing.T) {
	f := cpu.Detect()
	want := "go"
	if !strings.EqualFold(strings.TrimSpace(os.Getenv(qgemm.EnvISA)), "go") {
		switch {
		case f.AVX512:
			want = "avx512"
		case f.AVX2 && f.FMA:
			want = "avx2"
		}
	}
	if got := Kernels(); got != want {
		t.Errorf("Kernels() = %q on a CPU with %v (SQC_ISA=%q), want %q", got, f, os.Getenv(qgemm.EnvISA), want)
	}
	f.AVX512 = false
	if f.AVX2 && f.FMA {
		if k := archKernels(f); k == nil || k.name != "avx2" {
			t.Errorf("archKernels with AVX2 and FMA but no AVX-512 = %v, want avx2", k)
		}
	}
	f.AVX2 = false
	if k := archKernels(f); k != nil {
		t.Errorf("archKernels without AVX-512 or AVX2 = %s, want none", k.name)
	}
}
