package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
)

// generateArgs are the arguments of the go:generate line in main.go.
func generateArgs(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatal("main.go has no go:generate line")
	return nil
}

// TestGeneratedUpToDate regenerates the package into a temporary
// directory with main.go's go:generate command and fails on any
// difference from the checked-in sentimentmodel/.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sqc compile")
	}
	args := generateArgs(t)
	out := filepath.Join(t.TempDir(), "sentimentmodel")
	i := slices.Index(args, "--out")
	if i < 0 || args[0] != "go" {
		t.Fatalf("unexpected go:generate line %v", args)
	}
	args[i+1] = out
	cmd := exec.Command(args[0], args[1:]...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, msg)
	}
	want, err := os.ReadDir("sentimentmodel")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	names := func(es []os.DirEntry) (s []string) {
		for _, e := range es {
			s = append(s, e.Name())
		}
		return s
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("regenerated files %v, checked in %v", names(got), names(want))
	}
	for _, e := range want {
		a, _ := os.ReadFile(filepath.Join("sentimentmodel", e.Name()))
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if !bytes.Equal(a, b) {
			t.Errorf("sentimentmodel/%s differs from what sqc generates now: run go generate ./examples/sentiment", e.Name())
		}
	}
}

// TestStaticBinary builds the example with cgo off and checks the result
// is a static executable (no PT_INTERP program header), runs it, and
// cross-builds it for arm64 (the pure-Go kernels).
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	bin := filepath.Join(t.TempDir(), "sentiment")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, msg)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a PT_INTERP header: it is dynamically linked", bin)
			}
		}
		f.Close()
	}
	st, _ := os.Stat(bin)
	t.Logf("static binary: %.1f MB", float64(st.Size())/1e6)
	out, err := exec.Command(bin, "a wonderful, moving film", "a dull, lifeless mess").CombinedOutput()
	if err != nil {
		t.Fatalf("running %s: %v\n%s", bin, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "positive") || !strings.HasPrefix(lines[1], "negative") {
		t.Errorf("unexpected output:\n%s", out)
	}
	arm := exec.Command("go", "build", "-o", os.DevNull, ".")
	arm.Env = append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	if msg, err := arm.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=arm64 go build: %v\n%s", err, msg)
	}
}

func newModel(t *testing.T) *sentimentmodel.Model {
	t.Helper()
	m, err := sentimentmodel.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func TestRunRejectsBadInput(t *testing.T) {
	m := newModel(t)
	ctx := context.Background()
	long := make([]int64, sentimentmodel.MaxSequence+1)
	for _, tc := range []struct {
		name string
		b    sentimentmodel.Batch
		want error
	}{
		{"empty batch", sentimentmodel.Batch{}, sentimentmodel.ErrEmptyBatch},
		{"empty sequence", sentimentmodel.Batch{InputIDs: [][]int64{{101, 102}, {}}}, sentimentmodel.ErrEmptySequence},
		{"too long", sentimentmodel.Batch{InputIDs: [][]int64{long}}, sentimentmodel.ErrSequenceTooLong},
		{"token id", sentimentmodel.Batch{InputIDs: [][]int64{{101, sentimentmodel.VocabSize, 102}}}, sentimentmodel.ErrTokenOutOfRange},
		{"mask length", sentimentmodel.Batch{InputIDs: [][]int64{{101, 102}}, AttentionMask: [][]int64{{1}}}, sentimentmodel.ErrMaskLength},
		{"token types", sentimentmodel.Batch{InputIDs: [][]int64{{101, 102}}, TokenTypeIDs: [][]int64{{0, 1}}}, sentimentmodel.ErrTokenTypeInRange},
	} {
		_, err := m.Run(ctx, tc.b)
		if !errors.Is(err, tc.want) || !errors.Is(err, sentimentmodel.ErrInvalidInput) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Run(cancelled, sentimentmodel.Batch{InputIDs: [][]int64{{101, 102}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
	if _, err := m.Classify(cancelled, []string{"fine"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Classify: got %v", err)
	}
}

var reviews = []string{
	"a warm and generous film",
	"the worst thing i have seen this year, and i have seen a lot",
	"it is long",
	"the cast is superb and the script is even better, a real treat from start to finish",
	"flat, dull and far too pleased with itself",
}

// TestRunBatchingAndConcurrency checks that a batch larger than MaxBatch
// (split into chunks) and of mixed lengths gives every sequence the bits
// it gets alone, from concurrent callers too.
func TestRunBatchingAndConcurrency(t *testing.T) {
	m := newModel(t)
	ctx := context.Background()
	var texts []string
	for i := 0; len(texts) < 2*sentimentmodel.MaxBatch+3; i++ {
		texts = append(texts, reviews[i%len(reviews)]+strings.Repeat(" indeed", i%7))
	}
	all, err := m.Classify(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(texts))
	for i, text := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one, err := m.Classify(ctx, []string{text})
			if err != nil {
				errs <- err.Error()
				return
			}
			for j, p := range one[0].Probs {
				if math.Float32bits(p) != math.Float32bits(all[i].Probs[j]) {
					errs <- "text " + text + ": alone and batched differ"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if all[0].Label != "positive" || all[1].Label != "negative" {
		t.Errorf("labels %q, %q", all[0].Label, all[1].Label)
	}
	if mb := m.MemoryBytes(); mb < 16<<20 {
		t.Errorf("MemoryBytes %d is less than the embedding table", mb)
	}
}

func TestRunExample(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), nil, strings.NewReader(strings.Join(reviews[:2], "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "positive") || !strings.HasPrefix(lines[1], "negative") {
		t.Errorf("output:\n%s", out.String())
	}
	if err := run(context.Background(), nil, strings.NewReader(""), &out); err == nil {
		t.Error("no texts: want an error")
	}
}

// BenchmarkClassify classifies MaxBatch reviews per iteration (one forward
// pass) on the default kernels; b.N x MaxBatch texts in all.
func BenchmarkClassify(b *testing.B) {
	m, err := sentimentmodel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	texts := make([]string, sentimentmodel.MaxBatch)
	for i := range texts {
		texts[i] = reviews[i%len(reviews)]
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Classify(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts))/1e3, "µs/text")
}
