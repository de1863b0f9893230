package exec

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/goroutines"
)

// faultStep is a Step whose run panics (a stand-in for a kernel bug) or,
// with err set, returns err (a kernel rejecting its input).
type faultStep struct{ err error }

func (faultStep) Call() string                  { return "test.Fault" }
func (faultStep) Source() string                { return "fault_node" }
func (faultStep) Describe(slots []*Slot) string { return "test.Fault()" }
func (faultStep) cost(*Program) Cost            { return Cost{} }
func (faultStep) Operands() Operands            { return Operands{} }

func (s faultStep) run(p *Program) error {
	if s.err != nil {
		return s.err
	}
	var rows []int
	_ = rows[len(p.steps)] // index out of range
	return nil
}

// TestRunPanicIsInternalNotBadInput: a step that panics makes Run return
// (not panic) one-line error wrapping compiler.ErrInternal and naming the model
// file and the step, which does not match compiler.ErrBadInput (the CLI
// exits 1 for it, not 2); a step's ordinary error stays bad input.
func TestRunPanicIsInternalNotBadInput(t *testing.T) {
	p := &Program{Schedule: &Schedule{source: "model.onnx", steps: []Step{faultStep{}}}}
	err := p.RunInto(nil, map[string]*compiler.Tensor{})
	if err == nil {
		t.Fatal("a panicking step returned no error")
	}
	if !errors.Is(err, compiler.ErrInternal) || errors.Is(err, compiler.ErrBadInput) {
		t.Errorf("got %v (internal %v, bad input %v), want ErrInternal and not ErrBadInput", err, errors.Is(err, compiler.ErrInternal), errors.Is(err, compiler.ErrBadInput))
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
	p = &Program{Schedule: &Schedule{source: "model.onnx", steps: []Step{faultStep{err: cause}}}}
	err = p.RunInto(nil, map[string]*compiler.Tensor{})
	if !errors.Is(err, compiler.ErrBadInput) || !errors.Is(err, cause) || errors.Is(err, compiler.ErrInternal) {
		t.Errorf("a step's own error: got %v, want bad input wrapping %v", err, cause)
	}
}

// TestLowerIsPureData: Lower builds the whole schedule without starting
// the goroutines a Program's pool runs (so the code generator, which
// only lowers, starts no engine and asks the OS for no AMX permission),
// and NewProgram runs what it built.
func TestLowerIsPureData(t *testing.T) {
	g := explicitQuant(t, parse(t, encoderLayer))
	// Earlier tests' pool helpers may still be exiting after their Close
	// returned; counted here, their exit would look like a change.
	goroutines.WaitCreatedBy("github.com/sqc-dev/sqc/runtime/pool.New", 0, 5*time.Second)
	before := runtime.NumGoroutine()
	s, err := Lower(g)
	if err != nil {
		t.Fatal(err)
	}
	if n := runtime.NumGoroutine(); n != before {
		t.Errorf("Lower started goroutines: %d before, %d after", before, n)
	}
	if len(s.Steps()) == 0 || !strings.Contains(s.String(), "not bound to an engine") {
		t.Fatalf("schedule:\n%s", s)
	}
	p, err := NewProgram(s, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	q := compile(t, g, nil, 2)
	in := layerInputs(7, 7, 5, 2)
	sameBits(t, "Lower+NewProgram vs Compile", run(t, p, in), run(t, q, in))
}
