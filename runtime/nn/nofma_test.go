package nn

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestNoFusedMultiplyAdd compiles this package and runtime/qgemm for the
// targets where Go fuses a*b+c into one instruction (arm64, GOAMD64=v3)
// and fails if a function that computes results (all of this package;
// qgemm's epilogue, GELU and quantisation, not its float cost model of
// blocking) contains a fused multiply-add: one missing float32() would
// make results differ between machines.
func TestNoFusedMultiplyAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package twice; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	fma := regexp.MustCompile(`\s(V?F(N)?M(ADD|SUB)\w*)\s`)
	numeric := regexp.MustCompile(`^github\.com/sqc-dev/sqc/runtime/(nn\.|qgemm\.(?i:.*(epilogue|gelu|exp2|quantize)))`)
	for _, env := range [][]string{{"GOARCH=arm64"}, {"GOARCH=amd64", "GOAMD64=v3"}} {
		cmd := exec.Command(goTool, "build", "-o", os.DevNull,
			"-gcflags=github.com/sqc-dev/sqc/runtime/nn=-S", "-gcflags=github.com/sqc-dev/sqc/runtime/qgemm=-S", ".")
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v go build: %v\n%s", env, err, out.String())
		}
		fn, funcs := "", 0
		for line := range strings.Lines(out.String()) {
			if strings.Contains(line, " STEXT ") {
				fn = strings.Fields(line)[0]
				funcs++
				continue
			}
			if m := fma.FindStringSubmatch(line); m != nil && numeric.MatchString(fn) {
				t.Errorf("%v: %s contains %s:\n%s", env, fn, m[1], strings.TrimSpace(line))
			}
		}
		// Both packages' listings must be there, or the test checks nothing.
		for _, f := range []string{"runtime/nn.Attention", "runtime/qgemm.epilogueGo"} {
			if !strings.Contains(out.String(), f) {
				t.Fatalf("%v: no assembly listing of %s (%d functions listed)", env, f, funcs)
			}
		}
	}
}
