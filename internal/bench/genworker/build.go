// Package genworker builds a worker of the peer harness's protocol (see
// internal/bench's Serve) around a package `sqc compile` generates, so
// that bench/realbatch and bench/peers.sh time the generated package's
// Run: what a user ships, with its own input checks, chunking, padding and
// output copies, rather than the in-process engine (compiler/exec) that
// `sqc bench --serve` runs. Both call the same runtime kernels and give
// the same bits (codegen's TestEncoderPackageMatchesExec); what this adds
// is the generated code around them, timed.
//
// Build compiles a named model shape with random weights (as `sqc bench
// --config` does, quantised the same way) into a package, lays out a
// throwaway module around it with a main program (main.go.tmpl), and
// builds that into one static binary. The program calls Main, which
// serves the protocol with the generated Model behind a bench.Engine.
package genworker

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/sqc-dev/sqc/codegen"
	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/internal/bench"
	"github.com/sqc-dev/sqc/passes"
)

// ModulePath is the module path of the built worker's module. It lies
// under sqc's own path, so that its main program may import
// internal/bench (Go's internal rule is by import path); no directory of
// the sqc repository has this path, so no import is ambiguous.
const ModulePath = "github.com/sqc-dev/sqc/genworker"

// sqcModule is sqc's module path, which the worker's module requires.
const sqcModule = "github.com/sqc-dev/sqc"

// Defaults of Options.
const (
	// DefaultMaxBatch is the generated package's MaxBatch: the real-length
	// comparison sends batches of 32 sentences, and a package with a
	// smaller MaxBatch would split them.
	DefaultMaxBatch = 32
	DefaultMaxSeq   = 128
)

// Names of what Build writes in Options.Dir.
const (
	// BinaryName is the worker binary.
	BinaryName = "worker"
	// markerName marks a directory Build made, which a later Build may
	// replace.
	markerName = ".sqc-genworker"
	packageDir = "m"
)

// Options configure Build.
type Options struct {
	Config string // a model shape bench.Config knows (bert-base, minilm-l6, ...)
	Seed   uint64 // random-weight seed (bench.DefaultSeed when 0), as `sqc bench --seed`
	Quant  bench.QuantOptions
	// MaxBatch and MaxSeq size the generated package (DefaultMaxBatch and
	// DefaultMaxSeq when 0).
	MaxBatch, MaxSeq int
	// Dir receives the module (the generated package in Dir/m, go.mod,
	// go.sum, main.go) and the binary Dir/worker. It must not exist, be
	// empty, or hold an earlier Build's output (which is replaced).
	Dir string
	// Repo is the sqc checkout the module builds against (a replace
	// directive); FindRepo finds the one around a directory.
	Repo string
	// Log receives progress lines; nil: none.
	Log io.Writer
}

// Result is what Build made.
type Result struct {
	Binary  string        // path of the worker binary
	Steps   int           // schedule steps of the generated package
	Files   int           // files of the generated package
	Bytes   int           // their total size
	Elapsed time.Duration // the whole build
}

//go:embed main.go.tmpl
var mainTemplate string

var mainTmpl = template.Must(template.New("main.go").Parse(mainTemplate))

