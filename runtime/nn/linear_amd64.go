//go:build amd64 && !noasm

package nn

// linearAsm is the signature of the generated dense-layer kernels
// (asmgen/nn/linear.go): pointers at column 0 of the tile, strides in
// elements, k and n at least 1.
type linearAsm func(dst *float32, dstStride int, x *float32, xStride int, k int, w *float32, wStride int, n int)

// linearTileWith returns kernels.linearTile on the assembly kernels of
// four rows and of one: four rows at once where the tile has them, single
// rows otherwise, on the columns of whole groups of step (the kernels'
// granule: 1 with opmasks, 8 for AVX2); linearTileGo does the rest (each
// output's value depends on its own row and column only). It checks every
// slice bound first and panics as the Go kernel would.
func linearTileWith(rows4, rows1 linearAsm, step int) func(dst []float32, dstStride int, x []float32, xStride, rows, k, n int, w []float32, j0, j1 int) {
	return func(dst []float32, dstStride int, x []float32, xStride, rows, k, n int, w []float32, j0, j1 int) {
		cols := (j1 - j0) / step * step
		if rows <= 0 || k <= 0 || cols <= 0 || j0 < 0 {
			linearTileGo(dst, dstStride, x, xStride, rows, k, n, w, j0, j1)
			return
		}
		need("LinearF32 output", dst, rows, dstStride, j0+cols)
		need("LinearF32 input", x, rows, xStride, k)
		need("LinearF32 weights", w, k, n, j0+cols)
		if rows == linearTileRows {
			rows4(&dst[j0], dstStride, &x[0], xStride, k, &w[j0], n, cols)
		} else {
			for r := range rows {
				rows1(&dst[r*dstStride+j0], dstStride, &x[r*xStride], xStride, k, &w[j0], n, cols)
			}
		}
		if j0+cols < j1 {
			linearTileGo(dst, dstStride, x, xStride, rows, k, n, w, j0+cols, j1)
		}
	}
}
