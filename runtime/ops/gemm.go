package ops

// This file is the float32 matrix-multiply engine behind MatMul, Gemm and
// Linear: c = a·b for row-major a (m×k), b (k×n) and c (m×n), cut into
// tiles that goroutines take from a shared counter.
//
// The kernel is an axpy over one row of c, eight k steps per pass: each
// element of c is loaded and stored once per eight multiply-adds, with the
// eight values of a in registers. In pure Go on amd64 (scalar SSE, 15
// usable X registers) this runs at about 10 GFLOP/s per core (see
// BenchmarkSgemm), on par with or ahead of variants that block 2 or 4 rows
// of c (fewer k steps then fit in registers) and well ahead of 4x4
// register-blocked dot products, which spill. b needs no packing, so
// weights are used in place.
//
// Every c[i][j] is summed in plain k order in float32:
// ((0 + a[i][0]*b[0][j]) + a[i][1]*b[1][j]) + ..., so results do not depend
// on tiling or thread count.

// gemmJob is one matrix product of a batched MatMul.
type gemmJob struct {
	a, b, c []float32
}

// tileShape picks tile sizes: about two tiles of rows per thread so small
// products (one sentence, m ≈ 25) still use every thread, at most 64 rows,
// and at most 256 columns so that one pass of axpyRow (a row of c and
// eight rows of b, 9 KiB) stays in L1.
func tileShape(m, n, threads, jobs int) (rows, cols int) {
	perJob := max(1, (2*threads+jobs-1)/jobs)
	rows = min(max((m+perJob-1)/perJob, 1), 64)
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
	return ParallelFor(len(jobs)*perJob, threads, func(t int) {
		j := jobs[t/perJob]
		t %= perJob
		r0, c0 := (t/colTiles)*rows, (t%colTiles)*cols
		sgemmTile(j.a, j.b, j.c, n, k, r0, min(r0+rows, m), c0, min(c0+cols, n))
	})
}

// sgemmTile computes rows [r0,r1) and columns [j0,j1) of c = a·b.
func sgemmTile(a, b, c []float32, n, k, r0, r1, j0, j1 int) {
	for i := r0; i < r1; i++ {
		axpyRow(a[i*k:(i+1)*k], b, c[i*n+j0:i*n+j1], n, k, j0)
	}
}

// axpyRow sets c (columns j0.. of one row of the product) to a·b[:, j0:],
// adding eight rows of b per pass: per element of c that is one load and
// one store for eight multiply-adds, with the eight a values in registers.
func axpyRow(a, b, c []float32, n, k, j0 int) {
	clear(c)
	w := len(c)
	p := 0
	for ; p+8 <= k; p += 8 {
		x := a[p : p+8 : p+8]
		x0, x1, x2, x3, x4, x5, x6, x7 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
		b0 := b[p*n+j0:][:w]
		b1 := b[(p+1)*n+j0:][:w]
		b2 := b[(p+2)*n+j0:][:w]
		b3 := b[(p+3)*n+j0:][:w]
		b4 := b[(p+4)*n+j0:][:w]
		b5 := b[(p+5)*n+j0:][:w]
		b6 := b[(p+6)*n+j0:][:w]
		b7 := b[(p+7)*n+j0:][:w]
		for j, u := range b0 {
			c[j] = c[j] + x0*u + x1*b1[j] + x2*b2[j] + x3*b3[j] + x4*b4[j] + x5*b5[j] + x6*b6[j] + x7*b7[j]
		}
	}
	for ; p < k; p++ {
		x := a[p]
		for j, u := range b[p*n+j0:][:w] {
			c[j] += x * u
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
