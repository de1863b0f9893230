// Package testmodels gives tests access to the shared SST-2 test models
// and their FP32 references (see ../shared/models/README.md, where ../shared
// is relative to the repository root): locating them, skipping cleanly
// where they are absent, reading reference/dev.ids.jsonl, dev.logits.f32
// and dev.json, and building (padded) int64 input batches.
//
// Nothing is copied from ../shared into the repository; tests read it in
// place.
package testmodels

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// Names of the shared models.
const (
	BertMini       = "sst2-bert-mini"       // BERT, 4 x 256, ONNX opset 14
	DistilBertTiny = "sst2-distilbert-tiny" // DistilBERT, 2 x 128, ONNX opset 17
)

// Models lists every shared model.
var Models = []string{BertMini, DistilBertTiny}

// RepoRoot walks up from the working directory (a package directory under
// `go test`) to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testmodels: no go.mod above the working directory")
		}
		dir = parent
	}
}

// SharedDir returns the repository's ../shared directory and whether it
// exists.
func SharedDir() (string, bool) {
	root, err := RepoRoot()
	if err != nil {
		return "", false
	}
	dir := filepath.Join(filepath.Dir(root), "shared")
	st, err := os.Stat(dir)
	return dir, err == nil && st.IsDir()
}

// ModelDir returns the directory of the named shared model, skipping the
// test with a clear message when ../shared or the model is absent.
func ModelDir(t testing.TB, name string) string {
	t.Helper()
	shared, ok := SharedDir()
	if !ok {
		t.Skipf("skipping: shared test models not found at %s (the repository's ../shared)", shared)
	}
	dir := filepath.Join(shared, "models", name)
	if _, err := os.Stat(filepath.Join(dir, "reference", "dev.json")); err != nil {
		t.Skipf("skipping: model %s not found under %s", name, filepath.Join(shared, "models"))
	}
	return dir
}

// Example is one tokenized sentence of dev.ids.jsonl, unpadded, with
// [CLS] and [SEP].
type Example struct {
	InputIDs      []int64 `json:"input_ids"`
	AttentionMask []int64 `json:"attention_mask"`
	TokenTypeIDs  []int64 `json:"token_type_ids"`
}

// Reference is a model's FP32 dev-set reference.
type Reference struct {
	Examples []Example
	// Logits[i] are the classifier logits of Examples[i] from PyTorch FP32.
	Logits   [][]float32
	Labels   []int   // gold labels, from dev.json
	Accuracy float64 // argmax accuracy of Logits against Labels, from dev.json
}

// devInfo is the part of dev.json the tests use.
type devInfo struct {
	N        int     `json:"n"`
	Accuracy float64 `json:"accuracy"`
	Correct  int     `json:"correct"`
	Labels   []int   `json:"labels"`
}

// LoadReference reads reference/dev.ids.jsonl, dev.logits.f32 (raw
// little-endian float32 [n][2]) and dev.json from a model directory and
// checks that they agree in length.
func LoadReference(modelDir string) (*Reference, error) {
	ref := filepath.Join(modelDir, "reference")
	exs, err := ReadIDs(filepath.Join(ref, "dev.ids.jsonl"))
	if err != nil {
		return nil, err
	}
	infoPath := filepath.Join(ref, "dev.json")
	raw, err := os.ReadFile(infoPath)
	if err != nil {
		return nil, err
	}
	var info devInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", infoPath, err)
	}
	if info.N != len(exs) || len(info.Labels) != len(exs) {
		return nil, fmt.Errorf("%s: n %d and %d labels, but %d examples", infoPath, info.N, len(info.Labels), len(exs))
	}
	logits, err := ReadLogits(filepath.Join(ref, "dev.logits.f32"), len(exs), 2)
	if err != nil {
		return nil, err
	}
	return &Reference{Examples: exs, Logits: logits, Labels: info.Labels, Accuracy: info.Accuracy}, nil
}

// ReadIDs reads a .jsonl file of Examples, one per line.
func ReadIDs(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var exs []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Example
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		n := len(e.InputIDs)
		if n == 0 || len(e.AttentionMask) != n || (e.TokenTypeIDs != nil && len(e.TokenTypeIDs) != n) {
			return nil, fmt.Errorf("%s:%d: %d input_ids, %d attention_mask, %d token_type_ids", path, line, n, len(e.AttentionMask), len(e.TokenTypeIDs))
		}
		if e.TokenTypeIDs == nil {
			e.TokenTypeIDs = make([]int64, n)
		}
		exs = append(exs, e)
	}
	return exs, sc.Err()
}

// ReadLogits reads n rows of classes little-endian float32 values.
func ReadLogits(path string, n, classes int) ([][]float32, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) != n*classes*4 {
		return nil, fmt.Errorf("%s: %d bytes, want %d x %d float32", path, len(raw), n, classes)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, classes)
		for j := range out[i] {
			out[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[(i*classes+j)*4:]))
		}
	}
	return out, nil
}

// Inputs builds the int64 [len(exs), maxLen] tensors a model's graph
// inputs ask for ("input_ids", "attention_mask", "token_type_ids"),
// right-padding shorter examples with id 0, mask 0 and type 0. Any other
// input name is an error.
func Inputs(g *compiler.Graph, exs []Example) (map[string]*compiler.Tensor, error) {
	seq := 0
	for _, e := range exs {
		seq = max(seq, len(e.InputIDs))
	}
	out := map[string]*compiler.Tensor{}
	for _, v := range g.Inputs {
		t := compiler.NewTensor(compiler.Int64, int64(len(exs)), int64(seq))
		for i, e := range exs {
			var src []int64
			switch v.Name {
			case "input_ids":
				src = e.InputIDs
			case "attention_mask":
				src = e.AttentionMask
			case "token_type_ids":
				src = e.TokenTypeIDs
			default:
				return nil, fmt.Errorf("testmodels: graph input %q is not input_ids, attention_mask or token_type_ids", v.Name)
			}
			copy(t.I64[i*seq:], src)
		}
		out[v.Name] = t
	}
	return out, nil
}

// Argmax is the index of the largest value (the first on ties).
func Argmax(row []float32) int {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}

// Accuracy is the fraction of rows whose argmax equals the label.
func Accuracy(logits [][]float32, labels []int) float64 {
	if len(logits) == 0 {
		return 0
	}
	correct := 0
	for i, row := range logits {
		if Argmax(row) == labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(logits))
}

// MaxAbsDiff is the largest |a[i][j] - b[i][j]| over rows of equal shape.
func MaxAbsDiff(a, b [][]float32) float64 {
	var m float64
	for i := range a {
		for j := range a[i] {
			m = max(m, math.Abs(float64(a[i][j])-float64(b[i][j])))
		}
	}
	return m
}
