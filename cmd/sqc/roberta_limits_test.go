package main

import (
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// TestRobertaPositionLimits: RoBERTa-family models embed
// max_position_embeddings - padding_idx - 1 tokens (real tokens start at
// padding_idx + 1), which the up-front input check must know from both
// frontends' graphs, as loaded and canonical (sqc.Embeddings with
// padding_idx); BERT's limit stays the table's rows.
func TestRobertaPositionLimits(t *testing.T) {
	for name, want := range map[string]int64{
		testmodels.TinyRobertaCls: 64, // 66 rows, padding_idx 1
		testmodels.TinyXLMRBase:   64,
		testmodels.TinyBertCls:    64, // 64 rows from 0
	} {
		dir := testmodels.TinyDir(t, name)
		for _, path := range []string{dir, filepath.Join(dir, "model.onnx")} {
			g, err := frontend.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := modelLimits(g).positions.rows; got != want {
				t.Errorf("%s: %d positions, want %d", path, got, want)
			}
			if err := passes.RunPipeline(g, passes.Options{}); err != nil {
				t.Fatal(err)
			}
			if got := modelLimits(g).positions.rows; got != want {
				t.Errorf("%s canonical: %d positions, want %d", path, got, want)
			}
		}
	}
}
