package codegen

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestGeneratedKernelFiles checks the package's own kernels: one per
// distinct Kp of its GEMMs, assembly under amd64 && !noasm with the exact
// complement in kernels_other.go, and every GEMM statement passing its
// Kp's kernel to Engine.Linear. (That the kernels give the same bits is
// TestEncoderPackageMatchesExec's job: it runs the generated package.)
func TestGeneratedKernelFiles(t *testing.T) {
	prog := demoProgram(t, compiler.QLinearDynamic)
	pkg, err := Generate(prog.Schedule, demoOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	kps, _ := gemmKps(prog.Schedule)
	if len(kps) == 0 {
		t.Fatal("demo program has no GEMM")
	}
	asm := string(pkg.Files[kernelsAsmFile])
	first, _, _ := strings.Cut(asm, "\n")
	if first != "// "+Header {
		t.Errorf("%s opens with %q", kernelsAsmFile, first)
	}
	amd64, other := string(pkg.Files[kernelsAmd64File]), string(pkg.Files[kernelsOtherFile])
	if !strings.Contains(asm, "//go:build amd64 && !noasm\n") || !strings.Contains(amd64, "//go:build amd64 && !noasm\n") {
		t.Error("assembly or its declarations lack the amd64 && !noasm constraint")
	}
	if !strings.Contains(other, "//go:build !amd64 || noasm\n") || strings.Contains(other, "gemmVNNI") {
		t.Error("kernels_other.go is not the kernel-free complement")
	}
	sched := string(pkg.Files["schedule.go"])
	for _, kp := range kps {
		name := kernelName(kp)
		if !strings.Contains(asm, "TEXT ·"+name+"(SB)") || !strings.Contains(amd64, "func "+name+"(") {
			t.Errorf("no kernel %s for Kp = %d", name, kp)
		}
		if !regexp.MustCompile(`m\.gemm\.Linear\(gemmKernel\(` + strconv.Itoa(kp) + `\), &m\.w\.linear[0-9]+, `).MatchString(sched) {
			t.Errorf("no GEMM statement uses gemmKernel(%d)", kp)
		}
	}
	if n, want := strings.Count(asm, "TEXT ·"), len(kps); n != want {
		t.Errorf("%d kernels, want %d (one per distinct Kp)", n, want)
	}
	if n := strings.Count(sched, "m.gemm.Linear("); n == 0 || n != strings.Count(sched, "m.gemm.Linear(gemmKernel(") {
		t.Errorf("%d GEMM statements, %d of them with gemmKernel", n, strings.Count(sched, "m.gemm.Linear(gemmKernel("))
	}
}
