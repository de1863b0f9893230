package hf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// paddedBatch is a right-padded batch of dev sentences (by index) and
// whether the reference logits apply (they do not when token types were
// changed).
type paddedBatch struct {
	exs     []testmodels.Example
	indices []int
	hasRef  bool
}

// paddedBatches are batches of sizes 1 to 16, one padded far past its
// longest sentence, and (for BERT) one with segment B token types, so
// masking and token types are both exercised.
func paddedBatches(ref *testmodels.Reference) []paddedBatch {
	span := func(from, to int, edit func(e testmodels.Example) testmodels.Example) paddedBatch {
		b := paddedBatch{hasRef: true}
		for i := from; i < to; i++ {
			e := ref.Examples[i]
			if edit != nil {
				e = edit(e)
			}
			b.exs, b.indices = append(b.exs, e), append(b.indices, i)
		}
		return b
	}
	padTo100 := func(e testmodels.Example) testmodels.Example {
		pad := make([]int64, 100-len(e.InputIDs))
		return testmodels.Example{
			InputIDs:      append(append([]int64(nil), e.InputIDs...), pad...),
			AttentionMask: append(append([]int64(nil), e.AttentionMask...), pad...),
			TokenTypeIDs:  append(append([]int64(nil), e.TokenTypeIDs...), pad...),
		}
	}
	segmentB := func(e testmodels.Example) testmodels.Example {
		types := make([]int64, len(e.InputIDs))
		for j := len(types) / 2; j < len(types); j++ {
			types[j] = 1
		}
		e.TokenTypeIDs = types
		return e
	}
	pairs := span(40, 45, segmentB)
	pairs.hasRef = false
	return []paddedBatch{span(0, 1, nil), span(1, 6, nil), span(6, 22, nil), span(30, 34, padTo100), pairs}
}

// TestSameAsONNXFrontend runs the HF graph and the ONNX export's graph of
// the same model on padded batches: same logits, and padding does not move
// them away from the unpadded reference.
func TestSameAsONNXFrontend(t *testing.T) {
	for _, model := range testmodels.Models {
		t.Run(model, func(t *testing.T) {
			dir := testmodels.ModelDir(t, model)
			ref := loadReference(t, dir)
			hg, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			og, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			sameInterface(t, hg, og)
			hit, err := interp.New(hg)
			if err != nil {
				t.Fatal(err)
			}
			oit, err := interp.New(og)
			if err != nil {
				t.Fatal(err)
			}
			var maxONNX, maxRef float64
			for _, batch := range paddedBatches(ref) {
				hl := rows(run(t, hit, hg, batch.exs, outLogits))
				ol := rows(run(t, oit, og, batch.exs, outLogits))
				maxONNX = max(maxONNX, testmodels.MaxAbsDiff(hl, ol))
				if batch.hasRef {
					for k, i := range batch.indices {
						maxRef = max(maxRef, testmodels.MaxAbsDiff(hl[k:k+1], ref.Logits[i:i+1]))
					}
				}
			}
			t.Logf("%s: padded batches: max |HF - ONNX| = %.3g, max |HF - unpadded reference| = %.3g", model, maxONNX, maxRef)
			if !(maxONNX <= onnxTolerance) {
				t.Errorf("HF and ONNX graphs differ by %.3g > %g", maxONNX, onnxTolerance)
			}
			if !(maxRef <= referenceTolerance) {
				t.Errorf("padded logits differ from the reference by %.3g > %g", maxRef, referenceTolerance)
			}
		})
	}
}

