//go:build unix && amd64 && !noasm

package qgemm

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// guardedBytes (for the assembly kernels' tests) returns n bytes of fresh
// anonymous memory between two PROT_NONE pages: if atEnd, the slice ends
// at the upper guard page (an over-read faults), else it starts at the
// lower one (an under-read faults). The memory is unmapped when the test
// ends.
func guardedBytes(t testing.TB, n int, atEnd bool) []byte {
	t.Helper()
	ps := os.Getpagesize()
	pages := max((n+ps-1)/ps, 1)
	mem, err := unix.Mmap(-1, 0, (pages+2)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	if err := unix.Mprotect(mem[:ps], unix.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if err := unix.Mprotect(mem[(pages+1)*ps:], unix.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if atEnd {
		end := (pages + 1) * ps
		return mem[end-n : end : end]
	}
	return mem[ps : ps+n : ps+n]
}
