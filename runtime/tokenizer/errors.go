package tokenizer

import (
	"errors"

	"github.com/sqc-dev/sqc/internal/badinput"
)

// Causes of bad tokenizer input. Loaders wrap them in an *InputError that
// names the file, so callers can print one clear line and still test the
// cause with errors.Is. ErrBadInput is compiler.ErrBadInput: this package
// cannot import sqc's compiler package (generated packages must stay
// light), so both take the type and sentinel of internal/badinput.
var (
	ErrBadInput     = badinput.ErrBadInput
	ErrMalformed    = errors.New("malformed tokenizer file")
	ErrUnsupported  = errors.New("unsupported tokenizer")
	ErrEmptyVocab   = errors.New("empty vocabulary")
	ErrMissingToken = errors.New("special token missing from the vocabulary")
	ErrBadOption    = errors.New("invalid tokenizer option")
)

// InputError is bad input located in a file (and optionally a field or
// token in it): internal/badinput's type, which compiler.InputError is
// too. Err carries the cause; errors.Is(err, ErrBadInput) always holds.
type InputError = badinput.Error

func badInput(file, object string, err error) error { return badinput.New(file, object, err) }

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