// Build generates the package and builds the worker; see Options. The go
// command runs with GOPROXY=off and GOWORK=off: the module cache must hold
// sqc's dependencies (building sqc once puts them there).
func Build(o Options) (*Result, error) {
	start := time.Now()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "genworker: "+format+"\n", args...)
		}
	}
	if o.Config == "" {
		return nil, fmt.Errorf("%w: genworker: no model shape (Config) given; known: %s", compiler.ErrInvalidRequest, strings.Join(bench.ConfigNames(), ", "))
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxSeq == 0 {
		o.MaxSeq = DefaultMaxSeq
	}
	if o.MaxBatch < 1 || o.MaxSeq < 1 {
		return nil, fmt.Errorf("%w: genworker: max batch %d and max sequence %d must be at least 1", compiler.ErrInvalidRequest, o.MaxBatch, o.MaxSeq)
	}
	if err := checkRepo(o.Repo); err != nil {
		return nil, err
	}
	dir, err := prepareDir(o.Dir)
	if err != nil {
		return nil, err
	}

	m, err := bench.Load(bench.Source{Config: o.Config, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	if m.MaxSeq > 0 && o.MaxSeq > m.MaxSeq {
		return nil, fmt.Errorf("%w: genworker: max sequence %d is longer than %s's %d positions", compiler.ErrInvalidRequest, o.MaxSeq, m.Name, m.MaxSeq)
	}
	inputs := make([]string, len(m.Graph.Inputs))
	for i, v := range m.Graph.Inputs {
		inputs[i] = v.Name
	}
	info, err := m.Quantize(o.Quant)
	if err != nil {
		return nil, err
	}
	logf("%s: calibrated on %d x %d random tokens in %.1f s, %d Linears quantised", m.Name, info.CalibSequences, info.CalibSeq, info.Calibration.Seconds(), info.QLinears)
	sched, err := sqcexec.Lower(m.Graph)
	if err != nil {
		return nil, err
	}
	summary := quantSummary(o.Quant)
	pkg, err := codegen.Generate(sched, codegen.Options{
		Package: packageDir, ModelName: m.Name, Summary: summary,
		MaxBatch: o.MaxBatch, MaxSeq: o.MaxSeq,
	})
	if err != nil {
		return nil, err
	}
	if err := codegen.Write(filepath.Join(dir, packageDir), pkg); err != nil {
		return nil, err
	}
	res := &Result{Binary: filepath.Join(dir, BinaryName), Steps: pkg.Steps, Files: len(pkg.Files)}
	for _, data := range pkg.Files {
		res.Bytes += len(data)
	}
	logf("wrote the package to %s: %d files, %d bytes, %d steps", filepath.Join(dir, packageDir), res.Files, res.Bytes, res.Steps)

	mainSrc, err := renderMain(mainData{Model: m.Name, Summary: summary, Inputs: inputs})
	if err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(o.Repo, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("genworker: %w", err)
	}
	gomod, err := workerGoMod(filepath.Join(o.Repo, "go.mod"), o.Repo)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"go.mod": gomod, "go.sum": sum, "main.go": mainSrc} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("genworker: %w", err)
		}
	}
	logf("building %s", res.Binary)
	cmd := exec.Command("go", "build", "-trimpath", "-o", BinaryName, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("genworker: go build in %s: %v\n%s", dir, err, strings.TrimSpace(stderr.String()))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// workerGoMod is the worker module's go.mod: sqc's own (its go version
// and every requirement, so the module graph is the one sqc builds with
// and the go command, offline, needs no go.mod that building sqc did not
// fetch: a go.mod requiring sqc alone made it resolve avo's requirements
// anew, x/arch's go.mod among them) under the worker's module path, plus
// sqc itself, replaced by the checkout repo.
func workerGoMod(sqcGoMod, repo string) ([]byte, error) {
	data, err := os.ReadFile(sqcGoMod)
	if err != nil {
		return nil, fmt.Errorf("genworker: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "module ") {
			lines[i] = "module " + ModulePath
			return fmt.Appendf(nil, "%s\nrequire %s v0.0.0\n\nreplace %s => %s\n", strings.Join(lines, "\n"), sqcModule, sqcModule, repo), nil
		}
	}
	return nil, compiler.BadInput(sqcGoMod, "", fmt.Errorf("%w: no module line", compiler.ErrInvalidRequest))
}

// quantSummary is the package doc's line on quantisation.
func quantSummary(q bench.QuantOptions) string {
	act := q.Passes.Act
	if act == "" {
		act = "static"
	}
	s := act + " activations, calibrated on random token ids (bench/genworker)"
	if a, err := passes.AttentionPrecision(q.Passes.Attention); err == nil {
		s += ", " + a + " attention"
	}
	return s
}

// mainData fills main.go.tmpl.
type mainData struct {
	Model, Summary string
	Inputs         []string // the graph's input names, in order
}

func renderMain(d mainData) ([]byte, error) {
	var b bytes.Buffer
	if err := mainTmpl.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("genworker: main.go: %w", err)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("genworker: main.go does not parse (a template bug): %w", err)
	}
	return src, nil
}

// prepareDir makes dir ready for a build: created if missing, emptied if
// it holds an earlier build (its marker), refused otherwise unless empty.
// It returns dir as an absolute path.
func prepareDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: genworker: no output directory given", compiler.ErrInvalidRequest)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("genworker: %w", err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("genworker: %w", err)
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(abs, markerName)); err != nil {
			return "", compiler.BadInput(abs, "", fmt.Errorf("%w: the directory holds files genworker did not make (no %s); choose an empty or new one", compiler.ErrInvalidRequest, markerName))
		}
		if err := os.RemoveAll(abs); err != nil {
			return "", fmt.Errorf("genworker: replacing an earlier build: %w", err)
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("genworker: %w", err)
	}
	marker := "made by sqc's internal/bench/genworker; the next build replaces this directory\n"
	if err := os.WriteFile(filepath.Join(abs, markerName), []byte(marker), 0o644); err != nil {
		return "", fmt.Errorf("genworker: %w", err)
	}
	return abs, nil
}

// checkRepo checks that repo is an absolute path to sqc's module root.
func checkRepo(repo string) error {
	if repo == "" || !filepath.IsAbs(repo) {
		return fmt.Errorf("%w: genworker: the sqc checkout must be an absolute path, got %q", compiler.ErrInvalidRequest, repo)
	}
	if mod, err := modulePathOf(filepath.Join(repo, "go.mod")); err != nil || mod != sqcModule {
		return compiler.BadInput(filepath.Join(repo, "go.mod"), "", fmt.Errorf("%w: not sqc's module root (module %q, err %v)", compiler.ErrInvalidRequest, mod, err))
	}
	return nil
}

// FindRepo walks up from dir to the directory whose go.mod declares sqc's
// module.
func FindRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := modulePathOf(filepath.Join(d, "go.mod")); err == nil && mod == sqcModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("genworker: no go.mod of %s at or above %s", sqcModule, dir)
		}
	}
}

// modulePathOf reads the module path of a go.mod file.
func modulePathOf(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	if mod := modfile.ModulePath(data); mod != "" {
		return mod, nil
	}
	return "", errors.New("no module line")
}
