//go:build linux

package codegen

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the directory entries a and b atomically with
// renameat2(RENAME_EXCHANGE) (Linux 3.15+; EINVAL where the file system
// does not support it).
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("renameat2 RENAME_EXCHANGE %s %s: %w (%v)", a, b, errors.ErrUnsupported, err)
	}
	return &os.LinkError{Op: "renameat2 RENAME_EXCHANGE", Old: a, New: b, Err: err}
}
