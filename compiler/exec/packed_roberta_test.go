package exec

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
)

// RoBERTa and XLM-R run packed too: their position ids (padding_idx + the
// count of non-padding ids so far, padding ids at padding_idx) are fused
// into sqc.Embeddings, and a sequence's depend on its own ids only. So do
// MPNet's, whose relative position bias passes.MarkPositionOnlyBias proves
// to be a function of the positions: each sequence reads its corner of
// the bias computed at the batch's padded length. And so do ModernBERT's,
// whose rotary tables and sliding windows (a bias beside the padding mask)
// are proved position-only too: each sequence reads the tables' first
// rows and the window's corner; the classifier's mean pooling sums each
// sequence's real tokens (sqc.MaskedSum).

// padIDExamples are modelBatch sequences for a RoBERTa-style model (<s> =
// 0, </s> = 2, padding id pad) of lengths 1 to seq, two with pad ids
// among their real tokens (which then take position pad, as in
// transformers).
func padIDExamples(pad int64, vocab int) []testmodels.Example {
	lengths := []int{9, 3, 16, 12, 1, 7, 14, 5, 2, 11, 16, 4, 8, 13, 6, 10}
	exs := make([]testmodels.Example, len(lengths))
	for i, l := range lengths {
		ids, mask := make([]int64, l), make([]int64, l)
		for s := range ids {
			ids[s], mask[s] = int64((i*31+s*17)%(vocab-3)+3), 1
		}
		ids[0] = 0
		if l > 1 {
			ids[l-1] = 2
		}
		exs[i] = testmodels.Example{InputIDs: ids, AttentionMask: mask}
	}
	exs[0].InputIDs[3], exs[0].InputIDs[4] = pad, pad
	exs[6].InputIDs[1] = pad
	return exs
}

// padWith is exs as a right-padded batch (testmodels.Inputs) with its
// padding ids set to id.
func padWith(t *testing.T, g *compiler.Graph, exs []testmodels.Example, id int64) map[string]*compiler.Tensor {
	t.Helper()
	in, err := testmodels.Inputs(g, exs)
	if err != nil {
		t.Fatal(err)
	}
	seq := int(in["input_ids"].Shape[1])
	for b, e := range exs {
		for s := len(e.InputIDs); s < seq; s++ {
			in["input_ids"].I64[b*seq+s] = id
		}
	}
	return in
}

// sameRealTokens fails unless every output of got (a packed run of exs)
// equals want's (the padded run, or with alone set the run of sequence
// b alone) on the real tokens of each sequence, bit for bit; per-token
// outputs of a packed run must be zero on padding rows.
func sameRealTokens(t *testing.T, what string, exs []testmodels.Example, got, want map[string]*compiler.Tensor, alone int) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if g == nil || len(g.Shape) != len(w.Shape) {
			t.Fatalf("%s: output %s is %v, want %v", what, name, g, w)
		}
		for b, e := range exs {
			wb := b
			if alone >= 0 {
				if b != alone {
					continue
				}
				wb = 0
			}
			width, gStride, wStride := int(g.Shape[len(g.Shape)-1]), int(g.Shape[len(g.Shape)-1]), int(w.Shape[len(w.Shape)-1])
			n := 1 // rows of sequence b: one, or its real tokens
			if len(g.Shape) == 3 {
				n = len(e.InputIDs)
				gStride, wStride = int(g.Shape[1])*width, int(w.Shape[1])*width
			}
			gr, wr := g.F32[b*gStride:][:n*width], w.F32[wb*wStride:][:n*width]
			for i := range wr {
				if math.Float32bits(gr[i]) != math.Float32bits(wr[i]) {
					t.Fatalf("%s: sequence %d (%d tokens) %s[%d] = %g, want %g", what, b, len(e.InputIDs), name, i, gr[i], wr[i])
				}
			}
			if alone < 0 && len(g.Shape) == 3 {
				for i, x := range g.F32[b*gStride+n*width:][:gStride-n*width] {
					if x != 0 {
						t.Fatalf("sequence %d %s: padding value %d is %g, want 0", b, name, i, x)
					}
				}
			}
		}
	}
}

