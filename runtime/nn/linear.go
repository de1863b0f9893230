package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// LinearF32 is the float32 dense layer of FP32 graphs (sqc.Linear):
//
//	dst[i*dstStride+j] = (sum_p x[i*xStride+p] * w[p*n+j]) + bias[j]
//
// for i < rows, j < n, with x [rows, k] and w [k, n] row-major (bias may be
// nil). Each sum starts from 0 and adds the rounded products in ascending
// p, then the bias: the order of the FP32 interpreter's MatMul and Linear,
// so both give the same bits on amd64. Tiles of 4 rows x 128 columns (2 KiB
// of dst rows, in L1) are spread over p's workers.
func LinearF32(p *pool.Pool, dst []float32, dstStride int, x []float32, xStride, rows, k, n int, w, bias []float32) {
	rowTiles, colTiles := (rows+linearTileRows-1)/linearTileRows, (n+linearTileCols-1)/linearTileCols
	c := linearCalls.get()
	c.kern = active()
	c.dst, c.dstStride, c.x, c.xStride, c.rows, c.k, c.n, c.w, c.bias = dst, dstStride, x, xStride, rows, k, n, w, bias
	c.colTiles = colTiles
	parallelFor(p, rowTiles*colTiles, c.task)
	c.dst, c.x, c.w, c.bias = nil, nil, nil, nil // keep no caller memory alive
	linearCalls.put(c)
}

// Tiles of LinearF32: 4 rows (linearTile4's) x 128 columns. With one to
// eight rows (a pooler's [CLS] rows) and N = 768, the 6-12 tiles keep two
// workers busy while the weights stream in; a tile's 128 columns of w
// rows (512 bytes each) are whole cache lines.
const linearTileRows, linearTileCols = 4, 128

// linearCall is one LinearF32 call's state (see calls.go).
type linearCall struct {
	kern                *kernels
	dst                 []float32
	dstStride           int
	x                   []float32
	xStride, rows, k, n int
	w, bias             []float32
	colTiles            int
	task                func(worker, t int)
}

var linearCalls = newRecycler(func() *linearCall {
	c := &linearCall{}
	c.task = c.tile
	return c
})

// tile computes output tile t (row-major over the tile grid).
func (c *linearCall) tile(_, t int) {
	dst, dstStride, x, xStride := c.dst, c.dstStride, c.x, c.xStride
	r0, j0 := t/c.colTiles*linearTileRows, t%c.colTiles*linearTileCols
	r1, j1 := min(r0+linearTileRows, c.rows), min(j0+linearTileCols, c.n)
	c.kern.linearTile(dst[r0*dstStride:], dstStride, x[r0*xStride:], xStride, r1-r0, c.k, c.n, c.w, j0, j1)
	if c.bias != nil {
		for r := r0; r < r1; r++ {
			Add(dst[r*dstStride+j0:r*dstStride+j1], dst[r*dstStride+j0:r*dstStride+j1], c.bias[j0:j1])
		}
	}
}

// linearTileGo is kernels.linearTile: columns [j0, j1) of rows rows (1 to
// linearTileRows) of LinearF32 without the bias, w's rows n apart.
func linearTileGo(dst []float32, dstStride int, x []float32, xStride, rows, k, n int, w []float32, j0, j1 int) {
	if rows == linearTileRows {
		linearTile4(dst, dstStride, x, xStride, k, n, w, j0, j1)
		return
	}
	for r := range rows {
		linearRow(dst[r*dstStride:], x[r*xStride:][:k], n, w, j0, j1)
	}
}

// linearTile4 computes columns [j0, j1) of four rows: axpy over the rows of
// w, each element of w used four times per load.
func linearTile4(dst []float32, dstStride int, x []float32, xStride, k, n int, w []float32, j0, j1 int) {
	c0 := dst[j0:j1]
	c1 := dst[dstStride+j0 : dstStride+j1][:len(c0)]
	c2 := dst[2*dstStride+j0 : 2*dstStride+j1][:len(c0)]
	c3 := dst[3*dstStride+j0 : 3*dstStride+j1][:len(c0)]
	clear(c0)
	clear(c1)
	clear(c2)
	clear(c3)
	x0, x1, x2, x3 := x[:k], x[xStride:xStride+k], x[2*xStride:2*xStride+k], x[3*xStride:3*xStride+k]
	for p := range k {
		a0, a1, a2, a3 := x0[p], x1[p], x2[p], x3[p]
		wp := w[p*n+j0 : p*n+j1][:len(c0)]
		for j, b := range wp {
			c0[j] += float32(a0 * b)
			c1[j] += float32(a1 * b)
			c2[j] += float32(a2 * b)
			c3[j] += float32(a3 * b)
		}
	}
}

// linearRow is linearTile4 for one row.
func linearRow(dst, x []float32, n int, w []float32, j0, j1 int) {
	c := dst[j0:j1]
	clear(c)
	for p, a := range x {
		wp := w[p*n+j0 : p*n+j1][:len(c)]
		for j, b := range wp {
			c[j] += float32(a * b)
		}
	}
}
