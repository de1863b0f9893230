package tokenizer

import (
	"errors"
	"strings"
)

// Causes of bad tokenizer input. Loaders wrap them in an *InputError that
// names the file, so callers can print one clear line and still test the
// cause with errors.Is. This package cannot import sqc's compiler package
// (generated packages must stay light), so it mirrors compiler.InputError.
var (
	ErrBadInput     = errors.New("bad tokenizer input")
	ErrMalformed    = errors.New("malformed tokenizer file")
	ErrUnsupported  = errors.New("unsupported tokenizer")
	ErrEmptyVocab   = errors.New("empty vocabulary")
	ErrMissingToken = errors.New("special token missing from the vocabulary")
	ErrBadOption    = errors.New("invalid tokenizer option")
)

// InputError is bad input located in a file (and optionally a field in it).
// Err carries the cause; errors.Is(err, ErrBadInput) always holds.
type InputError struct {
	File   string // path of the offending file, if any
	Object string // field or token, if any
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

func badInput(file, object string, err error) error {
	return &InputError{File: file, Object: object, Err: err}
}

// inFile names file in err: it fills in File of an *InputError that has
// none, and wraps any other error.
func inFile(file string, err error) error {
	var ie *InputError
	if errors.As(err, &ie) && ie.File == "" {
		c := *ie
		c.File = file
		return &c
	}
	if ie != nil {
		return err
	}
	return badInput(file, "", err)
}
