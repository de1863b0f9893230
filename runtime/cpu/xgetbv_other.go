//go:build !amd64 || noasm

package cpu

// xgetbvAvailable is false: without assembly there is no XGETBV, so no
// register state is reported enabled and Detect reports no AVX at all.
const xgetbvAvailable = false

func readXCR0() uint64 { return 0 }
