package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// workers is the number of worker ids fn may see from parallelFor: the
// pool's workers, or 1 without a pool.
func workers(p *pool.Pool) int {
	if p == nil {
		return 1
	}
	return p.Workers()
}

// parallelFor calls fn(worker, i) for i in [0, n), on p's workers or, with
// a nil pool, on the caller's goroutine with worker 0.
func parallelFor(p *pool.Pool, n int, fn func(worker, i int)) {
	if p == nil {
		for i := range n {
			fn(0, i)
		}
		return
	}
	p.Run(n, fn)
}

// chunks splits rows into about 4 chunks per worker of at least minRows
// rows each and returns the chunk size and count.
func chunks(p *pool.Pool, rows, minRows int) (size, count int) {
	if rows <= 0 {
		return 1, 0
	}
	size = max(minRows, (rows+4*workers(p)-1)/(4*workers(p)))
	return size, (rows + size - 1) / size
}
