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
