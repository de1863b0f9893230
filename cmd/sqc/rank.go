package main

import (
	"math"
	"sort"
)

// spearman is Spearman's rank correlation of x and y: the Pearson
// correlation of their ranks, ties given their mean rank (as
// scipy.stats.spearmanr). NaN when either is constant or shorter than 2.
func spearman(x, y []float64) float64 {
	return pearson(ranks(x), ranks(y))
}

// ranks are the 1-based ranks of v, ties averaged.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && v[idx[hi]] == v[idx[lo]] {
			hi++
		}
		mean := float64(lo+hi+1) / 2 // ranks lo+1 .. hi
		for _, i := range idx[lo:hi] {
			r[i] = mean
		}
		lo = hi
	}
	return r
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 || len(x) != len(y) {
		return math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
