package qgemm

import (
	"math"
	"testing"
)

// GELU's accuracy and special values are tested in internal/gelu; the
// epilogue's bits against the assembly in epilogue_amd64_test.go.

func TestQuantizeU8(t *testing.T) {
	for _, c := range []struct {
		v, inv float32
		zp     int32
		want   uint8
	}{
		{0, 1, 128, 128},
		{2.5, 1, 0, 2}, // ties to even
		{3.5, 1, 0, 4},
		{-0.5, 1, 1, 1}, // -0 + 1
		{-1.5, 1, 10, 8},
		{1e30, 1, 0, 255},
		{-1e30, 1, 200, 0},
		{float32(math.NaN()), 1, 100, 0}, // NaN clamps to -quantClamp
		{127.4, 1, 128, 255},
		{-128.6, 1, 128, 0},
	} {
		if got := quantizeU8(c.v, c.inv, c.zp); got != c.want {
			t.Errorf("quantizeU8(%g, %g, %d) = %d, want %d", c.v, c.inv, c.zp, got, c.want)
		}
	}
}

func TestRelu(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct{ x, want float32 }{
		{-2, 0}, {negZero, 0}, {0, 0}, {1.5, 1.5},
		{math.Float32frombits(1), math.Float32frombits(1)}, {math.Float32frombits(0x80000001), 0},
		{float32(math.Inf(1)), float32(math.Inf(1))}, {float32(math.Inf(-1)), 0},
		{math.Float32frombits(0x7FC12345), math.Float32frombits(0x7FC12345)}, // NaN kept, payload and all
		{math.Float32frombits(0xFFC00001), math.Float32frombits(0xFFC00001)}, // negative NaN too
	} {
		if got := Relu(c.x); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("Relu(%g = %#x) = %g (%#x), want %#x", c.x, math.Float32bits(c.x), got, math.Float32bits(got), math.Float32bits(c.want))
		}
	}
}

// TestEpilogueActOrder pins the activation between the bias and the
// residual: relu(-5 + 1) + 2 = 2 (residual first would give 0), and
// relu(-5*1 + 3) = 0 (bias after would give 3).
func TestEpilogueActOrder(t *testing.T) {
	ep := &Epilogue{
		Scale: []float32{1, 1}, Bias: []float32{1, 3}, Act: ActRelu,
		Residual: []float32{2, 0}, ResidualStride: 2, OutF32: make([]float32, 2), OutStride: 2,
	}
	EpilogueGo(ep, []int32{-5, -5}, 2, 0, 0, 1, 2)
	if ep.OutF32[0] != 2 || ep.OutF32[1] != 0 {
		t.Errorf("relu epilogue = %v, want [2 0]", ep.OutF32)
	}
}

func TestActNames(t *testing.T) {
	for a := range actCount {
		got, err := ParseAct(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAct(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	}
	for a, want := range map[Act]string{ActNone: "none", ActGelu: "gelu", ActRelu: "relu", ActGeluTanh: "gelu_tanh", ActGeluU8: "gelu_u8", ActGeluTanhU8: "gelu_tanh_u8", ActSilu: "silu", actCount: "Act(7)"} {
		if a.String() != want {
			t.Errorf("Act(%d).String() = %q, want %q", uint8(a), a.String(), want)
		}
	}
	for _, s := range []string{"", "tanh", "GELU", "gelu_new", "Act(4)"} {
		if a, err := ParseAct(s); err == nil {
			t.Errorf("ParseAct(%q) = %v, want an error", s, a)
		}
	}
}
