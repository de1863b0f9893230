//go:build amd64 && !noasm

package qgemm

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// amxMnemonics are the instructions the AMX code is made of; the kernels
// carry them as BYTE data (Go's assembler has no AMX mnemonics).
var amxMnemonics = map[string]bool{
	"ldtilecfg": true, "tileloadd": true, "tilestored": true,
	"tdpbusd": true, "tilerelease": true, "tilezero": true,
}

// TestAMXEncodingsDisassemble disassembles the AMX functions of this test
// binary with binutils' objdump and checks that the byte-encoded
// instructions decode to exactly the instructions (mnemonics and operands)
// the generator meant: the "// amx:" comments of kernels_amd64.s.
func TestAMXEncodingsDisassemble(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump (binutils) is not installed")
	}
	exe := binaryWithSymbols(t)
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	// Keep the functions referenced so the linker keeps them.
	_, _ = qgemmAMX, peakAMX
	for _, fn := range []string{"qgemmAMX", "peakAMX"} {
		want := amxComments(string(src), fn)
		if len(want) == 0 {
			t.Fatalf("%s: no AMX instructions in kernels_amd64.s", fn)
		}
		got, bad := disassembleAMX(t, objdump, exe, "github.com/sqc-dev/sqc/runtime/qgemm."+fn)
		if bad > 0 {
			t.Errorf("%s: objdump found %d undecodable instructions", fn, bad)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: objdump shows %d AMX instructions, the generator emitted %d", fn, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: AMX instruction %d decodes as %q, want %q", fn, i, got[i], want[i])
			}
		}
		t.Logf("%s: %d AMX instructions decode as intended", fn, len(want))
	}
}

// binaryWithSymbols returns this test binary if it has a symbol table
// (go test -c), else builds one: plain `go test` links without symbols.
func binaryWithSymbols(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err == nil {
		if f, err := elf.Open(exe); err == nil {
			syms, _ := f.Symbols()
			f.Close()
			if len(syms) > 0 {
				return exe
			}
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("test binary has no symbols and the go command is not on PATH")
	}
	out := filepath.Join(t.TempDir(), "qgemm.test")
	if msg, err := exec.Command(goTool, "test", "-c", "-o", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, msg)
	}
	return out
}

// amxComments returns the "// amx: ..." lines of function fn in src.
func amxComments(src, fn string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "TEXT ") {
			in = strings.HasPrefix(line, "TEXT ·"+fn+"(SB)")
			continue
		}
		if in {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "// amx: "); ok {
				out = append(out, rest)
			}
		}
	}
	return out
}

// disassembleAMX returns the AMX instructions of symbol sym (trying the
// ABI0 name first) in AT&T syntax with single spaces, and the number of
// "(bad)" decodes.
func disassembleAMX(t *testing.T, objdump, exe, sym string) (amx []string, bad int) {
	t.Helper()
	var text string
	for _, name := range []string{sym + ".abi0", sym} {
		out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", "--disassemble="+name, exe).Output()
		if err != nil {
			t.Fatalf("objdump: %v", err)
		}
		if strings.Contains(string(out), "<"+name+">:") {
			text = string(out)
			break
		}
	}
	if text == "" {
		t.Fatalf("objdump did not find %s in %s", sym, exe)
	}
	for _, line := range strings.Split(text, "\n") {
		_, ins, ok := strings.Cut(line, ":\t")
		if !ok {
			continue
		}
		fields := strings.Fields(ins)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "(bad)" {
			bad++
		}
		if amxMnemonics[fields[0]] {
			amx = append(amx, strings.Join(fields, " "))
		}
	}
	return amx, bad
}