// TestPackedRoBERTaMatchesAlone: the RoBERTa, XLM-R, MPNet, ModernBERT, JinaBERT, GTE and NomicBERT tiny models, from
// the HF folder and the ONNX export, FP32 and INT8, lower to a packed
// schedule; a mixed batch runs packed and each sequence gets the bits of
// the padded run (padded with the padding id or with another) and of its
// run alone, also with pad ids among its real tokens.
func TestPackedRoBERTaMatchesAlone(t *testing.T) {
	for _, name := range []string{testmodels.TinyRobertaCls, testmodels.TinyRobertaBase, testmodels.TinyXLMRCls, testmodels.TinyXLMRBase,
		testmodels.TinyMPNetCls, testmodels.TinyMPNetBase, testmodels.TinyModernBertCls, testmodels.TinyModernBertBase,
		testmodels.TinyJinaBertBase, testmodels.TinyJinaBertCls, testmodels.TinyJinaBertCode, testmodels.TinyGTEBase, testmodels.TinyGTETypes, testmodels.TinyGTECls,
		testmodels.TinyNomicBase, testmodels.TinyNomicCls, testmodels.TinyNomicGelu} {
		dir := testmodels.TinyDir(t, name)
		testPackedMatchesAlone(t, name, dir, dir, filepath.Join(dir, "model.onnx"))
	}
}

// TestPackedDeBERTaMatchesAlone is TestPackedRoBERTaMatchesAlone on the
// DeBERTa models (v3's form, c2p alone, no relative terms) from their
// folders and their ONNX exports: each sequence's relative terms fill its
// corner of the padded bias, which packed attention reads, with the bits
// of its run alone. (The classifier's embed_proj keeps its batches
// padded.)
func TestPackedDeBERTaMatchesAlone(t *testing.T) {
	for _, name := range []string{testmodels.TinyDeBERTaBase, testmodels.TinyDeBERTaC2P, testmodels.TinyDeBERTaAbs} {
		dir := testmodels.TinyDir(t, name)
		testPackedMatchesAlone(t, name, dir, dir, filepath.Join(dir, "model.onnx"))
	}
	// v1 (its export does not lower; the classifier's absolute positions
	// come from the position_ids buffer), from its folder.
	for _, name := range []string{testmodels.TinyDeBERTaV1Base, testmodels.TinyDeBERTaV1Cls} {
		dir := testmodels.TinyDir(t, name)
		testPackedMatchesAlone(t, name, dir, dir)
	}
}

// testPackedMatchesAlone runs the packed-batch checks on the tiny model
// name (folder dir) loaded from each of paths, its folder or ONNX file.
func testPackedMatchesAlone(t *testing.T, name, dir string, paths ...string) {
	vs := endVariants()
	cfg, err := hf.LoadConfig(filepath.Join(dir, hf.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	pad := int64(cfg.PadTokenID)
	exs := padIDExamples(pad, cfg.VocabSize)
	for _, path := range paths {
		var g *compiler.Graph
		if path == dir {
			g, err = hf.Load(dir)
		} else {
			g, err = onnx.Load(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
			t.Fatal(err)
		}
		q := quantizeForTest(t, g, &testmodels.Reference{Examples: exs})
		for _, c := range []struct {
			name string
			g    *compiler.Graph
		}{{"fp32", g}, {"int8", q}} {
			for vi := range vs {
				for _, threads := range []int{1, 3} {
					t.Run(fmt.Sprintf("%s/%s/%s/%v/T=%d", name, filepath.Base(path), c.name, vs[vi].ISA, threads), func(t *testing.T) {
						p := compile(t, c.g, &vs[vi], threads)
						if r := p.PackingReason(); r != "" {
							t.Fatalf("schedule runs padded: %s", r)
						}
						padded, err := Compile(explicitQuant(t, c.g), Options{Variant: &vs[vi], Threads: threads, Padded: true})
						if err != nil {
							t.Fatal(err)
						}
						defer padded.Close()
						for _, id := range []int64{pad, 0} {
							in := padWith(t, c.g, exs, id)
							got := run(t, p, in)
							if p.run.offsets == nil {
								t.Fatal("the mixed batch ran padded")
							}
							sameRealTokens(t, "packed vs padded", exs, got, run(t, padded, in), -1)
							if id != pad {
								continue
							}
							for b := range exs {
								alone := padWith(t, c.g, exs[b:b+1], pad)
								sameRealTokens(t, "packed vs alone", exs, got, run(t, p, alone), b)
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkPackedRoBERTa is BenchmarkPackedBatch on the tiny XLM-R base
// model (hidden 64): its 16 mixed-length sequences (lengths 1-16, 150
// real tokens of 256), INT8, padded and packed.
func BenchmarkPackedRoBERTa(b *testing.B) {
	dir := testmodels.TinyDir(b, testmodels.TinyXLMRBase)
	cfg, err := hf.LoadConfig(filepath.Join(dir, hf.ConfigFile))
	if err != nil {
		b.Fatal(err)
	}
	g, err := hf.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		b.Fatal(err)
	}
	exs := padIDExamples(int64(cfg.PadTokenID), cfg.VocabSize)
	q := quantizeForTest(b, g, &testmodels.Reference{Examples: exs})
	in, err := testmodels.Inputs(q, exs)
	if err != nil {
		b.Fatal(err)
	}
	benchPaddedAndPacked(b, q, in, len(exs))
}
