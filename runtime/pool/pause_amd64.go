//go:build amd64 && !noasm

package pool

// spinPause executes a few PAUSE instructions (pause_amd64.s): the core
// gives issue slots and power to other work while it polls, and leaves the
// polling loop without a memory-order mis-speculation flush.
func spinPause()
