package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/internal/tinymodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// stTiny is the checked-in sentence-transformers folder: mean pooling,
// Dense 32 -> 16 (tanh), Normalize without a folder, max_seq_length 24.
const stTiny = "../../compiler/sentence/testdata/st-bert-tiny"

// headTexts include one longer than max_seq_length and one that is empty
// after tokenization but for the special tokens.
var headTexts = []string{
	"the film is a quiet triumph",
	"no",
	"an overlong , self-important mess that mistakes volume for depth , and then goes on and on for another hour of the same thing",
	"a charming , funny and often affecting journey",
	"...",
	"it 's not the best movie of the year , but it is a good one",
}

func writeLines(t *testing.T, name string, lines []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runLines runs sqc and decodes one JSON object per output line into T.
func runLines[T any](t *testing.T, args ...string) []T {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("sqc %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	var rows []T
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		rows = append(rows, v)
	}
	return rows
}

type embeddingLine struct {
	Embedding []float32 `json:"embedding"`
}

func TestRunSentenceEmbeddings(t *testing.T) {
	texts := writeLines(t, "texts.txt", headTexts)
	fp := runLines[embeddingLine](t, "run", "--fp32", "--model", stTiny, "--texts", texts)
	q := runLines[embeddingLine](t, "run", "--int8", "--model", stTiny, "--texts", texts, "--calib", texts)
	prompted := runLines[embeddingLine](t, "run", "--fp32", "--model", stTiny, "--texts", texts, "--prompt-name", "query")
	if len(fp) != len(headTexts) || len(q) != len(headTexts) || len(prompted) != len(headTexts) {
		t.Fatalf("%d, %d, %d embeddings for %d texts", len(fp), len(q), len(prompted), len(headTexts))
	}
	for i := range fp {
		if len(fp[i].Embedding) != 16 {
			t.Fatalf("text %d: %d values, want the Dense layer's 16", i, len(fp[i].Embedding))
		}
		var norm float64
		for _, v := range fp[i].Embedding {
			norm += float64(v) * float64(v)
		}
		if math.Abs(math.Sqrt(norm)-1) > 1e-6 {
			t.Errorf("text %d: norm %g, want 1 (Normalize)", i, math.Sqrt(norm))
		}
		if c := modelrt.Cosine(fp[i].Embedding, q[i].Embedding); c < 0.99 {
			t.Errorf("text %d: INT8 vs FP32 cosine %.5f", i, c)
		}
		if c := modelrt.Cosine(fp[i].Embedding, prompted[i].Embedding); c > 0.99999 {
			t.Errorf("text %d: the prompt changed nothing (cosine %.6f)", i, c)
		}
	}
	// Truncation at max_seq_length (24 tokens): adding words past it
	// changes nothing.
	long := headTexts[2]
	longer := writeLines(t, "longer.txt", []string{long, long + " and more words at the end"})
	pair := runLines[embeddingLine](t, "run", "--fp32", "--model", stTiny, "--texts", longer)
	if !slicesEqual(pair[0].Embedding, pair[1].Embedding) {
		t.Errorf("words past max_seq_length changed the embedding (cosine %.7f)", modelrt.Cosine(pair[0].Embedding, pair[1].Embedding))
	}
	// Bad use: a prompt the model lacks; pairs for an embedding model.
	if code, _, errs := runCLI(t, "run", "--fp32", "--model", stTiny, "--texts", texts, "--prompt-name", "doc"); code != 2 || !strings.Contains(errs, "passage, query") {
		t.Errorf("unknown prompt: exit %d: %s", code, errs)
	}
	pairs := writeLines(t, "pairs.tsv", []string{"sentence1\tsentence2", "a\tb"})
	if code, _, errs := runCLI(t, "run", "--fp32", "--model", stTiny, "--texts", pairs); code != 2 || !strings.Contains(errs, "sentence-embedding") {
		t.Errorf("pairs for an embedding model: exit %d: %s", code, errs)
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// embedMain prints the bits of m.Embed and m.EmbedWithPrompt("query") on
// the lines of a file.
const embedMain = `package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"

	"sqcgentest/m"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	texts := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	plain, err := model.Embed(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	query, err := model.EmbedWithPrompt(context.Background(), "query", texts)
	if err != nil {
		panic(err)
	}
	bits := func(rows [][]float32) [][]uint32 {
		out := make([][]uint32, len(rows))
		for i, r := range rows {
			for _, v := range r {
				out[i] = append(out[i], math.Float32bits(v))
			}
		}
		return out
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"plain": bits(plain), "query": bits(query), "dim": m.EmbeddingDim})
}
`

// TestSentenceEmbedPackageMatchesRun compiles the sentence-transformers
// folder, builds a static program on the package and checks that Embed
// and EmbedWithPrompt are bit for bit what `sqc run --int8` prints, with
// dynamic and with static (calibrated) activations.
func TestSentenceEmbedPackageMatchesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a generated package")
	}
	t.Setenv("CGO_ENABLED", "0") // a static binary
	texts := writeLines(t, "texts.txt", headTexts)
	// The other head shapes: two pooling modes concatenated, no Dense, no
	// Normalize, a default prompt.
	other := stVariant(t, map[string]string{
		"modules.json": `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`,
		"1_Pooling/config.json":             `{"word_embedding_dimension":32,"pooling_mode_cls_token":true,"pooling_mode_max_tokens":true}`,
		"config_sentence_transformers.json": `{"prompts":{"query":"query: ","passage":"passage: "},"default_prompt_name":"passage"}`,
	})
	type variant struct {
		name, model string
		dim         int
		flags       []string
	}
	variants := []variant{
		{"dynamic", stTiny, 16, []string{"--act", "dynamic", "--alpha", "0"}},
		{"static", stTiny, 16, []string{"--act", "static", "--alpha", "0.5", "--calib", texts}},
		{"cls+max", other, 64, []string{"--act", "static", "--alpha", "0.5", "--calib", texts}},
	}
	if os.Getenv(testmodels.TrainedModelsEnv) != "" {
		// The XLM-R family with its Unigram tokenizer, trained weights.
		xlmr := sentenceFolder(t, testmodels.TrainedDir(t, "sst2-xlmr-mini"), 256)
		prompts := `{"prompts":{"query":"query: ","passage":"passage: "}}`
		if err := os.WriteFile(filepath.Join(xlmr, "config_sentence_transformers.json"), []byte(prompts), 0o644); err != nil {
			t.Fatal(err)
		}
		variants = append(variants, variant{"xlmr", xlmr, 256, []string{"--act", "static", "--alpha", "0.5", "--calib", texts}})
	}
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			flags := tc.flags
			mod := gentest.Module(t)
			args := append([]string{"compile", "--model", tc.model, "--out", gentest.PackageDir(mod), "--package", "m", "--max-batch", "4"}, flags...)
			if code, _, errs := runCLI(t, args...); code != 0 {
				t.Fatalf("sqc compile: exit %d: %s", code, errs)
			}
			var got struct {
				Plain, Query [][]uint32
				Dim          int
			}
			if err := json.Unmarshal(gentest.Run(t, mod, embedMain, texts), &got); err != nil {
				t.Fatal(err)
			}
			if got.Dim != tc.dim {
				t.Errorf("EmbeddingDim %d, want %d", got.Dim, tc.dim)
			}
			for what, rows := range map[string][][]uint32{"Embed": got.Plain, "EmbedWithPrompt": got.Query} {
				run := append([]string{"run", "--int8", "--model", tc.model, "--texts", texts}, flags...)
				if what == "EmbedWithPrompt" {
					run = append(run, "--prompt-name", "query")
				}
				want := runLines[embeddingLine](t, run...)
				if len(rows) != len(want) {
					t.Fatalf("%s: %d embeddings, sqc run printed %d", what, len(rows), len(want))
				}
				for i := range want {
					if len(rows[i]) != len(want[i].Embedding) {
						t.Fatalf("%s text %d: %d values, want %d", what, i, len(rows[i]), len(want[i].Embedding))
					}
					for j, v := range want[i].Embedding {
						if rows[i][j] != math.Float32bits(v) {
							t.Fatalf("%s text %d value %d: package %g, sqc run %g", what, i, j, math.Float32frombits(rows[i][j]), v)
						}
					}
				}
			}
			t.Logf("%d texts: Embed and EmbedWithPrompt bit-identical to sqc run --int8", len(headTexts))
		})
	}
}

