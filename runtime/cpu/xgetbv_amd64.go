//go:build amd64 && !noasm

package cpu

// xgetbvAvailable reports that readXCR0 really executes XGETBV.
const xgetbvAvailable = true

// xgetbv0 returns XCR0 (XGETBV with ECX = 0) as EDX:EAX. The caller must
// have checked CPUID.1:ECX.OSXSAVE.
//
//go:noescape
func xgetbv0() (eax, edx uint32)

func readXCR0() uint64 {
	eax, edx := xgetbv0()
	return uint64(edx)<<32 | uint64(eax)
}
