package roofline

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler/exec"
)

// TestSplitGEMMs splits every GEMM of a tiny INT8 program into shares that
// add up to 1, with the kernel's part in each (no kernel of this CPU fuses
// its epilogue without AMX; with it, the fused part), the fused
// LayerNorm's in the residual GEMMs' finish, and refuses a program
// compiled without profiling.
func TestSplitGEMMs(t *testing.T) {
	m, in := tinyINT8(t)
	plain, err := exec.Compile(m.Graph, exec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := SplitGEMMs(plain, in, time.Millisecond); err == nil || !strings.Contains(err.Error(), "ProfileGEMM") {
		t.Errorf("a program without ProfileGEMM: error %v, want one naming exec.Options.ProfileGEMM", err)
	}
	prog, err := exec.Compile(m.Graph, exec.Options{Threads: 2, ProfileGEMM: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	splits, err := SplitGEMMs(prog, in, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	gemms, finished := 0, 0
	err = prog.Replay(in, func(_ int, _ exec.Step, c exec.Cost, _ func() error) error {
		if c.Kind != exec.KindGEMM {
			return nil
		}
		gemms++
		s, ok := splits[c.Label]
		if !ok {
			t.Errorf("%s: no split", c.Label)
			return nil
		}
		if sum := s.Kernel + s.Epilogue + s.Fused + s.Finish; math.Abs(sum-1) > 1e-9 || s.Kernel+s.Fused <= 0 {
			t.Errorf("%s: %+v, want shares adding up to 1 with the kernel's", c.Label, s)
		}
		if strings.Contains(c.Label, "LayerNorm") != (s.Finish > 0) {
			t.Errorf("%s: finish share %g", c.Label, s.Finish)
		}
		if s.Finish > 0 {
			finished++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gemms == 0 || finished == 0 {
		t.Errorf("%d GEMM steps, %d with a fused LayerNorm: the model should have both", gemms, finished)
	}
	if len(splits) > gemms {
		t.Errorf("%d splits for %d GEMM steps", len(splits), gemms)
	}
}

// TestWriteTableSplit checks the split section of the table and
// GEMMSplit's wording.
func TestWriteTableSplit(t *testing.T) {
	s := GEMMSplit{Kernel: 0.86, Epilogue: 0.04, Finish: 0.10}
	if got, want := s.String(), "kernel 86% + epilogue 4% + finish 10%"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (GEMMSplit{Fused: 1}).String(), "kernel+epilogue fused 100%"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	rows := []Row{{Point: Point{Label: "Attention 12x64", Kind: exec.KindAttention}}, {Point: Point{Label: "GEMM 768x768", Kind: exec.KindGEMM, Split: &s}}}
	var b bytes.Buffer
	if err := WriteTable(&b, nil, rows); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(b.String(), "GEMM time split")
	lines := strings.Split(strings.TrimSpace(section), "\n")[1:]
	if !ok || len(lines) != 1 || !strings.HasPrefix(lines[0], "2   GEMM 768x768") || !strings.HasSuffix(lines[0], s.String()) {
		t.Errorf("split section %q, want one line for row 2's GEMM:\n%s", lines, b.String())
	}
}
