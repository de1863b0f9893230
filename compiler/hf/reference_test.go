package hf

import (
	"math"
	"sort"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// Tolerances. The reference logits come from PyTorch eager FP32; another
// FP32 implementation agrees to ~1e-6 (models/README.md), so 1e-4 leaves
// room for summation order without hiding a wrong formula (a missing
// 1/√d or mask moves logits by far more). Two sqc graphs of the same model
// run by the same interpreter should agree to float rounding.
const (
	referenceTolerance = 1e-4
	onnxTolerance      = 1e-5
)

func loadReference(t *testing.T, dir string) *testmodels.Reference {
	t.Helper()
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// run executes one batch and returns the named output as rows.
func run(t *testing.T, it *interp.Interpreter, g *compiler.Graph, exs []testmodels.Example, output string) *compiler.Tensor {
	t.Helper()
	in, err := testmodels.Inputs(g, exs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := it.Run(in, &interp.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	o := out[output]
	if o == nil {
		t.Fatalf("no output %q", output)
	}
	return o
}

// rows splits a [batch, n] tensor into rows.
func rows(t *compiler.Tensor) [][]float32 {
	n := int(t.Shape[len(t.Shape)-1])
	out := make([][]float32, len(t.F32)/n)
	for i := range out {
		out[i] = t.F32[i*n : (i+1)*n]
	}
	return out
}

// TestDevSetMatchesReference is the acceptance test: the graph built from
// config.json + model.safetensors reproduces PyTorch's logits on all 872
// SST-2 dev sentences, and so its accuracy. Sentences run unpadded, as the
// reference did: those of equal length share a batch. With -short, every
// eighth sentence.
func TestDevSetMatchesReference(t *testing.T) {
	for _, model := range testmodels.Models {
		t.Run(model, func(t *testing.T) {
			dir := testmodels.ModelDir(t, model)
			ref := loadReference(t, dir)
			g, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			if testing.Short() {
				ref = everyNth(ref, 8)
			}
			byLen := map[int][]int{}
			for i, ex := range ref.Examples {
				byLen[len(ex.InputIDs)] = append(byLen[len(ex.InputIDs)], i)
			}
			lengths := make([]int, 0, len(byLen))
			for l := range byLen {
				lengths = append(lengths, l)
			}
			sort.Ints(lengths)

			logits := make([][]float32, len(ref.Examples))
			for _, l := range lengths {
				idx := byLen[l]
				exs := make([]testmodels.Example, len(idx))
				for k, i := range idx {
					exs[k] = ref.Examples[i]
				}
				for k, row := range rows(run(t, it, g, exs, outLogits)) {
					logits[idx[k]] = row
				}
			}
			maxDiff := testmodels.MaxAbsDiff(logits, ref.Logits)
			worst := 0
			for i := range logits {
				if testmodels.MaxAbsDiff(logits[i:i+1], ref.Logits[i:i+1]) == maxDiff {
					worst = i
				}
			}
			acc := testmodels.Accuracy(logits, ref.Labels)
			t.Logf("%s: max |logit - reference| = %.3g (sentence %d) over %d sentences; accuracy %.4f (reference %.4f)",
				model, maxDiff, worst, len(logits), acc, ref.Accuracy)
			if !(maxDiff <= referenceTolerance) {
				t.Errorf("max logit difference %.3g at sentence %d exceeds %g", maxDiff, worst, referenceTolerance)
			}
			if math.Abs(acc-ref.Accuracy) > 1e-9 {
				t.Errorf("accuracy %.6f, reference %.6f", acc, ref.Accuracy)
			}
		})
	}
}

// everyNth keeps every nth sentence of a reference and the accuracy those
// reference logits give.
func everyNth(ref *testmodels.Reference, n int) *testmodels.Reference {
	sub := &testmodels.Reference{}
	for i := 0; i < len(ref.Examples); i += n {
		sub.Examples = append(sub.Examples, ref.Examples[i])
		sub.Logits = append(sub.Logits, ref.Logits[i])
		sub.Labels = append(sub.Labels, ref.Labels[i])
	}
	sub.Accuracy = testmodels.Accuracy(sub.Logits, sub.Labels)
	return sub
}
