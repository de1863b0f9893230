//go:build !unix && amd64 && !noasm

package qgemm

import "testing"

// guardedBytes returns n bytes of ordinary memory: without mmap there are
// no guard pages, so out-of-bounds reads go unnoticed on this OS.
func guardedBytes(t testing.TB, n int, atEnd bool) []byte { return make([]byte, n) }
