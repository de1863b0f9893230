//go:build !amd64 || noasm

package pool

// spinPause is a no-op where there is no PAUSE instruction to call: the
// polling loop then only re-reads its channel between clock reads.
func spinPause() {}
