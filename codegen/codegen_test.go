package codegen

import (
	"bytes"
	"errors"
	"go/format"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

const demoDir = "../internal/demomodel/sst2-distilbert-tiny"

// demoProgram lowers the demo model quantised with act ("static", with
// statistics of a few random sequences, or "dynamic").
func demoProgram(t *testing.T, act string) *exec.Program {
	t.Helper()
	return demoProgramWith(t, passes.QuantOptions{Act: act})
}

// demoProgramWith is demoProgram with the given quantisation options.
func demoProgramWith(t *testing.T, opts passes.QuantOptions) *exec.Program {
	t.Helper()
	act := opts.Act
	g, err := frontend.Load(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	var stats *calib.Stats
	if act == compiler.QLinearStatic {
		opts.Alpha = 0.5
		rng := rand.New(rand.NewPCG(1, 2))
		ids, mask := compiler.NewTensor(compiler.Int64, 2, 12), compiler.NewTensor(compiler.Int64, 2, 12)
		for i := range ids.I64 {
			ids.I64[i], mask.I64[i] = 1000+rng.Int64N(20000), 1
		}
		if stats, err = calib.Collect(g, []calib.Batch{{"input_ids": ids, "attention_mask": mask}}, calib.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := passes.Run(g, passes.QuantPipeline(stats, opts), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	p, err := exec.Compile(g, exec.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func demoOptions(t *testing.T) Options {
	src, err := tokenizer.ReadSource(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Package: "demo", ModelName: "sst2-distilbert-tiny", MaxBatch: 4, MaxSeq: 32,
		Labels: []string{"negative", "positive"}, Tokenizer: src}
}

func TestGenerateIsDeterministicAndFormatted(t *testing.T) {
	for _, act := range []string{compiler.QLinearStatic, compiler.QLinearDynamic} {
		t.Run(act, func(t *testing.T) {
			a, err := Generate(demoProgram(t, act).Schedule, demoOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Generate(demoProgram(t, act).Schedule, demoOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"kernels_amd64.go", "kernels_amd64.s", "kernels_other.go", "model.go", "schedule.go", MarkerFile, "weights.bin", "weights.go"}
			if got := a.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("files %v, want %v", got, want)
			}
			for _, name := range a.Names() {
				if !bytes.Equal(a.Files[name], b.Files[name]) {
					t.Errorf("%s differs between two generations", name)
				}
				if !strings.HasSuffix(name, ".go") {
					continue
				}
				src := a.Files[name]
				if !bytes.HasPrefix(src, []byte("// "+Header+"\n")) {
					t.Errorf("%s does not open with the header", name)
				}
				if fmted, err := format.Source(src); err != nil || !bytes.Equal(fmted, src) {
					t.Errorf("%s is not gofmt'd (err %v)", name, err)
				}
			}
			sched := string(a.Files["schedule.go"])
			if act == compiler.QLinearDynamic && !strings.Contains(sched, "nn.QuantizeRowsU8Parallel(") {
				t.Error("dynamic schedule has no per-token quantisation")
			}
			// Every LayerNorm that feeds static QLinears has a smoothed
			// twin here, merged into it (passes.MergeSmoothedLayerNorms).
			if act == compiler.QLinearStatic && !strings.Contains(sched, "nn.LayerNormDual(") {
				t.Error("static schedule has no fused LayerNorm + quantise")
			}
			// FuseQKV: attention reads Q, K and V in place from one
			// [rows, 3 x 128] buffer (K and V at column offsets; rows: the
			// real tokens of a packed batch).
			if !regexp.MustCompile(`KStride:\s+384,`).MatchString(sched) || !regexp.MustCompile(`\]\[128:\], ws\.f32\[\d+:\]\[:rows\*384\]\[256:\]`).MatchString(sched) {
				t.Error("schedule has no packed QKV attention")
			}
			// Padding-free batches (compiler/exec packed.go): the schedule
			// has the packed forms of attention (INT8, the default; writing
			// the static quantisation of the output projection's input,
			// passes.WriteU8Directly) and embeddings.
			attention := "nn.AttentionInt8Packed("
			if act == compiler.QLinearStatic {
				attention = "nn.AttentionInt8U8Packed("
			}
			if !strings.Contains(sched, attention) || !strings.Contains(sched, "nn.EmbedSumPacked(") {
				t.Errorf("schedule has no padding-free (packed) batch path (%s)", attention)
			}
		})
	}
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	p := demoProgram(t, compiler.QLinearDynamic)
	for name, mod := range map[string]func(*Options){
		"package":  func(o *Options) { o.Package = "not-a-name" },
		"target":   func(o *Options) { o.Target = "sse2" },
		"max-seq":  func(o *Options) { o.MaxSeq = 4096 }, // beyond the 512 positions
		"max-zero": func(o *Options) { o.MaxBatch = 0 },
	} {
		o := demoOptions(t)
		mod(&o)
		if _, err := Generate(p.Schedule, o); !errors.Is(err, compiler.ErrInvalidRequest) {
			t.Errorf("%s: got %v, want ErrInvalidRequest", name, err)
		}
	}
}

func TestWriteReplacesOnlyGeneratedDirs(t *testing.T) {
	root := t.TempDir()
	pkg := &Package{Files: map[string][]byte{
		"model.go":    []byte("// " + Header + "\n\npackage demo\n"),
		MarkerFile:    []byte(markerText),
		"weights.bin": {1, 2, 3},
	}}
	out := filepath.Join(root, "demo")
	if err := Write(out, pkg); err != nil {
		t.Fatal(err)
	}
	// Replacing an earlier generated package drops its stale files.
	if err := os.WriteFile(filepath.Join(out, "old.go"), []byte("// "+Header+"\n\npackage demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(out, pkg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "old.go")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale generated file survived: %v", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("temporary directories left beside the output: %v", entries)
	}
	// A hand-written file, a directory without the marker, or a file in
	// the way make Write refuse and leave everything as it was.
	for name, setup := range map[string]func(dir string) error{
		"hand-written file": func(dir string) error {
			if err := Write(dir, pkg); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package demo\n"), 0o644)
		},
		"no marker": func(dir string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "model.go"), []byte("// "+Header+"\n"), 0o644)
		},
		"not a directory": func(dir string) error { return os.WriteFile(dir, []byte("x"), 0o644) },
	} {
		dir := filepath.Join(t.TempDir(), "out")
		if err := setup(dir); err != nil {
			t.Fatal(err)
		}
		err := Write(dir, pkg)
		if !errors.Is(err, ErrNotGenerated) || !errors.Is(err, compiler.ErrBadInput) {
			t.Errorf("%s: got %v, want ErrNotGenerated", name, err)
		}
	}
}

// TestArenaIsTheEnginesArena: the arena a generated package allocates
// (its arenaBytes constant) is exec.PlanMemory's at the compiled bounds,
// and the in-process engine, after a run at those bounds, holds the same
// plan: one figure for the three.
func TestArenaIsTheEnginesArena(t *testing.T) {
	p := demoProgram(t, compiler.QLinearDynamic)
	o := demoOptions(t)
	files, err := Generate(p.Schedule, o)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*arenaBytes\s*=\s*(\d+)`).FindSubmatch(files.Files["model.go"])
	if m == nil {
		t.Fatal("model.go has no arenaBytes constant")
	}
	generated, _ := strconv.ParseInt(string(m[1]), 10, 64)
	want, err := exec.PlanMemory(p.Schedule, o.MaxBatch, o.MaxSeq)
	if err != nil {
		t.Fatal(err)
	}
	ids, mask := compiler.NewTensor(compiler.Int64, int64(o.MaxBatch), int64(o.MaxSeq)), compiler.NewTensor(compiler.Int64, int64(o.MaxBatch), int64(o.MaxSeq))
	for i := range ids.I64 {
		ids.I64[i], mask.I64[i] = int64(1000+i), 1
	}
	if _, err := p.Run(map[string]*compiler.Tensor{"input_ids": ids, "attention_mask": mask}); err != nil {
		t.Fatal(err)
	}
	engine := p.Plan()
	if generated != want.ArenaBytes || engine == nil || engine.ArenaBytes != want.ArenaBytes || want.ArenaBytes <= 0 {
		t.Errorf("arena: generated %d bytes, engine %+v, exec.PlanMemory %d", generated, engine, want.ArenaBytes)
	}
	if held := p.Memory().Activations; held < want.ArenaBytes {
		t.Errorf("the engine holds %d bytes of activations, less than its arena of %d", held, want.ArenaBytes)
	}
}
