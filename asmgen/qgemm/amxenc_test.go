package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The examples of /work/shared/notes/isa-facts.md (checked there with
// objdump).
func TestAMXEncodingsKnown(t *testing.T) {
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name      string
		got, want []byte
	}{
		{"tileloadd tmm4, [rsi+rdx]", must(encTileLoadD(4, memRef{base: 6, index: 2, scale: 1})), []byte{0xC4, 0xE2, 0x7B, 0x4B, 0x24, 0x16}},
		{"tilestored [r8+r11], tmm0", must(encTileStoreD(0, memRef{base: 8, index: 11, scale: 1})), []byte{0xC4, 0x82, 0x7A, 0x4B, 0x04, 0x18}},
		{"tdpbusd tmm0, tmm4, tmm6", must(encTDPBUSD(0, 4, 6)), []byte{0xC4, 0xE2, 0x49, 0x5E, 0xC4}},
		{"tilerelease", encTileRelease(), []byte{0xC4, 0xE2, 0x78, 0x49, 0xC0}},
		{"tilezero tmm3", must(encTileZero(3)), []byte{0xC4, 0xE2, 0x7B, 0x49, 0xD8}},
		{"ldtilecfg [rax]", must(encLdTileCfg(memRef{base: 0, index: -1})), []byte{0xC4, 0xE2, 0x78, 0x49, 0x00}},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: % X, want % X", c.name, c.got, c.want)
		}
	}
}

func TestAMXEncodingsReject(t *testing.T) {
	if _, err := encTileLoadD(8, memRef{base: 0, index: 1, scale: 1}); err == nil {
		t.Error("tmm8 accepted")
	}
	if _, err := encTileLoadD(0, memRef{base: 0, index: 4, scale: 1}); err == nil {
		t.Error("SP as index accepted")
	}
	if _, err := encTileLoadD(0, memRef{base: 0, index: -1}); err == nil {
		t.Error("tile load without a stride register accepted")
	}
	if _, err := encTDPBUSD(1, 1, 2); err == nil {
		t.Error("TDPBUSD with repeated tiles accepted")
	}
}

// TestAMXEncodingsObjdump encodes every base/index register pair, every
// tile and three displacement sizes, disassembles the bytes with binutils'
// objdump and compares each instruction with the AT&T text the lowering
// pass writes next to it. It covers the special cases of x86 addressing:
// RSP/R12 bases (SIB), RBP/R13 bases (need a displacement), REX.X/REX.B.
func TestAMXEncodingsObjdump(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump (binutils) is not installed")
	}
	var code []byte
	var want []string
	add := func(b []byte, err error, text string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		code = append(code, b...)
		want = append(want, text)
	}
	for base := 0; base < 16; base++ {
		for index := -1; index < 16; index++ {
			if index == 4 {
				continue
			}
			for _, disp := range []int32{0, 64, -8, 4096} {
				m := memRef{base: base, index: index, scale: 1, disp: disp}
				if index < 0 {
					b, err := encLdTileCfg(m)
					add(b, err, "ldtilecfg "+attMem(m))
					continue
				}
				tile := (base + index) % 8
				b, err := encTileLoadD(tile, m)
				add(b, err, fmt.Sprintf("tileloadd %s,%%tmm%d", attMem(m), tile))
				b, err = encTileStoreD(tile, m)
				add(b, err, fmt.Sprintf("tilestored %%tmm%d,%s", tile, attMem(m)))
			}
		}
	}
	for c := 0; c < 8; c++ {
		b, err := encTileZero(c)
		add(b, err, fmt.Sprintf("tilezero %%tmm%d", c))
		for a := 0; a < 8; a++ {
			for bb := 0; bb < 8; bb++ {
				if a != c && bb != c && a != bb {
					b, err := encTDPBUSD(c, a, bb)
					add(b, err, fmt.Sprintf("tdpbusd %%tmm%d,%%tmm%d,%%tmm%d", bb, a, c))
				}
			}
		}
	}
	add(encTileRelease(), nil, "tilerelease")

	bin := filepath.Join(t.TempDir(), "amx.bin")
	if err := os.WriteFile(bin, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--no-show-raw-insn", bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, ins, ok := strings.Cut(line, ":\t"); ok {
			got = append(got, strings.Join(strings.Fields(ins), " "))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("objdump decoded %d instructions, %d were encoded", len(got), len(want))
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad < 10 {
				t.Errorf("instruction %d decodes as %q, want %q", i, got[i], want[i])
			}
			bad++
		}
	}
	t.Logf("%d encodings checked", len(want))
}
