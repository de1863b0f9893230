package compiler

import (
	"fmt"

	"github.com/sqc-dev/sqc/runtime/ops"
)

// einsumOp is ONNX Einsum in the one form sqc reads: the outer product of
// two vectors, "i,j->ij", which torch.onnx exports for torch.outer
// (NomicBERT's rotary cache: positions ⊗ inverse frequencies). Other
// equations are refused by name.
func einsumOp() *OpDef {
	return &OpDef{
		Name: "Einsum", Since: 12,
		Doc:       "Output = the outer product of two 1-D inputs, Output[i][j] = A[i] * B[j], for equation \"i,j->ij\" (any two distinct letters; the one form sqc reads).",
		MinInputs: 2, MaxInputs: 2, MinOutputs: 1, MaxOutputs: 1,
		Attrs:  []AttrSpec{{Name: "equation", Kind: AttrString}},
		DTypes: DTypeRule{In: []string{"T", "T"}, Out: []string{"T"}, Vars: map[string][]DType{"T": floatTypes()}},
		Shape:  einsumShape,
		Check:  einsumCheck,
	}
}

func einsumCheck(n *Node, _ int64) error {
	if eq := attrString(n, "equation", ""); !ops.EinsumOuter(eq) {
		return fmt.Errorf("Einsum equation %q: sqc reads the outer product of two vectors (\"i,j->ij\") only", eq)
	}
	return nil
}

func einsumShape(a *InferArgs) ([]Inferred, error) {
	for i := range 2 {
		if err := requireRank(fmt.Sprintf("Einsum input %d", i), a.in(i).Shape, 1); err != nil {
			return nil, err
		}
	}
	if a.in(0).Shape == nil || a.in(1).Shape == nil {
		return one(nil), nil
	}
	return one(Shape{a.in(0).Shape[0], a.in(1).Shape[0]}), nil
}
