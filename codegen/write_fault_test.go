package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// errInjected is the failure faultFS gives its chosen operation.
var errInjected = errors.New("injected fault")

// faultFS is osFS with operation number failAt (1-based, counting every
// call that changes the disk, file writes, syncs and closes included)
// failing with errInjected; every other operation runs for real, but for
// fsync, which is counted and skipped.
type faultFS struct {
	osFS
	failAt int
	// noExchange makes Exchange report errors.ErrUnsupported (without
	// counting as an operation), so Write takes its rename fallback.
	noExchange bool
	ops        []string // every operation counted, in order
	failed     string   // the operation that failed, "" if none did
}

// step counts an operation and reports whether it is the one to fail.
func (f *faultFS) step(format string, args ...any) error {
	op := fmt.Sprintf(format, args...)
	f.ops = append(f.ops, op)
	if len(f.ops) == f.failAt {
		f.failed = op
		return errInjected
	}
	return nil
}

func (f *faultFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := f.step("mkdir-all %s", path); err != nil {
		return err
	}
	return f.osFS.MkdirAll(path, perm)
}

func (f *faultFS) MkdirTemp(dir, pattern string) (string, error) {
	if err := f.step("mkdir-temp %s", pattern); err != nil {
		return "", err
	}
	return f.osFS.MkdirTemp(dir, pattern)
}

func (f *faultFS) Chmod(path string, mode fs.FileMode) error {
	if err := f.step("chmod"); err != nil {
		return err
	}
	return f.osFS.Chmod(path, mode)
}

func (f *faultFS) CreateExcl(path string, perm fs.FileMode) (writableFile, error) {
	name := filepath.Base(path)
	if err := f.step("create %s", name); err != nil {
		return nil, err
	}
	real, err := f.osFS.CreateExcl(path, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, name: name, real: real}, nil
}

func (f *faultFS) Rename(from, to string) error {
	if err := f.step("rename %s -> %s", filepath.Base(from), filepath.Base(to)); err != nil {
		return err
	}
	return f.osFS.Rename(from, to)
}

func (f *faultFS) Exchange(a, b string) error {
	if f.noExchange {
		return errors.ErrUnsupported
	}
	if err := f.step("exchange"); err != nil {
		return err
	}
	return f.osFS.Exchange(a, b)
}

func (f *faultFS) Remove(path string) error {
	if err := f.step("remove %s", filepath.Base(path)); err != nil {
		return err
	}
	return f.osFS.Remove(path)
}

func (f *faultFS) RemoveAll(path string) error {
	if err := f.step("remove-all %s", filepath.Base(path)); err != nil {
		return err
	}
	return f.osFS.RemoveAll(path)
}

func (f *faultFS) SyncDir(path string) error {
	if err := f.step("sync-dir %s", filepath.Base(path)); err != nil {
		return err
	}
	return nil // counted, not done: durability is not what this tests, and fsync is slow
}

// faultFile counts Write, Sync and Close as operations of its faultFS. A
// failing Write writes half the data first (a short write); a failing
// Close still closes the file.
type faultFile struct {
	fs   *faultFS
	name string
	real writableFile
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.step("write %s", f.name); err != nil {
		n, _ := f.real.Write(p[:len(p)/2])
		return n, err
	}
	return f.real.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.step("sync %s", f.name); err != nil {
		return err
	}
	return nil // as SyncDir
}

func (f *faultFile) Close() error {
	if err := f.fs.step("close %s", f.name); err != nil {
		f.real.Close()
		return err
	}
	return f.real.Close()
}