// sameInterface checks graph inputs and outputs match by name, dtype and
// shape (symbolic dims by name).
func sameInterface(t *testing.T, hf, ox *compiler.Graph) {
	t.Helper()
	same := func(what string, a, b []*compiler.Value) {
		if len(a) != len(b) {
			t.Errorf("%s: HF has %d, ONNX %d", what, len(a), len(b))
			return
		}
		for i := range a {
			if a[i].Name != b[i].Name || a[i].DType != b[i].DType || shapeString(a[i].Shape) != shapeString(b[i].Shape) {
				t.Errorf("%s %d: HF %s %s%s, ONNX %s %s%s", what, i, a[i].Name, a[i].DType, shapeString(a[i].Shape),
					b[i].Name, b[i].DType, shapeString(b[i].Shape))
			}
		}
	}
	same("inputs", hf.Inputs, ox.Inputs)
	same("outputs", hf.Outputs, ox.Outputs)
}

// TestBaseModelsMatchClassifiers loads each checkpoint as its base
// architecture and applies the classifier head by hand to the base outputs:
// the result must be the classifier graph's logits, which checks
// last_hidden_state and pooler_output numerically.
func TestBaseModelsMatchClassifiers(t *testing.T) {
	for model, base := range map[string]string{testmodels.BertMini: ArchBertModel, testmodels.DistilBertTiny: ArchDistilBertModel} {
		t.Run(model, func(t *testing.T) {
			dir := testmodels.ModelDir(t, model)
			ref := loadReference(t, dir)
			full, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			bg, err := Load(asArchitecture(t, dir, base))
			if err != nil {
				t.Fatal(err)
			}
			fit, err := interp.New(full)
			if err != nil {
				t.Fatal(err)
			}
			bit, err := interp.New(bg)
			if err != nil {
				t.Fatal(err)
			}
			batch := ref.Examples[100:108]
			want := run(t, fit, full, batch, outLogits)
			in, err := testmodels.Inputs(bg, batch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := bit.Run(in, &interp.Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			hidden := out[outLastHidden]
			seq, h := hidden.Shape[1], hidden.Shape[2]
			w := full.Initializers
			var got []float32
			for b := range int64(len(batch)) {
				cls := hidden.F32[b*seq*h : b*seq*h+h]
				var logits []float32
				if base == ArchBertModel {
					pooled := dense(cls, w["bert.pooler.dense.weight"], w["bert.pooler.dense.bias"], math.Tanh)
					if d := maxAbsDiff(pooled, out[outPooler].F32[b*h:(b+1)*h]); d > onnxTolerance {
						t.Errorf("pooler_output differs from tanh(dense(CLS)) by %.3g", d)
					}
					logits = dense(pooled, w["classifier.weight"], w["classifier.bias"], nil)
				} else {
					pre := dense(cls, w["pre_classifier.weight"], w["pre_classifier.bias"], func(x float64) float64 { return math.Max(x, 0) })
					logits = dense(pre, w["classifier.weight"], w["classifier.bias"], nil)
				}
				got = append(got, logits...)
			}
			if d := maxAbsDiff(got, want.F32); d > onnxTolerance {
				t.Errorf("head applied to %s outputs differs from the classifier's logits by %.3g", base, d)
			}
		})
	}
}

// asArchitecture makes a model folder whose config.json names arch and
// whose model.safetensors links to dir's.
func asArchitecture(t *testing.T, dir, arch string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["architectures"] = []string{arch}
	data, err = json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := writeModel(t, data, nil)
	if err := os.Symlink(filepath.Join(dir, SafetensorsFile), filepath.Join(out, SafetensorsFile)); err != nil {
		t.Fatal(err)
	}
	return out
}

// dense is act(W·x + b) for W stored [out, in], in float64.
func dense(x []float32, w, b *compiler.Tensor, act func(float64) float64) []float32 {
	out, in := int(w.Shape[0]), int(w.Shape[1])
	y := make([]float32, out)
	for o := range out {
		s := float64(b.F32[o])
		for i := range in {
			s += float64(w.F32[o*in+i]) * float64(x[i])
		}
		if act != nil {
			s = act(s)
		}
		y[o] = float32(s)
	}
	return y
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		d := math.Abs(float64(a[i] - b[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}