// stVariant copies the tiny folder into a temporary directory with files
// replaced.
func stVariant(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(stTiny, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(stTiny, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if s, ok := files[filepath.ToSlash(rel)]; ok {
			data = []byte(s)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeClassifier writes a random 2-layer BERT classifier of the tiny
// folder's vocabulary with labels outputs into a temporary folder.
func writeClassifier(t *testing.T, labels []string, extra map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	vocab, err := os.ReadFile(filepath.Join(stTiny, "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := hf.Config{
		ModelType: hf.ModelBERT, Architecture: hf.ArchBertForSequence, VocabSize: strings.Count(string(vocab), "\n"), HiddenSize: 32, NumLayers: 2,
		NumHeads: 2, IntermediateSize: 64, MaxPositions: 64, TypeVocabSize: 2, HiddenAct: hf.ActGELU, LayerNormEps: 1e-12, Labels: labels,
	}
	if err := tinymodel.WriteBERT(dir, cfg, 5, extra); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"vocab.txt": vocab, "tokenizer_config.json": []byte(`{"do_lower_case": true}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type scoreLine struct {
	Logits []float32 `json:"logits"`
	Score  *float32  `json:"score"`
	Scores []float32 `json:"scores"`
}

// rerankMain prints the bits of m.Rerank(query, docs): the query is the
// first line of a file, the documents the others.
const rerankMain = `package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"

	"sqcgentest/m"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	scores, err := model.Rerank(context.Background(), lines[0], lines[1:])
	if err != nil {
		panic(err)
	}
	var bits []uint32
	for _, s := range scores {
		bits = append(bits, math.Float32bits(s))
	}
	json.NewEncoder(os.Stdout).Encode(bits)
}
`

// TestCrossEncoder runs a single-logit classifier on a pairs .tsv (score =
// sigmoid of the logit), calibrated on pairs, compiles it and checks that Rerank returns, in
// document order, bit for bit the scores `sqc run --int8` prints; `sqc
// eval` reports rerank agreement.
func TestCrossEncoder(t *testing.T) {
	model := writeClassifier(t, []string{"LABEL_0"}, nil)
	query := "a quiet triumph of a film"
	lines := []string{"query\tdocument"}
	for _, d := range headTexts {
		lines = append(lines, query+"\t"+d)
	}
	pairs := writeLines(t, "pairs.tsv", lines)
	// Static activations calibrated on the pairs themselves.
	flags := []string{"--act", "static", "--alpha", "0.5", "--calib", pairs}
	fp := runLines[scoreLine](t, "run", "--fp32", "--model", model, "--texts", pairs)
	q := runLines[scoreLine](t, append([]string{"run", "--int8", "--model", model, "--texts", pairs}, flags...)...)
	for i := range fp {
		if fp[i].Score == nil || len(fp[i].Logits) != 1 {
			t.Fatalf("pair %d: %+v, want one logit and a score", i, fp[i])
		}
		if want := modelrt.ActSigmoid.Apply(fp[i].Logits[0]); *fp[i].Score != want {
			t.Errorf("pair %d: score %g, sigmoid of the logit %g", i, *fp[i].Score, want)
		}
		if math.Abs(float64(*fp[i].Score-*q[i].Score)) > 0.02 {
			t.Errorf("pair %d: FP32 %g, INT8 %g", i, *fp[i].Score, *q[i].Score)
		}
	}
	// Token types: the pair's second text has type 1, so the order of the
	// two texts matters.
	swapped := []string{"sentence1\tsentence2", headTexts[0] + "\t" + query, query + "\t" + headTexts[0]}
	sw := runLines[scoreLine](t, "run", "--fp32", "--model", model, "--texts", writeLines(t, "swapped.tsv", swapped))
	if *sw[0].Score == *sw[1].Score || *sw[1].Score != *fp[0].Score {
		t.Errorf("swapped pair scores %g, %g; unswapped %g", *sw[0].Score, *sw[1].Score, *fp[0].Score)
	}
	code, out, errs := runCLI(t, append([]string{"eval", "--model", model, "--data", pairs, "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("sqc eval: exit %d: %s", code, errs)
	}
	var ev headEvalResult
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "cross-encoder" || ev.RerankQueries != 1 || ev.Inputs != len(headTexts) || ev.SpearmanFP32INT8 == nil {
		t.Errorf("eval: %s", out)
	}

	if testing.Short() {
		return
	}
	mod := gentest.Module(t)
	if code, _, errs := runCLI(t, append([]string{"compile", "--model", model, "--out", gentest.PackageDir(mod), "--package", "m", "--max-batch", "4", "--max-seq", "64"}, flags...)...); code != 0 {
		t.Fatalf("sqc compile: exit %d: %s", code, errs)
	}
	var bits []uint32
	if err := json.Unmarshal(gentest.Run(t, mod, rerankMain, writeLines(t, "rerank.txt", append([]string{query}, headTexts...))), &bits); err != nil {
		t.Fatal(err)
	}
	if len(bits) != len(q) {
		t.Fatalf("%d scores for %d documents", len(bits), len(q))
	}
	for i := range q {
		if bits[i] != math.Float32bits(*q[i].Score) {
			t.Errorf("document %d: Rerank %g, sqc run --int8 %g", i, math.Float32frombits(bits[i]), *q[i].Score)
		}
	}
}

// TestMultiLabelScores: problem_type multi_label_classification scores
// each logit with a sigmoid, and the package gets Scores.
func TestMultiLabelScores(t *testing.T) {
	model := writeClassifier(t, []string{"a", "b", "c"}, map[string]any{"problem_type": "multi_label_classification"})
	texts := writeLines(t, "texts.txt", headTexts)
	rows := runLines[scoreLine](t, "run", "--fp32", "--model", model, "--texts", texts)
	for i, r := range rows {
		if len(r.Scores) != 3 || r.Score != nil {
			t.Fatalf("text %d: %+v", i, r)
		}
		for j, l := range r.Logits {
			if r.Scores[j] != modelrt.ActSigmoid.Apply(l) {
				t.Errorf("text %d label %d: score %g, logit %g", i, j, r.Scores[j], l)
			}
		}
	}
	// A single-label classifier prints logits alone, as before.
	plain := writeClassifier(t, []string{"neg", "pos"}, nil)
	for i, r := range runLines[scoreLine](t, "run", "--fp32", "--model", plain, "--texts", texts) {
		if r.Scores != nil || r.Score != nil || len(r.Logits) != 2 {
			t.Errorf("text %d: %+v", i, r)
		}
	}
	out := filepath.Join(t.TempDir(), "m")
	if code, _, errs := runCLI(t, "compile", "--model", model, "--out", out, "--package", "m", "--max-seq", "64", "--act", "dynamic", "--alpha", "0"); code != 0 {
		t.Fatalf("sqc compile: exit %d: %s", code, errs)
	}
	src, err := os.ReadFile(filepath.Join(out, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "func (m *Model) Scores(ctx context.Context, texts []string) ([][]float32, error)") || strings.Contains(string(src), "Rerank") {
		t.Error("the multi-label package lacks Scores or has Rerank")
	}
}
