package sentence_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	. "github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// referenceFile is what testdata/reference.py (torch, written after
// transformers' BertModel and sentence-transformers' Pooling) computes on
// the tiny folder.
const referenceFile = "testdata/st-bert-tiny.reference.json"

type reference struct {
	InputIDs     [][]int64              `json:"input_ids"`
	TokenTypeIDs [][]int64              `json:"token_type_ids"`
	Pooling      map[string][][]float64 `json:"pooling"`
	Embedding    [][]float64            `json:"embedding"`
}

func readReference(t *testing.T, data []byte) reference {
	t.Helper()
	var ref reference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestPoolingMatchesTorch runs the tiny folder's encoder in the FP32
// interpreter and every pooling mode, and the folder's own head, on the
// reference's token ids: within 1e-4 (max abs) of torch.
func TestPoolingMatchesTorch(t *testing.T) {
	data, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	ref := readReference(t, data)
	g, err := frontend.Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	var enc []infer.Encoded
	for i, ids := range ref.InputIDs {
		mask := make([]int64, len(ids))
		for j := range mask {
			mask[j] = 1
		}
		enc = append(enc, infer.Encoded{IDs: ids, Mask: mask, TypeIDs: ref.TokenTypeIDs[i]})
	}
	res, err := infer.Run(context.Background(), g, infer.Interpreter(it.Run), enc, infer.Options{BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, h *modelrt.EmbeddingHead, want [][]float64) {
		t.Helper()
		if len(want) != len(enc) {
			t.Fatalf("%s: %d reference rows for %d inputs", what, len(want), len(enc))
		}
		worst := 0.0
		for i, e := range enc {
			got := h.Embed(res[i]["last_hidden_state"].F32, 32, e.Mask)
			if len(got) != len(want[i]) {
				t.Fatalf("%s input %d: %d values, torch %d", what, i, len(got), len(want[i]))
			}
			for j, v := range got {
				worst = math.Max(worst, math.Abs(float64(v)-want[i][j]))
			}
		}
		if worst > 1e-4 {
			t.Errorf("%s: max abs difference from torch %.3g", what, worst)
		}
		t.Logf("%-14s max abs difference from torch %.2g", what, worst)
	}
	for _, mode := range modelrt.PoolingOrder {
		want, ok := ref.Pooling[string(mode)]
		if !ok {
			t.Fatalf("the reference lacks %s pooling", mode)
		}
		check(string(mode), &modelrt.EmbeddingHead{Pooling: []modelrt.PoolingMode{mode}}, want)
	}
	check("folder's head", &m.Head, ref.Embedding)
}

// TestReferenceScriptReproduces reruns testdata/reference.py where torch
// is installed (Debian's python3-torch) and compares with the checked-in
// output.
func TestReferenceScriptReproduces(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		t.Skipf("no torch for %s (apt-get install python3-torch): %v", py, err)
	}
	out, err := exec.Command(py, filepath.Join("testdata", "reference.py")).Output()
	if err != nil {
		t.Fatalf("reference.py: %v", err)
	}
	data, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	got, want := readReference(t, out), readReference(t, data)
	for mode, rows := range want.Pooling {
		for i := range rows {
			for j := range rows[i] {
				if d := math.Abs(got.Pooling[mode][i][j] - rows[i][j]); d > 1e-6 {
					t.Fatalf("%s input %d value %d: rerun %g, checked in %g (regenerate %s)", mode, i, j, got.Pooling[mode][i][j], rows[i][j], referenceFile)
				}
			}
		}
	}
}
