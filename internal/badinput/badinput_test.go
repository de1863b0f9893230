package badinput

import (
	"errors"
	"fmt"
	"testing"
)

// TestError: the message names the file and object before the cause,
// and every Error matches ErrBadInput and its cause through any wrapping.
func TestError(t *testing.T) {
	cause := errors.New("no such token")
	for _, c := range []struct {
		err  error
		want string
	}{
		{New("vocab.txt", "[CLS]", cause), "vocab.txt: [CLS]: no such token"},
		{New("", "[CLS]", cause), "[CLS]: no such token"},
		{New("vocab.txt", "", cause), "vocab.txt: no such token"},
	} {
		wrapped := fmt.Errorf("loading: %w", c.err)
		if c.err.Error() != c.want || !errors.Is(wrapped, ErrBadInput) || !errors.Is(wrapped, cause) {
			t.Errorf("%q: Is(ErrBadInput) %v, Is(cause) %v; want message %q", c.err, errors.Is(wrapped, ErrBadInput), errors.Is(wrapped, cause), c.want)
		}
	}
	if errors.Is(cause, ErrBadInput) {
		t.Error("a bare cause matches ErrBadInput")
	}
}
