package compiler

import (
	"errors"

	"github.com/sqc-dev/sqc/internal/badinput"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// Sentinel causes of bad input. Frontends and passes wrap them in an
// *InputError that names the file and, where there is one, the tensor or
// node, so callers can both print one clear line and test the cause with
// errors.Is. The CLI exits with status 2 for any error that Is ErrBadInput.
var (
	ErrBadInput       = badinput.ErrBadInput
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
// node within it): internal/badinput's type, which the tokenizer's
// InputError is too. Err carries the cause; Is(ErrBadInput) always holds.
type InputError = badinput.Error

// BadInput builds an *InputError.
func BadInput(file, object string, err error) error { return badinput.New(file, object, err) }
