package ops

import (
	"fmt"

	"sync"
	"sync/atomic"
)

// ParallelFor runs f(0..n-1) on up to threads goroutines that take indices
// from a shared counter. A panic in f (a kernel bug: kernels check shapes
// before they start) is returned as an error rather than killing the
// process, since a recover in the caller cannot catch it on another
// goroutine.
func ParallelFor(n, threads int, f func(i int)) (err error) {
	if threads <= 1 || n <= 1 {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: %v", ErrInternal, r)
			}
		}()
		for i := range n {
			f(i)
		}
		return nil
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(threads, n) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%w: %v", ErrInternal, r)
					}
					mu.Unlock()
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
	return first
}
