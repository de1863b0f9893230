package qgemm

import "testing"

// At BERT-base's shapes the plan must keep every worker busy to the end:
// blocks of equal size, a whole number of them per worker, and at least
// four each, so that a helper that joins late or runs slower leaves at most
// a small block's worth of idle time (tailShare).
func TestPlanBlocksBalancesSmallM(t *testing.T) {
	shapes := [][2]int{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}} // N, K
	for _, isa := range []ISA{ISAAVX2, ISAVNNI, ISAAMX} {
		for _, m := range []int{128, 1024} {
			for _, s := range shapes {
				n, k := s[0], s[1]
				mc, nc, _ := planBlocks(m, n/NBlock, k, 2, costsFor(isa), false)
				if m%mc != 0 || n%nc != 0 {
					t.Errorf("%v m=%d N=%d K=%d: %d x %d blocks are not all the same size", isa, m, n, k, mc, nc)
					continue
				}
				blocks := m / mc * (n / nc)
				if blocks%2 != 0 || blocks < 8 {
					t.Errorf("%v m=%d N=%d K=%d: %d blocks of %d x %d for 2 workers, want an even number >= 8",
						isa, m, n, k, blocks, mc, nc)
				}
			}
		}
	}
}
