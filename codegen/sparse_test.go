package codegen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	sqcexec "github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/gentest"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// sparseEncoderMain runs the generated package m's EmbedSparse on the
// texts of texts.json, and SparseVectors on the batch its Tokenizer
// encodes them into, with their masks and without, and prints the three
// as JSON (float32 values round-trip exactly).
const sparseEncoderMain = `package main

import (
	"context"
	"encoding/json"
	"os"

	"sqcgentest/m"
)

func main() {
	var texts []string
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &texts); err != nil {
		panic(err)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	sparse, err := model.EmbedSparse(ctx, texts)
	if err != nil {
		panic(err)
	}
	var b m.Batch
	for _, t := range texts {
		e := model.Tokenizer().Encode(t)
		b.InputIDs = append(b.InputIDs, e.InputIDs)
		b.AttentionMask = append(b.AttentionMask, e.AttentionMask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, e.TokenTypeIDs)
	}
	dense, err := model.SparseVectors(ctx, b)
	if err != nil {
		panic(err)
	}
	b.AttentionMask = nil
	unmasked, err := model.SparseVectors(ctx, b)
	if err != nil {
		panic(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"sparse": sparse, "dense": dense, "unmasked": unmasked})
}
`

// TestSparseEncoderPackages generates the packages of the tiny masked
// language models (BERT, XLM-R, DistilBERT and ModernBERT, from their
// folders, dynamic INT8; a small WordPiece vocab.txt, or for XLM-R a
// SentencePiece-style Unigram tokenizer.json, whose ids fit their
// vocabularies): each gets EmbedSparse and SparseVectors (not Embed) at
// runtime version 6, and on texts batched together, chunked and run
// padding-free, one of them truncated to MaxSequence, its vectors are
// modelrt.SparseHead{}.Pool of compiler/exec's logits for each text
// alone and its embeddings their modelrt.Sparsify, bit for bit.
func TestSparseEncoderPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated packages")
	}
	for _, c := range []struct {
		name string
		tok  func(t *testing.T) *tokenizer.Source
		head modelrt.SparseHead // a SparseEncoder folder's SpladePooling; zero: SPLADE's
	}{
		{testmodels.TinyBertMLM, tinyWordPiece, modelrt.SparseHead{}},
		{testmodels.TinyXLMRMLM, tinyUnigram, modelrt.SparseHead{}},
		{testmodels.TinyDistilBertMLM, tinyWordPiece, modelrt.SparseHead{Pooling: modelrt.SparseSum, Activation: modelrt.SparseLog1pReLU}},
		{testmodels.TinyModernBertMLM, tinyWordPiece, modelrt.SparseHead{}},
	} {
		t.Run(c.name, func(t *testing.T) { testSparseEncoder(t, c.name, c.tok(t), c.head) })
	}
}

