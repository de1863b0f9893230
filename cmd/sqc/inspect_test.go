package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/internal/testmodels"
)

const (
	demoModelDir = "../../internal/demomodel/sst2-distilbert-tiny"
	demoTexts    = "../../examples/sentiment/calib.txt"
)

// opCount reads an op's count from inspect's histogram (0 if absent).
func opCount(t *testing.T, out, op string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(op) + `\s+(\d+)$`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// peakBytes reads the arena and naive byte counts from inspect's memory
// line.
func peakBytes(t *testing.T, out string) (peak, naive int64) {
	t.Helper()
	m := regexp.MustCompile(`activations at batch (\d+) x sequence (\d+): peak .* \((\d+) bytes\) in one arena, naive sum of all \d+ intermediates .* \((\d+) bytes\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no memory line in\n%s", out)
	}
	peak, _ = strconv.ParseInt(m[3], 10, 64)
	naive, _ = strconv.ParseInt(m[4], 10, 64)
	return peak, naive
}

func TestInspectINT8(t *testing.T) {
	inspect := func(extra ...string) string {
		t.Helper()
		args := append([]string{"inspect", "--int8", "--calib", demoTexts, "--calib-samples", "32", "--check-ir"}, extra...)
		code, out, errs := runCLI(t, append(args, demoModelDir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	fused := inspect()
	unfused := inspect("--after", "Quantize")
	// DistilBERT-tiny: 2 layers of Q, K, V, output, FFN in, FFN out.
	for _, c := range []struct {
		op             string
		unfused, fused int
	}{{"sqc.QLinear", 12, 8}, {"sqc.Gelu", 2, 0}, {"Add", 4, 0}, {"sqc.Attention", 2, 2}} {
		if got := opCount(t, unfused, c.op); got != c.unfused {
			t.Errorf("after Quantize: %d %s, want %d", got, c.op, c.unfused)
		}
		if got := opCount(t, fused, c.op); got != c.fused {
			t.Errorf("after fusion: %d %s, want %d", got, c.op, c.fused)
		}
	}
	fusedPeak, fusedNaive := peakBytes(t, fused)
	t.Logf("batch 16 x 128 tokens: peak %d bytes, naive %d", fusedPeak, fusedNaive)
	if fusedPeak <= 0 || fusedPeak >= fusedNaive {
		t.Errorf("implausible plan: peak %d, naive %d", fusedPeak, fusedNaive)
	}
	// Before the quantisation passes the QLinears read f32: lowering
	// makes no quantisation of its own, so that graph has no schedule.
	if !strings.Contains(unfused, "activations: not planned:") || !strings.Contains(unfused, "run the quantisation passes") {
		t.Errorf("after Quantize: want the plan refused for want of explicit quantisation:\n%s", unfused)
	}
	// Hidden 128 at 16 x 128 tokens: one [tokens, hidden] f32 value is
	// 1 MiB, the packed QKV projection [tokens, 384] 3 MiB; at the
	// attention the peak holds that, the residual stream and its output,
	// the u8 codes the output projection reads (passes.WriteU8Directly),
	// 0.25 MiB. (The FFN's [tokens, 512] hidden value is written as u8,
	// 1 MiB.)
	if fusedPeak < 3<<20+1<<20+1<<18 {
		t.Errorf("peak %d bytes is below the attention's own buffers", fusedPeak)
	}
	if !strings.Contains(fused, "batches: packed") {
		t.Errorf("the demo model's schedule does not run packed batches:\n%s", fused)
	}
	if !strings.Contains(inspect("--graph"), "qkv_packed=1") {
		t.Error("the fused graph has no packed attention")
	}
}

func TestInspectDumpAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dumps")
	code, out, errs := runCLI(t, "inspect", "--int8", "--act", "dynamic", "--alpha", "0", "--dump-all", dir, "--after", "FuseQKV", demoModelDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if opCount(t, out, "sqc.QLinear") != 8 {
		t.Errorf("--after FuseQKV shows\n%s", out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, e := range entries {
		names = append(names, e.Name())
		if !strings.HasPrefix(e.Name(), fmt.Sprintf("%02d-", i)) {
			t.Errorf("dump %d is %s: numbers must run from 00 without gaps", i, e.Name())
		}
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"00-Input.txt", "01-FoldConstants.txt", "-FuseEmbeddings.txt", "-SmoothQuant.txt", "-Quantize.txt", "-FuseQLinearEpilogues.txt", "-FuseQKV.txt"} {
		if !strings.Contains(got, want) {
			t.Errorf("dumps %s lack %s", got, want)
		}
	}
	if !strings.HasSuffix(got, "-FuseQKV.txt") {
		t.Errorf("dumps went past --after FuseQKV: %s", got)
	}
	last, err := os.ReadFile(filepath.Join(dir, names[len(names)-1]))
	if err != nil || !strings.Contains(string(last), "qkv_packed=1") {
		t.Errorf("the last dump is not the fused graph (%v)", err)
	}
}

func TestInspectFP32Passes(t *testing.T) {
	code, out, errs := runCLI(t, "inspect", "--after", "FuseLinear", "--check-ir", demoModelDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if opCount(t, out, "sqc.Linear") == 0 || opCount(t, out, "MatMul") != 0 {
		t.Errorf("--after FuseLinear:\n%s", out)
	}
	code, out, errs = runCLI(t, "inspect", "--check-ir", "--max-batch", "1", "--max-seq", "8", demoModelDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "activations at batch 1 x sequence 8") {
		t.Errorf("no memory plan for 1 x 8:\n%s", out)
	}
	// As loaded, without pass flags: no plan.
	if _, out, _ = runCLI(t, "inspect", demoModelDir); strings.Contains(out, "activations") {
		t.Errorf("inspect without pass flags ran the passes:\n%s", out)
	}
	for _, bad := range [][]string{{"--after", "NoSuchPass"}, {"--int8", "--after", "x"}, {"--check-ir", "--max-seq", "0"}, {"--int8"}} {
		code, _, errs := runCLI(t, append(append([]string{"inspect"}, bad...), demoModelDir)...)
		if code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, code, errs)
		}
	}
}

// TestCompileCheckIR: `sqc compile --check-ir` verifies every pass and
// generates the fused schedule (one QKV GEMM per layer read in place by
// the attention).
func TestCompileCheckIR(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	code, _, errs := runCLI(t, "compile", "--model", demoModelDir, "--out", out, "--package", "m", "--act", "dynamic", "--alpha", "0", "--check-ir")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sched, err := os.ReadFile(filepath.Join(out, "schedule.go"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sched), "m.gemm.Linear("); n != 2*4 {
		t.Errorf("%d GEMMs in the schedule, want 8 (4 per layer)", n)
	}
	if !regexp.MustCompile(`QStride:\s+384,`).Match(sched) {
		t.Error("attention does not read a packed QKV")
	}
}

// TestInspectArenaIsCompiledArena: the figure inspect prints for the INT8
// graph is the arena `sqc compile` gives the generated package for the
// same flags and bounds (both exec.PlanMemory's plan of one schedule;
// codegen's tests check the in-process engine allocates it too).
func TestInspectArenaIsCompiledArena(t *testing.T) {
	flags := []string{"--act", "dynamic", "--alpha", "0", "--max-batch", "2", "--max-seq", "16"}
	code, out, errs := runCLI(t, append(append([]string{"inspect", "--int8"}, flags...), demoModelDir)...)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errs)
	}
	peak, _ := peakBytes(t, out)
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, errs := runCLI(t, append([]string{"compile", "--model", demoModelDir, "--out", dir, "--package", "m"}, flags...)...); code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errs)
	}
	src, err := os.ReadFile(filepath.Join(dir, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*arenaBytes\s*=\s*(\d+)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("the generated model.go has no arenaBytes constant")
	}
	if got, _ := strconv.ParseInt(string(m[1]), 10, 64); got != peak || peak <= 0 {
		t.Errorf("the generated package's arena is %d bytes, inspect says %d", got, peak)
	}
}

// TestInspectRobertaPacked: the RoBERTa and XLM-R tiny models' schedules
// (their position ids offset by padding_idx, fused into sqc.Embeddings)
// run packed batches, from both frontends.
func TestInspectRobertaPacked(t *testing.T) {
	for _, name := range []string{testmodels.TinyRobertaCls, testmodels.TinyXLMRBase} {
		dir := testmodels.TinyDir(t, name)
		for _, path := range []string{dir, filepath.Join(dir, "model.onnx")} {
			code, out, errs := runCLI(t, "inspect", "--check-ir", path)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", path, code, errs)
			}
			if !strings.Contains(out, "batches: packed") {
				t.Errorf("%s does not run packed batches:\n%s", path, out)
			}
		}
	}
}

// TestVocabFlag: a model directory without a tokenizer file fails an INT8
// inspect with advice naming --vocab, and runs with --vocab pointing at
// the tokenizer elsewhere (under another name); compile takes the same
// flag and embeds that file.
func TestVocabFlag(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(demoModelDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vocabDir := t.TempDir()
	vocab := filepath.Join(vocabDir, "distilbert-tiny-vocab.txt")
	for from, to := range map[string]string{"vocab.txt": vocab, "tokenizer_config.json": filepath.Join(vocabDir, "tokenizer_config.json")} {
		data, err := os.ReadFile(filepath.Join(demoModelDir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"inspect", "--int8", "--calib", demoTexts, "--calib-samples", "8"}
	code, _, errs := runCLI(t, append(args, dir)...)
	if code == 0 || !strings.Contains(errs, "give --vocab FILE") || !strings.Contains(errs, dir) {
		t.Errorf("inspect without a tokenizer: exit %d, %q; want a failure naming the directory and --vocab", code, errs)
	}
	if code, out, errs := runCLI(t, append(args, "--vocab", vocab, dir)...); code != 0 || opCount(t, out, "sqc.QLinear") != 8 {
		t.Errorf("inspect --vocab: exit %d: %s\n%s", code, errs, out)
	}
	tok, src, err := compileTokenizer(dir, vocab)
	if err != nil || tok == nil || src.Name != filepath.Base(vocab) {
		t.Fatalf("compileTokenizer with --vocab: %v, %v", src, err)
	}
	want, err := loadTokenizer(demoModelDir, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"A Gripping, Funny film.", "naïve café"} {
		if a, b := tok.Encode(text), want.Encode(text); !slices.Equal(a.InputIDs, b.InputIDs) {
			t.Errorf("%q: --vocab tokenizer %v, the model's %v", text, a.InputIDs, b.InputIDs)
		}
	}
	if tok, src, err := compileTokenizer(dir, ""); tok != nil || src != nil || err != nil {
		t.Errorf("compileTokenizer without a tokenizer: %v, %v, %v; want none (a package on token ids)", tok, src, err)
	}
}