// faultPackages generates the packages the fault tests write: the old
// one (the demo model with static activations, plus one more generated
// file so the two file sets differ) and the new one (dynamic).
func faultPackages(t *testing.T) (old, new *Package) {
	t.Helper()
	old, err := Generate(demoProgram(t, compiler.QLinearStatic).Schedule, demoOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	old.Files["stale.go"] = []byte("// " + Header + "\n\npackage demo\n")
	o := demoOptions(t)
	o.MaxSeq = 16
	new, err = Generate(demoProgram(t, compiler.QLinearDynamic).Schedule, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.go", "schedule.go", "weights.bin"} {
		if bytes.Equal(old.Files[name], new.Files[name]) {
			t.Fatalf("%s is the same in both packages: the test could not tell them apart", name)
		}
	}
	return old, new
}

// dirHolds reports whether dir holds exactly pkg's files, byte for byte,
// and nothing else.
func dirHolds(dir string, pkg *Package) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return false, nil
		}
		names = append(names, e.Name())
	}
	if !slices.Equal(names, pkg.Names()) {
		return false, nil
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, pkg.Files[name]) {
			return false, nil
		}
	}
	return true, nil
}

// siblings lists the entries of dir's parent other than dir.
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

// writeCleanly is Write with nothing failing.
func writeCleanly(t *testing.T, dir string, pkg *Package) {
	t.Helper()
	if err := (writer{fs: osFS{}}).write(dir, pkg); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFailureAtEveryStep replaces a generated package with another,
// failing each file system operation of Write in turn (k = 1, 2, ...
// until a run has no operation left to fail), with the atomic exchange
// and with the rename fallback. After each failure the output directory
// must hold exactly the old package or exactly the new one, Write must
// return an error naming the directory, and nothing may be left beside
// it (but for the old package when removing it is what failed, which the
// error must name); once the new package has appeared it must stay for every later k.
func TestWriteFailureAtEveryStep(t *testing.T) {
	old, new := faultPackages(t)
	for _, mode := range []string{"exchange", "rename-fallback"} {
		t.Run(mode, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out", "demo")
			if mode == "exchange" {
				if err := exchange(t.TempDir(), t.TempDir()); errors.Is(err, errors.ErrUnsupported) {
					t.Skipf("no atomic exchange here: %v", err)
				}
			}
			writeCleanly(t, dir, old)
			kinds := map[string]bool{}
			sawNew := false
			for k := 1; ; k++ {
				f := &faultFS{failAt: k, noExchange: mode == "rename-fallback"}
				err := callWrite(t, writer{fs: f}, dir, new)
				if f.failed == "" { // every operation ran: the complete run
					if err != nil {
						t.Fatalf("no operation failed, yet Write failed: %v", err)
					}
					if ok, rerr := dirHolds(dir, new); !ok || rerr != nil {
						t.Fatalf("after a clean write the directory does not hold the new package (%v)", rerr)
					}
					if left := siblings(t, dir); len(left) > 0 {
						t.Fatalf("a clean write left %v beside the output", left)
					}
					t.Logf("%s: %d operations, each failed in turn: %s", mode, len(f.ops), strings.Join(f.ops, ", "))
					checkEveryStepCounted(t, f.ops, new, mode)
					break
				}
				kinds[strings.Fields(f.failed)[0]] = true
				if err == nil {
					t.Fatalf("k=%d (%s): the failure was not reported", k, f.failed)
				}
				if !errors.Is(err, errInjected) {
					t.Errorf("k=%d (%s): the error does not wrap the cause: %v", k, f.failed, err)
				}
				if !strings.Contains(err.Error(), dir) {
					t.Errorf("k=%d (%s): the error does not name %s: %v", k, f.failed, dir, err)
				}
				isOld, rerr := dirHolds(dir, old)
				if rerr != nil {
					t.Fatalf("k=%d (%s): reading the output: %v", k, f.failed, rerr)
				}
				isNew, _ := dirHolds(dir, new)
				switch {
				case !isOld && !isNew:
					t.Fatalf("k=%d (%s): the output is neither the old package nor the new one", k, f.failed)
				case isOld && sawNew:
					t.Fatalf("k=%d (%s): the old package is back after an earlier k installed the new one", k, f.failed)
				}
				sawNew = sawNew || isNew
				left := siblings(t, dir)
				if isNew && strings.HasPrefix(f.failed, "remove-all ") && len(left) == 1 {
					// The one failure that must leave something: removing
					// the old package once the new one is in place. The
					// error must say where it is, and it must be intact.
					leftover := filepath.Join(filepath.Dir(dir), left[0])
					if intact, _ := dirHolds(leftover, old); !intact || !strings.Contains(err.Error(), leftover) {
						t.Errorf("k=%d (%s): the leftover %s is not the old package or is not named by the error: %v", k, f.failed, leftover, err)
					}
					if err := os.RemoveAll(leftover); err != nil {
						t.Fatal(err)
					}
				} else if len(left) > 0 {
					t.Errorf("k=%d (%s): left %v beside the output (error: %v)", k, f.failed, left, err)
				}
				// The next compile succeeds from whatever the failure
				// left; the next k starts from the old package again.
				if isNew {
					writeCleanly(t, dir, old)
				}
			}
			if !sawNew {
				t.Error("no failing step left the new package in place: the test never reached the end of Write")
			}
		})
	}
}

