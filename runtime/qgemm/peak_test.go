package qgemm

import (
	"testing"

	"github.com/sqc-dev/sqc/runtime/cpu"
)

func TestPeakLoops(t *testing.T) {
	ls := PeakLoops()
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.Name] || l.OpsPerIter <= 0 || l.Run == nil {
			t.Errorf("loop %+v (duplicate name, no ops or no Run)", l)
		}
		seen[l.Name] = true
		l.Run(3) // must return, and not fault (AMX needs the permission Detect requested)
	}
	f := cpu.Detect()
	// The VNNI kernel variant exists exactly where the VNNI loop should
	// (amd64, assembly built, CPU support).
	for _, v := range Variants() {
		if v.ISA == ISAVNNI && !seen["vnni"] {
			t.Errorf("a VNNI kernel runs here (%v) but PeakLoops offers %v", f, seen)
		}
	}
	if seen["amx"] && !f.AMXInt8 {
		t.Error("an AMX loop without the AMX permission")
	}
}
