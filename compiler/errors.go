package compiler

import (
	"errors"
	"strings"

	"github.com/sqc-dev/sqc/runtime/ops"
)

// Sentinel causes of bad input. Frontends and passes wrap them in an
// *InputError that names the file and, where there is one, the tensor or
// node, so callers can both print one clear line and test the cause with
// errors.Is. The CLI exits with status 2 for any error that Is ErrBadInput.
var (
	ErrBadInput       = errors.New("bad input")
	ErrTruncated      = errors.New("file is truncated")
	ErrMalformed      = ops.ErrMalformed
	ErrUnsupportedOp  = ops.ErrUnsupportedOp
	ErrUnknownModel   = errors.New("unknown model type")
	ErrMissingTensor  = errors.New("missing tensor")
	ErrDuplicate      = errors.New("duplicate name")
	ErrShapeMismatch  = ops.ErrShapeMismatch
	ErrDTypeMismatch  = ops.ErrDTypeMismatch
	ErrNonFinite      = errors.New("NaN or Inf in weights")
	ErrCyclicGraph    = errors.New("graph has a cycle")
	ErrInvalidRequest = errors.New("invalid run request")

	// ErrInternal marks a failure of sqc itself (a recovered panic in a
	// kernel or an engine step): not bad input, so an error wrapping it must
	// not match ErrBadInput, and the CLI exits 1 for it rather than 2.
	ErrInternal = ops.ErrInternal
)

// InputError is bad input located in a file (and optionally a tensor or
// node within it). Err carries the cause; Is(ErrBadInput) always holds.
type InputError struct {
	File   string // path of the offending file, if any
	Object string // tensor, node or field name, if any
	Err    error  // cause, usually wrapping one of the sentinels above
}

func (e *InputError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *InputError) Unwrap() error { return e.Err }

// Is makes every InputError match ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// BadInput builds an *InputError.
func BadInput(file, object string, err error) error {
	return &InputError{File: file, Object: object, Err: err}
}
