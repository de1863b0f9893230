package codegen

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// opStep plans a generic step (exec.OpStep): a call of runtime/ops's
// kernel, the one exec runs. Its
// operands are passed as *ops.Tensor: its results stay such tensors
// (homeTensor), except a graph output, which the statement copies into
// its arena buffer (copyOut).
func (pl *plan) opStep(i int, s *exec.OpStep) error {
	where := func(err error) error {
		return fmt.Errorf("codegen: step #%d %s (node %q): %w", i, s.Call(), s.Name, err)
	}
	for _, id := range s.Inputs {
		if id == exec.NoSlot {
			continue
		}
		if _, err := pl.use(i, id, s); err != nil { // placing integer constants as weights too (placeConst)
			return err
		}
		if _, err := pl.tensorCode(id); err != nil {
			return where(err)
		}
	}
	outputs := pl.prog.OutputSlots()
	for _, id := range s.Outputs {
		if id == exec.NoSlot {
			continue
		}
		sp := pl.slots[id]
		if slices.Contains(outputs, id) {
			if sp.dtype != compiler.Float32 {
				return where(fmt.Errorf("%w: graph output %q is %s, want f32", compiler.ErrUnsupportedOp, sp.name, sp.dtype))
			}
			sp.copyOut = true // placed in the arena by use
		} else {
			sp.home, sp.tensor = homeTensor, fmt.Sprintf("t%d", id)
			// Steps with a fused kernel that read the result need its extent.
			if e, w, ok := pl.extentOf(sp.shape); ok {
				sp.extent, sp.width = e, w
			}
		}
		if _, err := pl.use(i, id, s); err != nil {
			return err
		}
	}
	return nil
}
