package compiler

import (
	"slices"
	"testing"
)

// TestZeroMaskedOutputs: a [batch, sequence] output (symbolic second
// dimension) is zeroed at masked positions, a [batch, labels] one of as
// many labels as positions is not, and a [batch, seq, hidden] one is, as
// ZeroMaskedTokens zeroes it.
func TestZeroMaskedOutputs(t *testing.T) {
	g := NewGraph("outs")
	batch, seq := Dim{Param: "batch", Size: -1}, Dim{Param: "sequence", Size: -1}
	g.Outputs = []*Value{
		{Name: "start_logits", DType: Float32, Shape: Shape{batch, seq}},
		{Name: "logits", DType: Float32, Shape: Shape{batch, {Size: 3}}},
		{Name: "hidden", DType: Float32, Shape: Shape{batch, seq, {Size: 2}}},
	}
	mask := &Tensor{DType: Int64, Shape: []int64{2, 3}, I64: []int64{1, 1, 0, 1, 0, 0}}
	outs := map[string]*Tensor{
		"start_logits": {DType: Float32, Shape: []int64{2, 3}, F32: []float32{1, 2, 3, 4, 5, 6}},
		"logits":       {DType: Float32, Shape: []int64{2, 3}, F32: []float32{1, 2, 3, 4, 5, 6}},
		"hidden":       {DType: Float32, Shape: []int64{2, 3, 2}, F32: []float32{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}},
	}
	ZeroMaskedOutputs(g, outs, mask)
	for name, want := range map[string][]float32{
		"start_logits": {1, 2, 0, 4, 0, 0},
		"logits":       {1, 2, 3, 4, 5, 6},
		"hidden":       {1, 1, 2, 2, 0, 0, 4, 4, 0, 0, 0, 0},
	} {
		if got := outs[name].F32; !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