// TestWriteFreshDirFailureAtEveryStep: a first compile into a directory
// that does not exist (or is empty), failing at step k, leaves the
// directory absent (or as it was, empty) or holding the complete package,
// and nothing beside it.
func TestWriteFreshDirFailureAtEveryStep(t *testing.T) {
	pkg, err := Generate(demoProgram(t, compiler.QLinearDynamic).Schedule, demoOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{"absent", "empty"} {
		t.Run(start, func(t *testing.T) {
			for k := 1; ; k++ {
				dir := filepath.Join(t.TempDir(), "out", "demo")
				if start == "empty" {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				f := &faultFS{failAt: k}
				err := callWrite(t, writer{fs: f}, dir, pkg)
				complete, _ := dirHolds(dir, pkg)
				if f.failed == "" {
					if err != nil || !complete {
						t.Fatalf("no operation failed: error %v, complete package %v", err, complete)
					}
					t.Logf("%s: %d operations: %s", start, len(f.ops), strings.Join(f.ops, ", "))
					break
				}
				if err == nil || !errors.Is(err, errInjected) || !strings.Contains(err.Error(), dir) {
					t.Errorf("k=%d (%s): want an error naming %s wrapping the cause, got %v", k, f.failed, dir, err)
				}
				entries, rerr := os.ReadDir(dir)
				switch {
				case complete:
				case errors.Is(rerr, fs.ErrNotExist) && start == "absent":
				case rerr == nil && len(entries) == 0 && start == "empty":
				default:
					t.Errorf("k=%d (%s): the output is neither as it was (%s) nor complete: %d entries, %v", k, f.failed, start, len(entries), rerr)
				}
				if _, err := os.Stat(filepath.Dir(dir)); err == nil {
					if left := siblings(t, dir); len(left) > 0 {
						t.Errorf("k=%d (%s): left %v beside the output", k, f.failed, left)
					}
				}
			}
		})
	}
}

// callWrite runs w.write, failing the test on a panic.
func callWrite(t *testing.T, w writer, dir string, pkg *Package) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Write panicked: %v", r)
		}
	}()
	return w.write(dir, pkg)
}

// checkEveryStepCounted makes sure the seam sees every step: a create,
// write, sync and close per file, the fsync of both directories and the
// swap, so the loop above failed each of them.
func checkEveryStepCounted(t *testing.T, ops []string, pkg *Package, mode string) {
	t.Helper()
	for _, name := range pkg.Names() {
		for _, op := range []string{"create", "write", "sync", "close"} {
			if !slices.Contains(ops, op+" "+name) {
				t.Errorf("no %q operation for %s", op, name)
			}
		}
	}
	want := []string{"mkdir-all", "mkdir-temp", "chmod", "sync-dir", "remove-all"}
	if mode == "exchange" {
		want = append(want, "exchange")
	} else {
		want = append(want, "rename")
	}
	for _, kind := range want {
		if !slices.ContainsFunc(ops, func(op string) bool { return strings.Fields(op)[0] == kind }) {
			t.Errorf("no %s operation", kind)
		}
	}
	if n, min := len(ops), 4*len(pkg.Names())+7; n < min {
		t.Errorf("%d operations, want at least %d", n, min)
	}
}
