package exec

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// mixedExamples is a batch of dev sentences of different lengths: a
// length-1 sequence ([CLS] alone), the longest of the first 64 (the
// batch's padded length), and a run of others in arrival order.
func mixedExamples(ref *testmodels.Reference) []testmodels.Example {
	longest := ref.Examples[0]
	for _, e := range ref.Examples[:64] {
		if len(e.InputIDs) > len(longest.InputIDs) {
			longest = e
		}
	}
	one := ref.Examples[1]
	one = testmodels.Example{InputIDs: one.InputIDs[:1], AttentionMask: one.AttentionMask[:1], TokenTypeIDs: one.TokenTypeIDs[:1]}
	exs := []testmodels.Example{ref.Examples[2], one, longest}
	return append(exs, ref.Examples[3:12]...)
}

// withHiddenOutput is g with its last LayerNorm's output as a second
// graph output: a per-token output, which a packed Run unpacks.
func withHiddenOutput(t *testing.T, g *compiler.Graph) *compiler.Graph {
	t.Helper()
	h := g.Clone()
	var last string
	for _, n := range h.Nodes {
		if n.Op == "LayerNormalization" || n.Op == "sqc.LayerNormDual" {
			last = n.Outputs[0]
		}
	}
	v := h.Values[last]
	if v == nil {
		t.Fatalf("no value %q", last)
	}
	h.Outputs = append(h.Outputs, v.Clone())
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPackedMatchesAlone: a batch of mixed lengths runs packed (no pad
// rows), and each sequence's outputs (logits, and the per-token hidden
// state, padding rows zero) are bit for bit those it gets alone, for
// FP32 and INT8 schedules, several thread counts and the first and last
// GEMM variants; the padded layout (Options.Padded) gives the same logits.
func TestPackedMatchesAlone(t *testing.T) {
	g, ref := canonicalModel(t, testmodels.BertMini)
	q := quantizeForTest(t, g, ref)
	exs := mixedExamples(ref)
	vs := endVariants()
	for _, c := range []struct {
		name string
		g    *compiler.Graph
	}{{"fp32", withHiddenOutput(t, g)}, {"int8", withHiddenOutput(t, q)}} {
		in, err := testmodels.Inputs(c.g, exs)
		if err != nil {
			t.Fatal(err)
		}
		seq := int(in["input_ids"].Shape[1])
		for vi := range vs {
			for _, threads := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%v/v%d/T=%d", c.name, vs[vi].ISA, vi, threads), func(t *testing.T) {
					p := compile(t, c.g, &vs[vi], threads)
					if r := p.PackingReason(); r != "" {
						t.Fatalf("schedule runs padded: %s", r)
					}
					got := run(t, p, in)
					if p.run.offsets == nil {
						t.Fatal("the mixed batch ran padded")
					}
					padded, err := Compile(explicitQuant(t, c.g), Options{Variant: &vs[vi], Threads: threads, Padded: true})
					if err != nil {
						t.Fatal(err)
					}
					defer padded.Close()
					// Padding rows of the hidden state differ (computed
					// when padded, zero when packed); the logits may not.
					logits := c.g.Outputs[0].Name
					sameBits(t, "packed vs padded", map[string]*compiler.Tensor{logits: got[logits]},
						map[string]*compiler.Tensor{logits: run(t, padded, in)[logits]})
					for b, e := range exs {
						alone, err := testmodels.Inputs(c.g, exs[b:b+1])
						if err != nil {
							t.Fatal(err)
						}
						want := run(t, p, alone)
						for _, out := range c.g.Outputs {
							w, gt := want[out.Name], got[out.Name]
							perSeq := len(w.F32) / len(e.InputIDs)
							if len(w.Shape) == 2 { // logits: one row per sequence
								perSeq = len(w.F32)
							}
							stride := perSeq
							if len(w.Shape) == 3 {
								stride = seq * int(w.Shape[2])
							}
							row := gt.F32[b*stride:][:stride]
							for i, x := range w.F32 {
								if math.Float32bits(row[i]) != math.Float32bits(x) {
									t.Fatalf("sequence %d (%d tokens) %s[%d] = %g packed, %g alone", b, len(e.InputIDs), out.Name, i, row[i], x)
								}
							}
							for i, x := range row[len(w.F32):] {
								if x != 0 {
									t.Fatalf("sequence %d %s: padding value %d is %g, want 0", b, out.Name, i, x)
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestPackingFallsBack: a mask that is not right-padding, and a batch
// with no padding, run padded, with the outputs of the padded layout.
func TestPackingFallsBack(t *testing.T) {
	g, ref := canonicalModel(t, testmodels.BertMini)
	exs := mixedExamples(ref)[:3]
	in, err := testmodels.Inputs(g, exs)
	if err != nil {
		t.Fatal(err)
	}
	p := compile(t, g, nil, 2)
	padded, err := Compile(g, Options{Threads: 2, Padded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer padded.Close()
	seq := int(in["attention_mask"].Shape[1])
	in["attention_mask"].I64[seq-1] = 1 // a hole in row 0's mask: left as it is, not packed
	want := run(t, padded, in)
	sameBits(t, "holed mask", run(t, p, in), want)
	if p.run.offsets != nil {
		t.Error("a mask with a hole ran packed")
	}
	full, err := testmodels.Inputs(g, exs[2:3])
	if err != nil {
		t.Fatal(err)
	}
	run(t, p, full)
	if p.run.offsets != nil {
		t.Error("an unpadded batch ran packed")
	}
}

// TestPackingNeedsLowMaskFill: a mask fill that leaves padded keys a
// softmax weight (-1 here) runs padded, saying why, and computes what the
// padded layout does; -1e4 (a float16 model's clipped fill) still packs.
func TestPackingNeedsLowMaskFill(t *testing.T) {
	g, ref := canonicalModel(t, testmodels.BertMini)
	in, err := testmodels.Inputs(g, mixedExamples(ref)[:3])
	if err != nil {
		t.Fatal(err)
	}
	withFill := func(fill float32) *compiler.Graph {
		h := g.Clone()
		for _, n := range h.Nodes {
			if n.Op == "sqc.AttentionMask" {
				n.Attrs["fill"] = compiler.FloatAttr(fill)
			}
		}
		return h
	}
	p := compile(t, withFill(-1), nil, 2)
	if r := p.PackingReason(); !strings.Contains(r, "fill -1 ") {
		t.Errorf("fill -1: PackingReason %q, want the fill named", r)
	}
	padded, err := Compile(withFill(-1), Options{Threads: 2, Padded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer padded.Close()
	sameBits(t, "fill -1", run(t, p, in), run(t, padded, in))
	if p.run.offsets != nil {
		t.Error("fill -1 ran packed")
	}
	p = compile(t, withFill(-1e4), nil, 2)
	if r := p.PackingReason(); r != "" {
		t.Errorf("fill -1e4: PackingReason %q, want packed", r)
	}
	run(t, p, in)
	if p.run.offsets == nil {
		t.Error("fill -1e4 ran padded")
	}
}

// BenchmarkPackedBatch runs 32 SST-2 dev sentences in arrival order as
// one batch of BERT-mini (test-quantised INT8), padded to the longest
// and packed.
func BenchmarkPackedBatch(b *testing.B) {
	g, ref := canonicalModel(b, testmodels.BertMini)
	q := quantizeForTest(b, g, ref)
	in, err := testmodels.Inputs(q, ref.Examples[:32])
	if err != nil {
		b.Fatal(err)
	}
	benchPaddedAndPacked(b, q, in, 32)
}

// benchPaddedAndPacked times q on the batch in, of n sequences, padded and
// packed, reporting sentences/s.
func benchPaddedAndPacked(b *testing.B, q *compiler.Graph, in map[string]*compiler.Tensor, n int) {
	for _, padded := range []bool{true, false} {
		b.Run(map[bool]string{true: "padded", false: "packed"}[padded], func(b *testing.B) {
			p, err := Compile(q, Options{Padded: padded})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			out := map[string]*compiler.Tensor{}
			for b.Loop() {
				if err := p.RunInto(in, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sentences/s")
		})
	}
}
