package realbatch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/bench"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// fakeWorkerEnv makes the test binary a peer-protocol worker (see
// TestMain) whose times are a function of the request: 0.01 ms per token
// position it computes (the real tokens when sent lengths, batch x seq
// otherwise), twice that in mode "slow". FAKE_FAIL=batch makes run fail
// on batches of that size; FAKE_DIE=1 exits after the hello.
const fakeWorkerEnv = "REALBATCH_FAKE_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeWorkerEnv) == "1" {
		fakeWorker()
		return
	}
	os.Exit(m.Run())
}

func fakeWorker() {
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(map[string]any{"ready": true, "system": "fake", "modes": []string{"fast", "slow"}, "load_s": map[string]float64{"fast": 0.1}}) // load_s as ONNX Runtime's worker sends it
	if os.Getenv("FAKE_DIE") == "1" {
		os.Exit(3)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var req bench.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			enc.Encode(map[string]any{"error": err.Error()})
			continue
		}
		switch {
		case req.Op == "quit":
			enc.Encode(map[string]any{"bye": true})
			return
		case fmt.Sprint(req.Batch) == os.Getenv("FAKE_FAIL"):
			enc.Encode(map[string]any{"error": "kernel exploded"})
		default:
			positions := req.Batch * req.Seq
			if req.Lengths != nil {
				positions = 0
				for _, l := range req.Lengths {
					positions += l
				}
			}
			ms := 0.01 * float64(positions)
			if req.Mode == "slow" {
				ms *= 2
			}
			enc.Encode(map[string]any{"ms": []float64{ms}})
		}
	}
}

func startFake(t *testing.T, name, env string) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	p, err := Start(name, fmt.Sprintf("%s=1 %s %s", fakeWorkerEnv, env, exe), &log)
	if err != nil {
		t.Fatalf("Start: %v (stderr %q)", err, log.String())
	}
	return p
}

func TestRunAndSummarize(t *testing.T) {
	p := startFake(t, "fake", "")
	batches := [][]int{{3, 1, 2}, {4, 4}, {1}}
	var calls []Call
	times, err := Run(Options{
		Batches: batches, Rounds: 2, Warmup: true,
		Targets: []Target{{Worker: p, Mode: "fast", Padded: true}, {Worker: p, Mode: "fast"}, {Worker: p, Mode: "slow"}},
		Record:  func(c Call) { calls = append(calls, c) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if len(calls) != 2*3*3 {
		t.Errorf("%d calls recorded, want 18 (the warm-up is not)", len(calls))
	}
	want := []string{"fake/fast padded", "fake/fast", "fake/slow"}
	if !slices.Equal(times.Labels, want) {
		t.Fatalf("labels %v, want %v", times.Labels, want)
	}
	// padded positions 9, 8, 1; real tokens 6, 8, 1.
	if got := times.Ms[0][0]; !close(got[0], 0.09) || !close(got[1], 0.09) {
		t.Errorf("padded batch 0 took %v ms, want 0.09 (3 x 3 positions)", got)
	}
	if got := times.Ms[1][0][1]; !close(got, 0.06) {
		t.Errorf("packed batch 0 took %v ms, want 0.06 (6 tokens)", got)
	}
	s, err := Summarize(times, batches, "fake/fast padded")
	if err != nil {
		t.Fatal(err)
	}
	if s.Sentences != 6 || s.Batches != 3 || s.RealTokens != 15 || s.Padded != 18 {
		t.Errorf("summary counts %+v", s)
	}
	// fast vs padded: ratios 1.5, 1, 1 per batch, each twice: median 1, p75 1.375 (sorted 1 1 1 1 1.5 1.5).
	fast := s.Rows[1]
	if !close(fast.Ratio, 1) || !close(fast.P25, 1) || !close(fast.P75, 1.375) || !close(fast.SetRatio, 0.18/0.15) || !close(fast.SetMs, 0.15) {
		t.Errorf("fast row %+v", fast)
	}
	if slow := s.Rows[2]; !close(slow.Ratio, 0.5) || !close(slow.SentencesPerSec, 6/0.30e-3) {
		t.Errorf("slow row %+v", slow)
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"6 sentences in 3 batches", "15 real tokens, 18 positions", "fake/fast padded", "x fake/fast padded"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
	if _, err := Summarize(times, batches, "nobody/fast"); err == nil {
		t.Error("Summarize accepted an unknown reference")
	}
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestRunErrors(t *testing.T) {
	p := startFake(t, "fake", "FAKE_FAIL=2")
	defer p.Close()
	opts := func(batches [][]int, mode string) Options {
		return Options{Batches: batches, Rounds: 1, Targets: []Target{{Worker: p, Mode: mode}}}
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{opts([][]int{{1}, {2, 2}}, "fast"), "round 1, batch 1: worker fake: run fast 2x2: kernel exploded"},
		{opts([][]int{{1}}, "fp64"), `worker fake has no mode "fp64"`},
		{opts([][]int{{1}, {}}, "fast"), "batch 1 is empty"},
		{opts(nil, "fast"), "0 batches"},
		{Options{Batches: [][]int{{1}}, Targets: []Target{{Worker: p, Mode: "fast"}}}, "rounds 0"},
	} {
		if _, err := Run(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run: %v, want an error containing %q", err, c.want)
		}
	}
	// The worker carries on after an error reply.
	if _, err := Run(opts([][]int{{3}}, "fast")); err != nil {
		t.Errorf("after an error: %v", err)
	}
}

func TestWorkerThatDies(t *testing.T) {
	p := startFake(t, "dying", "FAKE_DIE=1")
	// The first call finds the worker dying or dead (its read or its write
	// fails, as the race goes), the second finds it dead: both say so.
	for call := 1; call <= 2; call++ {
		_, err := p.Run("fast", []int{1}, true)
		if err == nil || !strings.Contains(err.Error(), "worker dying: run fast: worker exited") {
			t.Errorf("Run %d on a dead worker: %v", call, err)
		}
	}
	p.Close()
	if _, err := Start("none", "exit 0", &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "worker none (exit 0): no hello line") {
		t.Errorf("Start of a silent worker: %v", err)
	}
	if _, err := Start("chatty", "echo not json", &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("Start of a worker that prints text: %v", err)
	}
}

func TestLengthsAndBatches(t *testing.T) {
	dir := t.TempDir()
	vocab := filepath.Join(dir, "vocab.txt")
	os.WriteFile(vocab, []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n"), 0o644)
	tok, err := tokenizer.FromVocabFile(vocab, tokenizer.Options{Lowercase: true, MaxLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "dev.tsv")
	os.WriteFile(text, []byte("sentence\tlabel\nhello world\t1\nhello\t0\nhello world hello world\t1\n"), 0o644)
	lengths, err := Lengths(text, tok)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lengths, []int{4, 3, 4}) {
		t.Errorf("lengths %v, want [4 3 4] ([CLS] and [SEP] included, truncated to 4)", lengths)
	}
	b, err := Batches(lengths, 2)
	if err != nil || len(b) != 2 || !slices.Equal(b[0], []int{4, 3}) || !slices.Equal(b[1], []int{4}) {
		t.Errorf("Batches: %v, %v", b, err)
	}
	if _, err := Batches(lengths, 0); err == nil {
		t.Error("Batches accepted size 0")
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Lengths(empty, tok); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("Lengths of an empty file: %v", err)
	}
	if _, err := Lengths(filepath.Join(dir, "missing.tsv"), tok); err == nil || !strings.Contains(err.Error(), "missing.tsv") {
		t.Errorf("Lengths of a missing file: %v", err)
	}
}
