package interp

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// TestKernelPanicIsInternalNotBadInput: a kernel that panics (a bug on
// input its checks missed) makes Run return an error wrapping
// compiler.ErrInternal that names the model and the node and does not
// match compiler.ErrBadInput (the CLI exits 1 for it, not 2); a kernel's
// ordinary error stays bad input. Panics inside parallelFor's goroutines
// are caught the same way.
func TestKernelPanicIsInternalNotBadInput(t *testing.T) {
	g := compiler.NewGraph("panic")
	node := &compiler.Node{Name: "boom", Op: "Relu", Inputs: nil, Outputs: []string{"y"}}
	run := func(fn kernelFunc) error {
		it := &Interpreter{g: g, source: "model.onnx", inits: map[string]*compiler.Tensor{},
			steps: []step{{node: node, label: `node "boom" (Relu)`, kernel: kernelSpec{fn: fn}}}}
		_, err := it.Run(map[string]*compiler.Tensor{}, &Options{Threads: 1})
		return err
	}

	err := run(func(c *call) ([]*compiler.Tensor, error) {
		var rows []int
		_ = rows[len(c.in)+1] // index out of range
		return nil, nil
	})
	if !errors.Is(err, compiler.ErrInternal) || errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("panicking kernel: got %v; want ErrInternal and not ErrBadInput", err)
	}
	if err != nil && (!strings.Contains(err.Error(), "model.onnx") || !strings.Contains(err.Error(), "boom")) {
		t.Errorf("panicking kernel: %v does not name the model and the node", err)
	}

	err = run(func(c *call) ([]*compiler.Tensor, error) { return nil, errors.New("rank 3, want 2") })
	if !errors.Is(err, compiler.ErrBadInput) || errors.Is(err, compiler.ErrInternal) {
		t.Errorf("failing kernel: got %v; want ErrBadInput and not ErrInternal", err)
	}

	for _, threads := range []int{1, 4} {
		err := ops.ParallelFor(8, threads, func(i int) {
			if i == 5 {
				panic("kernel bug")
			}
		})
		if !errors.Is(err, compiler.ErrInternal) {
			t.Errorf("parallelFor, %d threads: got %v; want ErrInternal", threads, err)
		}
	}
}