// testSparseEncoder compiles the tiny masked LM name with the tokenizer
// src (and head, where it is not SPLADE's default) and compares its
// package's EmbedSparse and SparseVectors with the engine's logits pooled
// by head.
func testSparseEncoder(t *testing.T, name string, src *tokenizer.Source, head modelrt.SparseHead) {
	g, err := frontend.Load(testmodels.TinyDir(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if !compiler.IsMaskedLM(g) {
		t.Fatalf("%s is not a masked LM (compiler.IsMaskedLM)", name)
	}
	vocab := int(g.Outputs[0].Shape[2].Size)
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := passes.Run(g, passes.QuantPipeline(nil, passes.QuantOptions{Act: compiler.QLinearDynamic}), passes.Options{CheckIR: true}); err != nil {
		t.Fatal(err)
	}
	prog, err := sqcexec.Compile(g, sqcexec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if r := prog.PackingReason(); r != "" {
		t.Fatalf("schedule runs batches padded (%s): the packed path should be the one compared", r)
	}
	opts := Options{Package: "m", ModelName: name, MaxBatch: 2, MaxSeq: 24, Tokenizer: src}
	opts.Head.Sparse = &head
	headVar := "var sparseHead = modelrt.SparseHead{}"
	if head != (modelrt.SparseHead{}) {
		headVar = fmt.Sprintf("var sparseHead = modelrt.SparseHead{\n\tActivation: %q,\n\tPooling:    %q,\n}", head.Activation, head.Pooling)
	}
	pkg, err := Generate(prog.Schedule, opts)
	if err != nil {
		t.Fatal(err)
	}
	model := string(pkg.Files["model.go"])
	for _, want := range []string{
		"func (m *Model) EmbedSparse(ctx context.Context, texts []string) ([][]SparseValue, error)",
		"func (m *Model) SparseVectors(ctx context.Context, b Batch) ([][]float32, error)",
		"type SparseValue = modelrt.SparseValue", headVar,
		"const _ = modelrt.SupportVersion6",
	} {
		if !strings.Contains(model, want) {
			t.Errorf("model.go lacks %q", want)
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`\bVocabSize += %d\n`, vocab)).MatchString(model) {
		t.Errorf("model.go lacks VocabSize = %d", vocab)
	}
	for _, not := range []string{"func (m *Model) Embed(", "func (m *Model) Classify(", "func (m *Model) TagTokens(", "NumLabels"} {
		if strings.Contains(model, not) {
			t.Errorf("a masked language model got %q", not)
		}
	}
	// Not said to be a sparse encoder (Head.Sparse nil), it is generated
	// as any model of per-token outputs: no sparse methods.
	unsaid := opts
	unsaid.Head.Sparse = nil
	dense, err := Generate(prog.Schedule, unsaid)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dense.Files["model.go"]), "EmbedSparse") {
		t.Error("a package without Head.Sparse got EmbedSparse")
	}
	// Without a tokenizer (and so without the sparse head, which needs
	// one, as an embedding head does) there is no text API: Run alone,
	// version 2.
	bare := opts
	bare.Tokenizer, bare.Head.Sparse = nil, nil
	if _, err := Generate(prog.Schedule, Options{Package: "m", ModelName: name, MaxBatch: 2, MaxSeq: 24, Head: Head{Sparse: &head}}); err == nil {
		t.Error("a sparse head without a tokenizer was accepted")
	}
	plain, err := Generate(prog.Schedule, bare)
	if err != nil {
		t.Fatal(err)
	}
	if m := string(plain.Files["model.go"]); strings.Contains(m, "Sparse") || !strings.Contains(m, fmt.Sprintf("modelrt.SupportVersion%d\n", RuntimeVersion)) {
		t.Error("a masked language model's package without a tokenizer got sparse methods or another runtime version")
	}

	tok, err := tokenizer.FromSource(src)
	if err != nil {
		t.Fatal(err)
	}
	long := "The old bridge over the river in Zürich was painted light blue in 1998, and the music of a small train " +
		"station in Berlin was written by a composer from Vienna who later moved to Lisbon."
	if n := tok.Encode(long).Len(); n <= opts.MaxSeq {
		t.Fatalf("%d tokens in the long text: it should need truncating to %d", n, opts.MaxSeq)
	}
	if tok, err = tok.WithMaxLength(min(opts.MaxSeq, tok.MaxLength())); err != nil {
		t.Fatal(err)
	}
	texts := []string{"The river north of the city.", long, "", "Paris?", "music, water and light"}
	var wantDense [][]float32
	var wantSparse [][]modelrt.SparseValue
	for _, text := range texts {
		e := tok.Encode(text)
		res, err := infer.Run(context.Background(), g, infer.ExecutorFunc(prog.Run), []infer.Encoded{{IDs: e.InputIDs, Mask: e.AttentionMask, TypeIDs: e.TokenTypeIDs}}, infer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := head.Pool(res[0]["logits"].F32, vocab, e.AttentionMask)
		wantDense, wantSparse = append(wantDense, v), append(wantSparse, modelrt.Sparsify(v))
	}

	mod := gentest.Module(t)
	if err := Write(gentest.PackageDir(mod), pkg); err != nil {
		t.Fatal(err)
	}
	tx, _ := json.Marshal(texts)
	if err := os.WriteFile(filepath.Join(mod, "texts.json"), tx, 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Sparse          [][]modelrt.SparseValue
		Dense, Unmasked [][]float32
	}
	if err := json.Unmarshal(gentest.Run(t, mod, sparseEncoderMain, "texts.json"), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sparse) != len(texts) || len(got.Dense) != len(texts) || len(got.Unmasked) != len(texts) {
		t.Fatalf("%d, %d and %d answers for %d texts", len(got.Sparse), len(got.Dense), len(got.Unmasked), len(texts))
	}
	entries := 0
	for i, text := range texts {
		if !equalBits(got.Dense[i], wantDense[i]) {
			t.Errorf("SparseVectors(%q) differs from exec's logits pooled", text)
		}
		if !equalBits(got.Unmasked[i], wantDense[i]) {
			t.Errorf("SparseVectors(%q) without a mask differs from exec's logits pooled", text)
		}
		if !reflect.DeepEqual(got.Sparse[i], wantSparse[i]) || !equalBits(sparseValues(got.Sparse[i]), sparseValues(wantSparse[i])) {
			t.Errorf("EmbedSparse(%q):\n got %v\nwant %v", text, got.Sparse[i], wantSparse[i])
		}
		entries += len(wantSparse[i])
	}
	t.Logf("%d texts: %d non-zero entries of %d, as exec's logits give them", len(texts), entries, len(texts)*vocab)
}

// equalBits reports whether a and b hold the same float32 bits.
func equalBits(a, b []float32) bool {
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

// sparseValues returns the values of s.
func sparseValues(s []modelrt.SparseValue) []float32 {
	out := make([]float32, len(s))
	for i, x := range s {
		out[i] = x.Value
	}
	return out
}

// tinyWordPiece is an uncased BERT vocab.txt of 120 tokens (the tiny
// BERT and DistilBERT masked LMs' vocabulary size): the special tokens,
// punctuation, digits, letters alone and continuing a word, a few words
// and suffixes; a word it lacks is spelled in letters.
func tinyWordPiece(t *testing.T) *tokenizer.Source {
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "'", "-"}
	for c := '0'; c <= '9'; c++ {
		vocab = append(vocab, string(c))
	}
	for c := 'a'; c <= 'z'; c++ {
		vocab = append(vocab, string(c), "##"+string(c))
	}
	vocab = append(vocab, strings.Fields(`the of and in to is was it for on with as by at from film city river old new
		water light music train house small bridge north south east west paris zurich berlin lisbon vienna
		##s ##ing ##ed ##er ##ly ##ion ##al ##es ##en ##an ##on`)...)
	if len(vocab) != 120 {
		t.Fatalf("%d tokens, want 120", len(vocab))
	}
	return &tokenizer.Source{Kind: tokenizer.SourceVocab, Name: "vocab.txt", Data: []byte(strings.Join(vocab, "\n") + "\n"), Options: tokenizer.Options{Lowercase: true}}
}

// tinyUnigram is an XLM-R-style tokenizer.json of at most 200 pieces (the
// tiny XLM-R masked LM's vocabulary size): XLM-R's special tokens at
// their ids (<s> 0, <pad> 1, </s> 2, <unk> 3), a cased Unigram model over
// letters, digits, punctuation, "▁"-prefixed words and suffixes,
// Metaspace pre-tokenization and RobertaProcessing's <s> A </s>.
func tinyUnigram(t *testing.T) *tokenizer.Source {
	type piece struct {
		text  string
		score float64
	}
	pieces := []piece{{"<s>", 0}, {"<pad>", 0}, {"</s>", 0}, {"<unk>", 0}, {"▁", -3}}
	for c := 'a'; c <= 'z'; c++ {
		pieces = append(pieces, piece{string(c), -4 - float64(c-'a')/100})
	}
	for c := 'A'; c <= 'Z'; c++ {
		pieces = append(pieces, piece{string(c), -5 - float64(c-'A')/100})
	}
	for i, c := range "0123456789.,!?'-" {
		pieces = append(pieces, piece{string(c), -4.5 - float64(i)/100})
	}
	for i, w := range strings.Fields(`the of and in to is was it for on with as by at from a film city river old new
		water light music train house small bridge north south east west The Paris Zürich Berlin Lisbon Vienna`) {
		pieces = append(pieces, piece{"▁" + w, -1 - float64(i)/100})
	}
	for i, s := range strings.Fields("s ing ed er ly ion al es en an on ter st") {
		pieces = append(pieces, piece{s, -2.5 - float64(i)/100})
	}
	pieces = append(pieces, piece{"<mask>", 0})
	if len(pieces) > 200 {
		t.Fatalf("%d pieces, want at most 200", len(pieces))
	}
	var vocab [][2]any
	for _, p := range pieces {
		vocab = append(vocab, [2]any{p.text, p.score})
	}
	var added []map[string]any
	for _, id := range []int{0, 1, 2, 3, len(pieces) - 1} {
		added = append(added, map[string]any{"id": id, "content": pieces[id].text, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	data, err := json.Marshal(map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer":  map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"post_processor": map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}, "trim_offsets": true, "add_prefix_space": true},
		"decoder":        nil,
		"model":          map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &tokenizer.Source{Kind: tokenizer.SourceTokenizerJSON, Name: "tokenizer.json", Data: data}
}
