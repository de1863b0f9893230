//go:build !linux

package codegen

import (
	"errors"
	"fmt"
)

// exchange has no atomic directory swap outside Linux: Write falls back to
// a backup rename.
func exchange(a, b string) error {
	return fmt.Errorf("exchanging %s and %s: %w", a, b, errors.ErrUnsupported)
}
