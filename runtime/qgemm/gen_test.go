package qgemm

import (
	"testing"

	"github.com/sqc-dev/sqc/asmgen/avogen/avogentest"
)

// TestGeneratedFilesUpToDate runs the avo generator (asmgen/qgemm) into a
// temporary directory and fails on any difference from the checked-in
// kernels_amd64.s and stubs_amd64.go: edit the generator, then run
// `go generate ./runtime/qgemm/`.
func TestGeneratedFilesUpToDate(t *testing.T) {
	avogentest.CheckUpToDate(t, "../../asmgen/qgemm", "qgemm")
}
