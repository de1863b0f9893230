// Package badinput is the one error type for input sqc rejects, located in
// a file and optionally an object in it (a tensor, node, field or token):
// compiler.InputError and tokenizer.InputError are this type, and
// compiler.ErrBadInput and tokenizer.ErrBadInput this package's
// ErrBadInput. It lives apart from both because the tokenizer, which
// generated packages import, must not import the compiler.
package badinput

import (
	"errors"
	"strings"
)

// ErrBadInput matches every *Error (errors.Is): the input, not sqc, is at
// fault. The CLI exits 2 for it.
var ErrBadInput = errors.New("bad input")

// Error is bad input located in a file (and optionally an object within
// it). Err carries the cause; errors.Is(err, ErrBadInput) always holds.
type Error struct {
	File   string // path of the offending file, if any
	Object string // tensor, node, field or token, if any
	Err    error  // cause, usually wrapping a sentinel of the package that found it
}

func (e *Error) Error() string {
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

func (e *Error) Unwrap() error { return e.Err }

// Is makes every Error match ErrBadInput.
func (e *Error) Is(target error) bool { return target == ErrBadInput }

// New builds an *Error.
func New(file, object string, err error) error {
	return &Error{File: file, Object: object, Err: err}
}
