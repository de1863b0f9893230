package ops

import "errors"

// Causes of kernel errors, tested with errors.Is. The compiler package
// re-exports them (compiler.ErrShapeMismatch is ErrShapeMismatch), so a
// kernel error reported through the IR's InputError matches either name.
var (
	ErrMalformed     = errors.New("malformed file")
	ErrUnsupportedOp = errors.New("unsupported op")
	ErrShapeMismatch = errors.New("shape mismatch")
	ErrDTypeMismatch = errors.New("dtype mismatch")

	// ErrInternal marks a failure of sqc itself (a recovered panic in a
	// kernel or an engine step): not bad input.
	ErrInternal = errors.New("internal error")
)
