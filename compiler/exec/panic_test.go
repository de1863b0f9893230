package exec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// faultStep is a Step whose run panics (a stand-in for a kernel bug) or,
// with err set, returns err (a kernel rejecting its input).
type faultStep struct{ err error }

func (faultStep) Call() string                  { return "test.Fault" }
func (faultStep) Source() string                { return "fault_node" }
func (faultStep) Describe(slots []*Slot) string { return "test.Fault()" }

func (s faultStep) run(p *Program) error {
	if s.err != nil {
		return s.err
	}
	var rows []int
	_ = rows[len(p.steps)] // index out of range
	return nil
}

// TestRunPanicIsInternalNotBadInput: a step that panics makes Run return
// (not panic) one-line error wrapping ErrInternal and naming the model
// file and the step, which does not match compiler.ErrBadInput (the CLI
// exits 1 for it, not 2); a step's ordinary error stays bad input.
func TestRunPanicIsInternalNotBadInput(t *testing.T) {
	p := &Program{source: "model.onnx", steps: []Step{faultStep{}}}
	err := p.RunInto(nil, map[string]*compiler.Tensor{})
	if err == nil {
		t.Fatal("a panicking step returned no error")
	}
	if !errors.Is(err, ErrInternal) || errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("got %v (internal %v, bad input %v), want ErrInternal and not ErrBadInput", err, errors.Is(err, ErrInternal), errors.Is(err, compiler.ErrBadInput))
	}
	msg := err.Error()
	for _, s := range []string{"model.onnx", "step #0", "test.Fault", "fault_node", "index out of range"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error does not mention %q: %s", s, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}

	cause := fmt.Errorf("%w: bad ids", compiler.ErrInvalidRequest)
	p = &Program{source: "model.onnx", steps: []Step{faultStep{err: cause}}}
	err = p.RunInto(nil, map[string]*compiler.Tensor{})
	if !errors.Is(err, compiler.ErrBadInput) || !errors.Is(err, cause) || errors.Is(err, ErrInternal) {
		t.Errorf("a step's own error: got %v, want bad input wrapping %v", err, cause)
	}
}
