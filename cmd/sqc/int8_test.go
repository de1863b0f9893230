package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Acceptance of the INT8 path on the shared SST-2 models: calibrated on the
// first 512 sentences of train.tsv, evaluated on all 872 dev sentences
// against PyTorch's FP32 logits, through the INT8 engine.

// acceptanceCalibSamples is the calibration set size the acceptance
// criteria name.
const acceptanceCalibSamples = 512

// calibrated is a shared model, canonicalised and calibrated once for all
// the tests of this file.
type calibrated struct {
	g     *compiler.Graph
	stats *calib.Stats
	cal   *calibrator
	ref   *testmodels.Reference
	dev   []dataio.Example // the reference dev ids, with labels
}

var (
	calibratedMu sync.Mutex
	calibratedBy = map[string]*calibrated{}
)

// calibratedModel loads, canonicalises and calibrates the named shared
// model (once per test binary), skipping when ../shared is absent.
func calibratedModel(t testing.TB, name string) *calibrated {
	t.Helper()
	dir := testmodels.ModelDir(t, name)
	calibratedMu.Lock()
	defer calibratedMu.Unlock()
	if m := calibratedBy[name]; m != nil {
		return m
	}
	shared, _ := testmodels.SharedDir()
	train := filepath.Join(shared, "data", "glue-sst2", "train.tsv")
	if _, err := os.Stat(train); err != nil {
		t.Skipf("skipping: %s not found", train)
	}
	g, err := frontend.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		t.Fatal(err)
	}
	tok, err := loadTokenizer(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// Auto alpha needs row samples; they change nothing else.
	cfg := &int8Config{calibPath: train, calibSamples: acceptanceCalibSamples, quant: passes.QuantOptions{AutoAlpha: true}}
	cal, err := newCalibrator(g, tok, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := cal.collect(g)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testmodels.LoadReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &calibrated{g: g, stats: stats, cal: cal, ref: ref}
	for i, e := range ref.Examples {
		m.dev = append(m.dev, dataio.Example{IDs: e.InputIDs, Mask: e.AttentionMask, TypeIDs: e.TokenTypeIDs, HasIDs: true, Label: ref.Labels[i], HasLabel: true, Line: i + 1})
	}
	calibratedBy[name] = m
	return m
}

// quantized builds the INT8 graph for one configuration.
func (m *calibrated) quantized(t testing.TB, opts passes.QuantOptions) *int8Build {
	t.Helper()
	b, err := quantizeCanonical(m.g, m.stats, m.cal, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runDev runs the first n dev sentences through ex on graph g.
func (m *calibrated) runDev(t *testing.T, g *compiler.Graph, ex infer.Executor, n int) []infer.Result {
	t.Helper()
	enc, err := infer.Encode(nil, m.dev[:n])
	if err != nil {
		t.Fatal(err)
	}
	res, err := infer.Run(context.Background(), g, ex, enc, infer.Options{BatchSize: 32, SortByLength: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// referenceResults wraps PyTorch's FP32 logits as infer results.
func (m *calibrated) referenceResults(output string) []infer.Result {
	out := make([]infer.Result, len(m.ref.Logits))
	for i, l := range m.ref.Logits {
		out[i] = infer.Result{output: &compiler.Tensor{DType: compiler.Float32, Shape: []int64{2}, F32: l}}
	}
	return out
}

func TestINT8AccuracyOnSST2(t *testing.T) {
	type config struct {
		alpha  string
		act    string
		bound  float64 // largest |INT8 - FP32| accuracy, in points; < 0: logged only
		cosine float64
		attn   string // passes.QuantOptions.Attention ("": the default, INT8)
	}
	configs := []config{
		// alpha 0 (no smoothing) is shown for comparison, not a default.
		{"0", compiler.QLinearStatic, -1, 0, ""},
		{"0", compiler.QLinearDynamic, -1, 0, ""},
		{"0.5", compiler.QLinearStatic, 0.3, 0.999, ""},
		{"0.5", compiler.QLinearDynamic, 0.2, 0.999, ""},
		{"auto", compiler.QLinearStatic, 0.3, 0.999, ""},
		{"auto", compiler.QLinearDynamic, 0.2, 0.999, ""},
		// FP32 attention matmuls (--attention fp32): the same bars.
		{"0.5", compiler.QLinearStatic, 0.3, 0.999, passes.AttentionFP32},
		{"0.5", compiler.QLinearDynamic, 0.2, 0.999, passes.AttentionFP32},
	}
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			m := calibratedModel(t, name)
			output := m.g.Outputs[0].Name
			want := m.referenceResults(output)
			for _, c := range configs {
				sub := fmt.Sprintf("alpha=%s/%s", c.alpha, c.act)
				if c.attn != "" {
					sub += "/attention=" + c.attn
				}
				t.Run(sub, func(t *testing.T) {
					opts := passes.QuantOptions{Act: c.act, AutoAlpha: c.alpha == "auto", Attention: c.attn}
					if !opts.AutoAlpha {
						fmt.Sscan(c.alpha, &opts.Alpha)
					}
					b := m.quantized(t, opts)
					ex, closeEx, err := newInt8Executor(b.int8)
					if err != nil {
						t.Fatal(err)
					}
					defer closeEx()
					got := m.runDev(t, b.int8, ex, len(m.dev))
					r := compare(output, want, got, m.dev)
					t.Logf("| %s | %s | %s | attention %s | FP32 %.2f%% | INT8 %.2f%% (%+.2f) | agreement %.2f%% | cosine mean %.6f min %.4f |",
						name, c.alpha, c.act, cmp.Or(c.attn, passes.AttentionINT8), 100*r.FP32Accuracy, 100*r.INT8Accuracy, r.Difference, 100*r.Agreement, r.MeanCosine, r.MinCosine)
					if math.Abs(r.FP32Accuracy-m.ref.Accuracy) > 1e-9 {
						t.Fatalf("FP32 reference accuracy %v, dev.json says %v", r.FP32Accuracy, m.ref.Accuracy)
					}
					if c.bound < 0 {
						return
					}
					if math.Abs(r.Difference) > c.bound {
						t.Errorf("INT8 accuracy %.2f%% is %+.2f points from FP32, want within %.1f", 100*r.INT8Accuracy, r.Difference, c.bound)
					}
					if r.MeanCosine < c.cosine {
						t.Errorf("mean logits cosine %.6f < %g", r.MeanCosine, c.cosine)
					}
				})
			}
		})
	}
}

// TestINT8BitwiseAcrossISAs runs the INT8 graphs with every GEMM kernel
// family SQC_ISA can select, and the emulated AMX one (so the AMX paths are
// checked on CPUs without AMX too), and wants identical bits. The interpreter is
// a looser check: its sqc.Gelu, LayerNorm and attention round differently
// from the runtime kernels by an ulp or so, which can move an activation
// across a quantisation boundary, so it agrees to 1e-3 relative.
func TestINT8BitwiseAcrossISAs(t *testing.T) {
	const sentences = 32
	for _, name := range testmodels.Models {
		for _, c := range []struct{ act, attn string }{
			{compiler.QLinearStatic, passes.AttentionFP32}, {compiler.QLinearDynamic, passes.AttentionFP32},
			{compiler.QLinearStatic, passes.AttentionINT8},
		} {
			t.Run(name+"/"+c.act+"/attention="+c.attn, func(t *testing.T) {
				m := calibratedModel(t, name)
				b := m.quantized(t, passes.QuantOptions{Alpha: 0.5, Act: c.act, Attention: c.attn})
				output := m.g.Outputs[0].Name
				var first []infer.Result
				var firstISA string
				for _, isa := range []string{"go", "avx2", "vnni", "amx", qgemm.ISAEmulatedAMX} {
					t.Setenv("SQC_ISA", isa)
					prog, err := exec.Compile(b.int8, exec.Options{})
					if isa == qgemm.ISAEmulatedAMX && errors.Is(err, qgemm.ErrISAUnavailable) {
						t.Logf("SQC_ISA=%s: %v; skipped", isa, err)
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					want := strings.TrimSuffix(isa, "-emulated")
					if got := prog.Engine().ISA().String(); got != want {
						t.Logf("SQC_ISA=%s: this machine runs %s instead; skipped", isa, got)
						prog.Close()
						continue
					}
					got := m.runDev(t, b.int8, prog, sentences)
					prog.Close()
					if first == nil {
						first, firstISA = got, isa
						continue
					}
					for i := range first {
						w, g := first[i][output].F32, got[i][output].F32
						for j := range w {
							if math.Float32bits(w[j]) != math.Float32bits(g[j]) {
								t.Fatalf("sentence %d logit %d: SQC_ISA=%s gives %x, SQC_ISA=%s %x", i, j, isa, math.Float32bits(g[j]), firstISA, math.Float32bits(w[j]))
							}
						}
					}
					t.Logf("SQC_ISA=%s: %d sentences bit-identical to SQC_ISA=%s", isa, sentences, firstISA)
				}
				it, err := interp.New(b.int8)
				if err != nil {
					t.Fatal(err)
				}
				ref := m.runDev(t, b.int8, infer.Interpreter(it.Run), sentences)
				worst := 0.0
				for i := range ref {
					w, g := ref[i][output].F32, first[i][output].F32
					for j := range w {
						worst = max(worst, math.Abs(float64(w[j])-float64(g[j]))/max(math.Abs(float64(w[j])), 1))
					}
				}
				if worst > 1e-3 {
					t.Errorf("the INT8 engine and the interpreter differ by %.3g on the INT8 graph", worst)
				}
			})
		}
	}
}

// BenchmarkINT8AttentionShare measures the share of the INT8 encoder's time
// spent in the FP32 attention kernel (nn.Attention: Q·K^T, softmax, P·V)
// on the SST-2 dev set, batches of 32 length-sorted sentences: the time of
// the whole compiled program, and of the same nn.Attention calls alone.
// Reported as attention-%; quantize.go's attention decision cites it.
func BenchmarkINT8AttentionShare(b *testing.B) {
	for _, name := range testmodels.Models {
		b.Run(name, func(b *testing.B) {
			m := calibratedModel(b, name)
			q := m.quantized(b, passes.QuantOptions{Alpha: 0.5}).int8
			prog, err := exec.Compile(q, exec.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer prog.Close()
			enc, err := infer.Encode(nil, m.dev)
			if err != nil {
				b.Fatal(err)
			}
			order := make([]int, len(enc))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(x, y int) bool { return len(enc[order[x]].IDs) < len(enc[order[y]].IDs) })
			var feeds []map[string]*compiler.Tensor
			var dims []nn.AttentionDims
			for lo := 0; lo < len(order); lo += 32 {
				f, seq, err := infer.MakeBatch(q, enc, order[lo:min(lo+32, len(order))])
				if err != nil {
					b.Fatal(err)
				}
				feeds = append(feeds, f)
				for _, n := range q.Nodes {
					if n.Op != "sqc.Attention" {
						continue
					}
					v, _ := q.ValueInfo(n.Outputs[0])
					width, heads := int(v.Shape[2].Size), int(n.AttrInt("heads", 1))
					batch := int(f["input_ids"].Shape[0])
					dims = append(dims, nn.AttentionDims{Batch: batch, SeqQ: seq, SeqK: seq, Heads: heads, HeadDim: width / heads,
						Scale: n.AttrFloat("scale", 1), QStride: width, KStride: width, VStride: width, OutStride: width, MaskBatchStride: seq})
				}
			}
			workers := runtime.GOMAXPROCS(0)
			p := pool.New(workers)
			defer p.Close()
			size, rows, scratchLen := 0, 0, 0
			for _, d := range dims {
				size = max(size, d.Batch*d.SeqQ*d.QStride)
				rows = max(rows, d.Batch*d.SeqK)
				scratchLen = max(scratchLen, nn.AttentionScratchLen(workers, d.SeqK, d.HeadDim))
			}
			qkv := make([]float32, size)
			for i := range qkv {
				qkv[i] = float32(i%7) * 0.1
			}
			out := make([]float32, size)
			mask := make([]float32, rows)
			scratch := make([]float32, scratchLen)
			b.ResetTimer()
			var all, attn time.Duration
			for range b.N {
				start := time.Now()
				for _, f := range feeds {
					if _, err := prog.Run(f); err != nil {
						b.Fatal(err)
					}
				}
				all += time.Since(start)
				start = time.Now()
				for i := range dims {
					nn.Attention(p, scratch, out, qkv, qkv, qkv, mask, &dims[i])
				}
				attn += time.Since(start)
			}
			b.ReportMetric(100*float64(attn)/float64(all), "attention-%")
		})
	}
}
