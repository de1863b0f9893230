//go:build race

package reliability

// raceEnabled: the race detector slows the pure-Go kernels ~10x, so the
// determinism tests repeat less under it (the race test proper is
// TestConcurrent*).
const raceEnabled = true
