package interp_test

import (
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// loadModel loads a shared model's ONNX graph, its interpreter and its
// reference, skipping when ../shared is absent.
func loadModel(t testing.TB, name string) (*compiler.Graph, *interp.Interpreter, *testmodels.Reference) {
	t.Helper()
	dir := testmodels.ModelDir(t, name)
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	return g, it, ref
}

// TestDevSetLogits runs every SST-2 dev sentence alone (batch 1, as the
// reference was made) through each shared model and compares the logits
// with PyTorch FP32 (max |diff| <= 1e-4) and the argmax accuracy with
// dev.json. Sentences run concurrently, one goroutine per CPU with
// Threads 1, which also exercises concurrent Run on one Interpreter. With
// -short only every 8th sentence runs and accuracy is not compared.
func TestDevSetLogits(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			g, it, ref := loadModel(t, name)
			step := 1
			if testing.Short() {
				step = 8
			}
			var idx []int
			for i := 0; i < len(ref.Examples); i += step {
				idx = append(idx, i)
			}
			got := make([][]float32, len(ref.Examples))
			errs := make([]error, len(ref.Examples))
			start := time.Now()
			var wg sync.WaitGroup
			work := make(chan int)
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for i := range work {
						in, err := testmodels.Inputs(g, ref.Examples[i:i+1])
						if err != nil {
							errs[i] = err
							continue
						}
						out, err := it.Run(in, &interp.Options{Threads: 1})
						if err != nil {
							errs[i] = err
							continue
						}
						got[i] = out["logits"].F32
					}
				})
			}
			for _, i := range idx {
				work <- i
			}
			close(work)
			wg.Wait()
			elapsed := time.Since(start)

			var maxDiff float64
			worst := -1
			var gotRows, refRows [][]float32
			var labels []int
			for _, i := range idx {
				if errs[i] != nil {
					t.Fatalf("sentence %d: %v", i, errs[i])
				}
				if len(got[i]) != 2 {
					t.Fatalf("sentence %d: logits %v, want 2 values", i, got[i])
				}
				for j := range 2 {
					if d := math.Abs(float64(got[i][j]) - float64(ref.Logits[i][j])); d > maxDiff || math.IsNaN(d) {
						maxDiff, worst = d, i
					}
				}
				gotRows, refRows = append(gotRows, got[i]), append(refRows, ref.Logits[i])
				labels = append(labels, ref.Labels[i])
			}
			acc := testmodels.Accuracy(gotRows, labels)
			t.Logf("%d sentences in %v (%.1f ms each, %d goroutines): max |logit diff| %.3g (sentence %d), accuracy %.4f (reference %.4f)",
				len(idx), elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/1e3/float64(len(idx)),
				runtime.GOMAXPROCS(0), maxDiff, worst, acc, testmodels.Accuracy(refRows, labels))
			if !(maxDiff <= 1e-4) {
				t.Errorf("max |logit diff| %.3g at sentence %d (got %v, reference %v), want <= 1e-4", maxDiff, worst, got[worst], ref.Logits[worst])
			}
			if !testing.Short() && acc != ref.Accuracy {
				t.Errorf("accuracy %.6f, dev.json says %.6f", acc, ref.Accuracy)
			}
		})
	}
}

// TestPaddedBatch checks that right padding (attention_mask 0) does not
// change a sentence's logits: a batch of sentences of different lengths,
// run together with the default thread count, matches each run alone to
// 1e-5.
func TestPaddedBatch(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			g, it, ref := loadModel(t, name)
			// Sentences 0..11 range from 8 to 30-odd tokens; add the
			// longest dev sentence so most rows carry heavy padding.
			exs := append([]testmodels.Example(nil), ref.Examples[:12]...)
			longest := 0
			for i, e := range ref.Examples {
				if len(e.InputIDs) > len(ref.Examples[longest].InputIDs) {
					longest = i
				}
			}
			exs = append(exs, ref.Examples[longest])
			in, err := testmodels.Inputs(g, exs)
			if err != nil {
				t.Fatal(err)
			}
			out, err := it.Run(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			batch := out["logits"]
			if len(batch.Shape) != 2 || batch.Shape[0] != int64(len(exs)) || batch.Shape[1] != 2 {
				t.Fatalf("batch logits shape %v, want [%d 2]", batch.Shape, len(exs))
			}
			var maxDiff float64
			for i := range exs {
				in, _ := testmodels.Inputs(g, exs[i:i+1])
				alone, err := it.Run(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for j := range 2 {
					d := math.Abs(float64(batch.F32[i*2+j]) - float64(alone["logits"].F32[j]))
					if !(d <= 1e-5) {
						t.Errorf("row %d (%d tokens, padded to %d): batch %v, alone %v", i, len(exs[i].InputIDs), in["input_ids"].Shape[1], batch.F32[i*2:i*2+2], alone["logits"].F32)
					}
					maxDiff = max(maxDiff, d)
				}
			}
			t.Logf("%d sentences padded to %d tokens: max |batch - alone| %.3g", len(exs), len(ref.Examples[longest].InputIDs), maxDiff)
		})
	}
}

// BenchmarkSentence times one dev sentence (sentence 0, 12 tokens) per
// iteration through each model with the default thread count.
func BenchmarkSentence(b *testing.B) {
	for _, name := range testmodels.Models {
		b.Run(name, func(b *testing.B) {
			g, it, ref := loadModel(b, name)
			in, err := testmodels.Inputs(g, ref.Examples[:1])
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := it.Run(in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
