package interp

// This file is the float32 matrix-multiply engine behind MatMul, Gemm and
// Linear: c = a·b for row-major a (m×k), b (k×n) and c (m×n), cut into
// tiles that goroutines take from a shared counter.
//
// The kernel is an axpy over four rows of c at once, two k steps per pass:
// each element of b loaded is used four times and each element of c is
// loaded and stored once per two k steps. In pure Go on amd64 (scalar SSE,
// 15 usable X registers) this measured ~11 GFLOP/s per core on a
// 36x256x1024 product, ahead of 4x4 register-blocked dot products, which
// spill. b needs no packing, so weights are used in place.
//
// Every c[i][j] is summed in plain k order in float32:
// ((c + a[i][0]*b[0][j]) + a[i][1]*b[1][j]) + ..., so results do not depend
// on tiling or thread count.

// gemmJob is one matrix product of a batched MatMul.
type gemmJob struct {
	a, b, c []float32
}

// tileShape picks tile sizes: about two tiles of rows per thread so small
// products (one sentence, m ≈ 25) still use every thread, at most 64 rows
// and 256 columns so a tile's rows of c (≤ 4 x 1 KiB per micro-step) stay
// in L1.
func tileShape(m, n, threads, jobs int) (rows, cols int) {
	perJob := max(1, (2*threads+jobs-1)/jobs)
	rows = (m + perJob - 1) / perJob
	rows = min(max((rows+3)&^3, 4), 64)
	cols = min(n, 256)
	return rows, cols
}

// sgemmBatch computes every job's c = a·b (m×k times k×n) using up to
// threads goroutines.
func sgemmBatch(jobs []gemmJob, m, n, k, threads int) error {
	if m == 0 || n == 0 || len(jobs) == 0 {
		return nil
	}
	if k == 0 {
		for _, j := range jobs {
			clear(j.c[:m*n])
		}
		return nil
	}
	rows, cols := tileShape(m, n, threads, len(jobs))
	rowTiles := (m + rows - 1) / rows
	colTiles := (n + cols - 1) / cols
	perJob := rowTiles * colTiles
	return parallelFor(len(jobs)*perJob, threads, func(t int) {
		j := jobs[t/perJob]
		t %= perJob
		r0, c0 := (t/colTiles)*rows, (t%colTiles)*cols
		sgemmTile(j.a, j.b, j.c, n, k, r0, min(r0+rows, m), c0, min(c0+cols, n))
	})
}

// sgemmTile computes rows [r0,r1) and columns [j0,j1) of c = a·b.
func sgemmTile(a, b, c []float32, n, k, r0, r1, j0, j1 int) {
	i := r0
	for ; i+4 <= r1; i += 4 {
		axpy4(a[i*k:(i+4)*k], b, c[i*n:(i+4)*n], n, k, j0, j1)
	}
	for ; i < r1; i++ {
		axpy1(a[i*k:(i+1)*k], b, c[i*n:(i+1)*n], n, k, j0, j1)
	}
}

// axpy4 sets columns [j0,j1) of the four rows of c (stride n) to the
// product of the four rows of a (stride k) with b.
func axpy4(a, b, c []float32, n, k, j0, j1 int) {
	c0 := c[j0:j1]
	c1 := c[n+j0 : n+j1][:len(c0)]
	c2 := c[2*n+j0 : 2*n+j1][:len(c0)]
	c3 := c[3*n+j0 : 3*n+j1][:len(c0)]
	clear(c0)
	clear(c1)
	clear(c2)
	clear(c3)
	a0, a1, a2, a3 := a[:k], a[k:2*k], a[2*k:3*k], a[3*k:4*k]
	p := 0
	for ; p+2 <= k; p += 2 {
		x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
		y0, y1, y2, y3 := a0[p+1], a1[p+1], a2[p+1], a3[p+1]
		bp := b[p*n+j0 : p*n+j1][:len(c0)]
		bq := b[(p+1)*n+j0 : (p+1)*n+j1][:len(c0)]
		for j, bv := range bp {
			bw := bq[j]
			c0[j] = c0[j] + x0*bv + y0*bw
			c1[j] = c1[j] + x1*bv + y1*bw
			c2[j] = c2[j] + x2*bv + y2*bw
			c3[j] = c3[j] + x3*bv + y3*bw
		}
	}
	if p < k {
		x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
		bp := b[p*n+j0 : p*n+j1][:len(c0)]
		for j, bv := range bp {
			c0[j] += x0 * bv
			c1[j] += x1 * bv
			c2[j] += x2 * bv
			c3[j] += x3 * bv
		}
	}
}

// axpy1 is axpy4 for a single leftover row.
func axpy1(a, b, c []float32, n, k, j0, j1 int) {
	c0 := c[j0:j1]
	clear(c0)
	p := 0
	for ; p+2 <= k; p += 2 {
		x, y := a[p], a[p+1]
		bp := b[p*n+j0 : p*n+j1][:len(c0)]
		bq := b[(p+1)*n+j0 : (p+1)*n+j1][:len(c0)]
		for j, bv := range bp {
			c0[j] = c0[j] + x*bv + y*bq[j]
		}
	}
	if p < k {
		x := a[p]
		bp := b[p*n+j0 : p*n+j1][:len(c0)]
		for j, bv := range bp {
			c0[j] += x * bv
		}
	}
}

// gemmNaive is c = a·b for the dtypes other than float32 (f64 and
// integers), where speed does not matter.
func gemmNaive[T number](a, b, c []T, m, n, k int) {
	for i := range m {
		ci := c[i*n : (i+1)*n]
		clear(ci)
		for p := range k {
			x := a[i*k+p]
			for j, bv := range b[p*n : (p+1)*n] {
				ci[j] += x * bv
			}
		}
	}
}
