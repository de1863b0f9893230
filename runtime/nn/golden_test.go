package nn

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/kernels.golden")

// TestGoldenBits hashes the outputs of Attention, LayerNormU8, QuantizeU8,
// QuantizeRowsU8, Gelu and GeluTanh on fixed inputs and compares the hashes with
// testdata/kernels.golden, with the active kernels and with the Go ones.
// The same file must hold on every architecture and build (amd64 with and
// without assembly, arm64): this is the check that the pure-Go path gives
// amd64's bits elsewhere (run it there, e.g. GOARCH=arm64 go test -exec
// qemu-aarch64). Regenerate with -update only after a deliberate change of
// the kernels' arithmetic.
func TestGoldenBits(t *testing.T) {
	impls := map[string]*kernels{"go": goKernels(), "active": active()}
	var lines []string
	for _, name := range []string{"go", "active"} {
		kern := impls[name]
		got := goldenHashes(kern)
		if name == "go" {
			lines = got
			continue
		}
		for i := range got {
			if got[i] != lines[i] {
				t.Errorf("%s kernels (%s): %s, Go kernels: %s", name, kern.name, got[i], lines[i])
			}
		}
	}
	text := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "kernels.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenBits -update)", err)
	}
	if string(want) != text {
		t.Errorf("output hashes differ from %s:\ngot\n%swant\n%s", path, text, want)
	}
}

// goldenHashes runs each golden case with kern and returns "name sha256"
// lines.
func goldenHashes(kern *kernels) []string {
	var lines []string
	add := func(name string, f32 []float32, u8 []uint8) {
		h := sha256.New()
		for _, x := range f32 {
			_ = binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
		h.Write(u8)
		lines = append(lines, fmt.Sprintf("%s %x", name, h.Sum(nil)))
	}
	r := rand.New(rand.NewPCG(2024, 11))
	for _, c := range []struct {
		batch, sq, sk, heads, hd, pad int
		mask                          string
	}{{2, 128, 128, 2, 64, 0, "padding"}, {2, 21, 21, 3, 32, 3, "rows"}, {1, 7, 19, 2, 12, 0, "full"}} {
		q, k, v, m, d := attentionCase(r, c.batch, c.sq, c.sk, c.heads, c.hd, c.pad, c.mask)
		out := make([]float32, c.batch*c.sq*d.OutStride)
		attention(kern, nil, make([]float32, AttentionScratchLen(1, c.sk, c.hd)), out, q, k, v, m, nil, d)
		add(fmt.Sprintf("attention/%dx%dx%d/d%d/%s", c.batch, c.sq, c.sk, c.hd, c.mask), out, nil)
	}
	for _, rows := range []int{37, 64} {
		const n, kp = 200, 256
		src := make([]float32, rows*n)
		fillRandom(r, src, -3, 3, 0)
		for j := range n {
			src[n+j] += 1000 // a large mean
		}
		ln := &LayerNormParams{N: n, Gamma: make([]float32, n), Beta: make([]float32, n), Epsilon: 1e-12}
		fillRandom(r, ln.Gamma, 0.5, 1.5, 0)
		fillRandom(r, ln.Beta, -1, 1, 0)
		y, q := make([]float32, rows*n), make([]uint8, rows*kp)
		layerNorm(kern, nil, y, n, q, kp, src, n, rows, ln, 30, 128)
		add(fmt.Sprintf("layernorm/%dx%d", rows, n), y, q)
	}
	const rows, cols, kp = 33, 300, 320
	src := make([]float32, rows*cols)
	fillRandom(r, src, -4, 4, 0)
	dst := make([]uint8, rows*kp)
	quantizeU8(kern, dst, kp, src, cols, rows, cols, 30, 100)
	add("quantize/static", nil, dst)
	scales, zps := make([]float32, rows), make([]int32, rows)
	quantizeRowsU8(kern, dst, kp, src, cols, rows, cols, scales, zps)
	zpBytes := make([]uint8, 0, 4*rows)
	for _, z := range zps {
		zpBytes = binary.LittleEndian.AppendUint32(zpBytes, uint32(z))
	}
	add("quantize/rows", scales, append(zpBytes, dst...))
	act := make([]float32, 1001)
	fillRandom(r, act, -8, 8, 0)
	tanhAct := append([]float32(nil), act...)
	kern.gelu(act, act)
	add("gelu", act, nil)
	kern.geluTanh(tanhAct, tanhAct)
	add("gelu_tanh", tanhAct, nil)
	return lines
}
