//go:build amd64 && !noasm

package nn

import (
	"os"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/cpu"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// TestActiveKernels checks the dispatch: the assembly kernels on a CPU
// with AVX-512 (unless SQC_ISA=go), the Go kernels otherwise, and none
// offered without AVX-512.
func TestActiveKernels(t *testing.T) {
	f := cpu.Detect()
	want := "go"
	if f.AVX512 && !strings.EqualFold(strings.TrimSpace(os.Getenv(qgemm.EnvISA)), "go") {
		want = "avx512"
	}
	if got := Kernels(); got != want {
		t.Errorf("Kernels() = %q on a CPU with %v (SQC_ISA=%q), want %q", got, f, os.Getenv(qgemm.EnvISA), want)
	}
	f.AVX512 = false
	if k := archKernels(f); k != nil {
		t.Errorf("archKernels without AVX-512 = %s, want none", k.name)
	}
}
