package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/servebench"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// BenchmarkServeBatching is internal/servebench's batching benchmark on
// `sqc serve`'s in-process INT8 engine (loadEngineModel, the adapter the
// command uses), side by side for two models: the 2-layer demo model,
// whose compute per sentence is so small that HTTP dominates, and
// ../shared's sst2-bert-mini (4 layers, hidden 256), where it is
// realistic. Compare the medians of concurrent64 and direct:
//
//	go test -run '^$' -bench ServeBatching -count 5 ./cmd/sqc
func BenchmarkServeBatching(b *testing.B) {
	texts := benchSentences(b)
	bodies := make([][]byte, len(texts))
	for i, t := range texts {
		bodies[i], _ = json.Marshal(map[string]string{"inputs": t})
	}
	run := func(b *testing.B, model, calib string) {
		cfg := &int8Config{calibPath: calib, calibSamples: 64, quant: passes.QuantOptions{Alpha: 0.5, Act: compiler.QLinearStatic}}
		m, err := loadEngineModel(model, "", cfg, 0, defaultMaxBatch, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		servebench.Batching(b, m, "/predict", bodies)
	}
	b.Run("model=demo", func(b *testing.B) {
		model, calib := demoDir(b)
		run(b, model, calib)
	})
	b.Run("model=sst2-bert-mini", func(b *testing.B) {
		shared, ok := testmodels.SharedDir()
		if !ok {
			b.Skip("no ../shared: sst2-bert-mini is not here")
		}
		run(b, filepath.Join(shared, "models", "sst2-bert-mini"), filepath.Join(shared, "data", "glue-sst2", "train.tsv"))
	})
}

// benchSentences are 256 SST-2 dev sentences (mixed lengths), or the demo
// model's calibration sentences without ../shared.
func benchSentences(b *testing.B) []string {
	if shared, ok := testmodels.SharedDir(); ok {
		exs, err := dataio.ReadTexts(filepath.Join(shared, "data", "glue-sst2", "dev.tsv"))
		if err == nil && len(exs) > 0 {
			var out []string
			for _, ex := range exs[:min(256, len(exs))] {
				out = append(out, ex.Text)
			}
			return out
		}
	}
	return strings.Split(strings.TrimSpace(demomodel.Calibration), "\n")
}
