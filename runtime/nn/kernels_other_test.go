//go:build !amd64 || noasm

package nn

import "testing"

// TestActiveKernels: builds without assembly run the Go kernels.
func TestActiveKernels(t *testing.T) {
	if got := Kernels(); got != "go" {
		t.Errorf("Kernels() = %q, want go", got)
	}
}
