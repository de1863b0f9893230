package exec

import "testing"

// TestRunAllocations reports what one Run allocates in steady state (the
// output tensors, the nn kernels' pool closures); zero is a later goal,
// so this only guards against per-run buffer allocation creeping in.
func TestRunAllocations(t *testing.T) {
	p := compile(t, parse(t, qchain), nil, 2)
	in := qchainInputs(2, 5, 3, 0)
	run(t, p, in)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := p.Run(in); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per Run (5 outputs, 12 steps)", allocs)
	if allocs > 40 {
		t.Errorf("%.0f allocations per Run: buffers are being reallocated", allocs)
	}
}
