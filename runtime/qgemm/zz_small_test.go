package qgemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkSmall(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	v := Variants()[0]
	for _, t := range []int{1, 2} {
		e, _ := New(Options{Threads: t, Variant: &v})
		defer e.Close()
		for _, s := range []gemmShape{{1, 768, 768}, {8, 768, 768}, {1024, 768, 768}} {
			a, pb, ep := benchProblem(b, rng, s)
			b.Run(fmt.Sprintf("%v/T=%d", s, t), func(b *testing.B) {
				for b.Loop() {
					e.GEMM(a, s.m, pb.Kp, pb, ep)
				}
			})
			b.Run(fmt.Sprintf("plan/%v/T=%d", s, t), func(b *testing.B) {
				for b.Loop() {
					planBlocks(s.m, pb.Np/16, pb.Kp, t, e.costs)
				}
			})
		}
	}
}
