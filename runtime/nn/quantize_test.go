package nn

import (
	"math"
	"testing"
)

// quantRef is clamp(roundEven(x*invScale) + zp, 0, 255) in float64 (the
// product rounded to float32 first, as the kernels compute it).
func quantRef(x, invScale float32, zp int32) uint8 {
	t := float64(float32(x * invScale))
	q := math.RoundToEven(t) + float64(zp)
	return uint8(math.Min(math.Max(q, 0), 255))
}

func TestQuantizeU8(t *testing.T) {
	const rows, cols, srcStride, dstStride = 5, 70, 73, 128
	src := randSlice(1, rows*srcStride, -3, 3)
	src[0], src[1], src[2] = 1e30, -1e30, 0
	src[3] = 0.5 / 40 // a tie: roundEven(0.5) = 0
	src[4] = 1.5 / 40 // roundEven(1.5) = 2
	const inv, zp = 40, 100
	dst := make([]uint8, rows*dstStride)
	for i := range dst {
		dst[i] = 0xEE
	}
	QuantizeU8(dst, dstStride, src, srcStride, rows, cols, inv, zp)
	for i := range rows {
		for j := range dstStride {
			want := uint8(zp)
			if j < cols {
				want = quantRef(src[i*srcStride+j], inv, zp)
			}
			if got := dst[i*dstStride+j]; got != want {
				t.Fatalf("dst[%d][%d] = %d, want %d (x = %g)", i, j, got, want, src[i*srcStride+j])
			}
		}
	}
	if dst[3] != zp || dst[4] != zp+2 {
		t.Errorf("ties: got %d and %d, want %d and %d", dst[3], dst[4], zp, zp+2)
	}
	nan := []float32{float32(math.NaN())}
	QuantizeU8(dst[:1], 1, nan, 1, 1, 1, inv, zp)
	if dst[0] != 0 {
		t.Errorf("NaN quantises to %d, want 0 (the epilogue's MAXPS semantics)", dst[0])
	}
}

func TestRowQuantParams(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, c := range []struct {
		row   []float32
		scale float32
		zp    int32
	}{
		{[]float32{0, 0, 0}, 1, 0},
		{[]float32{}, 1, 0},
		{[]float32{1, 2, 2.55}, 0.01, 0},           // lo is 0: all positive
		{[]float32{-2.55, -1}, 0.01, 255},          // hi is 0: all negative
		{[]float32{-1, 1.55}, 0.01, 100},           // zero point roundEven(100)
		{[]float32{nan, -1, 1.55, nan}, 0.01, 100}, // NaNs ignored
		{[]float32{-inf, 1}, inf, 0},               // -lo/scale is NaN: clamped to 0
		{[]float32{-1, inf}, inf, 0},
	} {
		scale, zp := RowQuantParams(c.row)
		if math.Abs(float64(scale-c.scale)) > 1e-6*math.Abs(float64(c.scale)) || zp != c.zp {
			t.Errorf("RowQuantParams(%v) = %g, %d; want %g, %d", c.row, scale, zp, c.scale, c.zp)
		}
	}
}

// TestQuantizeRowsU8 checks dynamic quantisation round-trips every value
// within half a step and represents 0 exactly.
func TestQuantizeRowsU8(t *testing.T) {
	const rows, cols, stride = 7, 45, 64
	src := randSlice(2, rows*cols, -1, 1)
	for j := range cols {
		src[cols+j] = 3 + src[cols+j] // row 1 all positive
		src[2*cols+j] *= 1e-3         // row 2 tiny
		src[3*cols+j] = 0             // row 3 zero
		src[4*cols+j] -= 5            // row 4 all negative
	}
	src[5*cols] = 0
	dst := make([]uint8, rows*stride)
	scales := make([]float32, rows)
	zps := make([]int32, rows)
	QuantizeRowsU8(dst, stride, src, cols, rows, cols, scales, zps)
	for i := range rows {
		s, zp := scales[i], zps[i]
		if zp < 0 || zp > 255 || !(s > 0) {
			t.Fatalf("row %d: scale %g, zero point %d", i, s, zp)
		}
		for j := range stride {
			q := dst[i*stride+j]
			if j >= cols {
				if int32(q) != zp {
					t.Errorf("row %d pad %d = %d, want the zero point %d", i, j, q, zp)
				}
				continue
			}
			x := src[i*cols+j]
			back := float64(int32(q)-zp) * float64(s)
			if math.Abs(back-float64(x)) > 0.5001*float64(s) {
				t.Errorf("row %d col %d: %g quantised to %d (scale %g, zp %d) reads back %g", i, j, x, q, s, zp, back)
			}
			if x == 0 && int32(q) != zp {
				t.Errorf("row %d col %d: 0 quantised to %d, want the zero point %d", i, j, q, zp)
			}
		}
	}
}
