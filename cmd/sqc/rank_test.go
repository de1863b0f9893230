package main

import (
	"math"
	"slices"
	"testing"
)

func TestSpearman(t *testing.T) {
	if r := ranks([]float64{10, 30, 20, 30}); !slices.Equal(r, []float64{1, 3.5, 2, 3.5}) {
		t.Errorf("ranks %v", r)
	}
	if s := spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 25, 100}); s != 1 {
		t.Errorf("monotone: %g", s)
	}
	if s := spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); s != -1 {
		t.Errorf("reversed: %g", s)
	}
	// scipy.stats.spearmanr([1,2,3,4,5],[2,1,4,3,5]) = 0.8
	if s := spearman([]float64{1, 2, 3, 4, 5}, []float64{2, 1, 4, 3, 5}); math.Abs(s-0.8) > 1e-12 {
		t.Errorf("got %g, want 0.8", s)
	}
	if s := spearman([]float64{1, 1}, []float64{1, 2}); !math.IsNaN(s) {
		t.Errorf("constant input: %g, want NaN", s)
	}
}
