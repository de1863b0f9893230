package exec

import (
	"fmt"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Step is one runtime call of a Program. The kinds (StepKinds) are the
// whole vocabulary, each defined in a file of its own (step_*.go, embed.go,
// opstep.go): its exported fields (the call's constant arguments and
// buffer slots), its operands, how it runs and what it costs. Memory
// planning (memplan.go) goes by the operands, the roofline by Replay and
// the costs; the code generator's one switch on the kinds is its
// generated form (codegen's TestEveryStepKindHasEveryPiece checks every
// kind has all of these).
type Step interface {
	// Call names the runtime function, e.g. "qgemm.GEMM" or "nn.LayerNorm".
	Call() string
	// Source is the graph node the step computes (the first one when
	// nodes were fused into it).
	Source() string
	// Describe is a one-line listing of the call with slot names.
	Describe(slots []*Slot) string
	// Operands are the slots the step reads and writes (operands.go).
	Operands() Operands
	// run makes the call on p's buffers; cost is then what the call did
	// (cost.go).
	run(p *Program) error
	cost(p *Program) Cost
}

// node is the graph node a step computes, embedded in every step kind
// but OpStep: its Source.
type node struct{ Node string }

func (n node) Source() string { return n.Node }

// slotName names a slot in listings ("_" for NoSlot).
func slotName(slots []*Slot, id SlotID) string {
	if id == NoSlot {
		return "_"
	}
	return slots[id].String()
}

// slotNames is the slots' names, comma-separated.
func slotNames(slots []*Slot, ids ...SlotID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = slotName(slots, id)
	}
	return strings.Join(names, ", ")
}

// want checks a runtime operand: dtype, and last dim when cols > 0.
func want(t *compiler.Tensor, what string, dt compiler.DType, cols int) error {
	switch {
	case t.DType != dt:
		return fmt.Errorf("%w: %s is %s, want %s", compiler.ErrDTypeMismatch, what, t.DType, dt)
	case cols > 0 && (len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] != int64(cols)):
		return fmt.Errorf("%w: %s has shape %v, want last dim %d", compiler.ErrShapeMismatch, what, t.Shape, cols)
	}
	return nil
}
