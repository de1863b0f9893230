package compiler

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// PanicSite is the file:line where the current panic was raised: the
// first frame below runtime.gopanic outside the runtime. Call it from a
// deferred function (directly or below one); "" when not panicking.
func PanicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	inPanic := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			inPanic = true
		case inPanic && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}
