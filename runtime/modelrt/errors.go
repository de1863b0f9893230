package modelrt

import (
	"errors"
	"fmt"
)

// Sentinel causes of a rejected request. Every error Validate returns
// wraps one of them and also matches ErrInvalidInput, so callers can test
// either the class or the precise cause with errors.Is.
var (
	ErrInvalidInput     = errors.New("invalid model input")
	ErrEmptyBatch       = errors.New("empty batch")
	ErrEmptySequence    = errors.New("sequence has no tokens")
	ErrSequenceTooLong  = errors.New("sequence longer than the compiled maximum")
	ErrTokenOutOfRange  = errors.New("token id outside the vocabulary")
	ErrMaskLength       = errors.New("attention mask length differs from the token ids")
	ErrTokenTypeLength  = errors.New("token type ids length differs from the token ids")
	ErrTokenTypeInRange = errors.New("token type id outside the type vocabulary")
	ErrBatchShape       = errors.New("batch fields have different numbers of sequences")
)

// ErrCorruptWeights is returned by New of a generated package when its
// embedded weight file does not have the length, header or SHA-256 the
// generator recorded (a truncated or modified checkout).
var ErrCorruptWeights = errors.New("embedded weights are corrupt")

// InputError is a rejected request: which sequence of the batch (-1 for
// the batch as a whole) and why. Unwrap gives the sentinel cause; Is makes
// it match ErrInvalidInput too.
type InputError struct {
	Sequence int
	Err      error
	Detail   string
}

func (e *InputError) Error() string {
	s := e.Err.Error()
	if e.Sequence >= 0 {
		s = fmt.Sprintf("sequence %d: %s", e.Sequence, s)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *InputError) Unwrap() error { return e.Err }

// Is makes every InputError match ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

func inputError(seq int, cause error, format string, args ...any) error {
	return &InputError{Sequence: seq, Err: cause, Detail: fmt.Sprintf(format, args...)}
}
