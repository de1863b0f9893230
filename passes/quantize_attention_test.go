package passes

import (
	"math"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/internal/testmodels"
	"path/filepath"
)

// attentionInputs captures the Q, K, V and mask of every sqc.Attention.
type attentionCall struct {
	node       *compiler.Node
	q, k, v, m *compiler.Tensor
	out        *compiler.Tensor
}

func captureAttention(t *testing.T, g *compiler.Graph, in map[string]*compiler.Tensor) []*attentionCall {
	t.Helper()
	want := map[string]bool{}
	var calls []*attentionCall
	for _, n := range g.Nodes {
		if n.Op == opAttention {
			calls = append(calls, &attentionCall{node: n})
			for _, x := range n.Inputs {
				want[x] = true
			}
			want[n.Outputs[0]] = true
		}
	}
	vals := map[string]*compiler.Tensor{}
	_, err := interp.Run(g, in, &interp.Options{OnValue: func(name string, tt *compiler.Tensor) error {
		if want[name] {
			vals[name] = tt.Clone()
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		c.q, c.k, c.v, c.m, c.out = vals[c.node.Inputs[0]], vals[c.node.Inputs[1]], vals[c.node.Inputs[2]], vals[c.node.Inputs[3]], vals[c.node.Outputs[0]]
	}
	return calls
}

func absMax(t *compiler.Tensor) float64 {
	m := 0.0
	for _, v := range t.F32 {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// int8Attention simulates an INT8 attention kernel: Q, K, V symmetric s8
// per tensor with the given ranges, scores dequantised, softmax in
// float64, P quantised to u8 in steps of 1/255, P·V in integers.
func int8Attention(c *attentionCall, qr, kr, vr float64) []float64 {
	heads := int(c.node.AttrInt("heads", 1))
	scale := float64(c.node.AttrFloat("scale", 1))
	b, s, w := int(c.q.Shape[0]), int(c.q.Shape[1]), int(c.q.Shape[2])
	d := w / heads
	q8 := func(x float32, r float64) float64 { return math.Max(-127, math.Min(127, math.RoundToEven(float64(x)/(r/127)))) }
	out := make([]float64, b*s*w)
	p := make([]float64, s)
	for bi := range b {
		for h := range heads {
			for i := range s {
				mx := math.Inf(-1)
				for j := range s {
					var dot float64
					for e := range d {
						dot += q8(c.q.F32[(bi*s+i)*w+h*d+e], qr) * q8(c.k.F32[(bi*s+j)*w+h*d+e], kr)
					}
					p[j] = scale*dot*(qr/127)*(kr/127) + float64(c.m.F32[bi*s+j])
					mx = math.Max(mx, p[j])
				}
				sum := 0.0
				for j := range s {
					p[j] = math.Exp(p[j] - mx)
					sum += p[j]
				}
				for j := range s {
					p[j] = math.RoundToEven(p[j] / sum * 255)
				}
				for e := range d {
					var acc float64
					for j := range s {
						acc += p[j] * q8(c.v.F32[(bi*s+j)*w+h*d+e], vr)
					}
					out[(bi*s+i)*w+h*d+e] = acc / 255 * (vr / 127)
				}
			}
		}
	}
	return out
}

func TestAttentionINT8Measurement(t *testing.T) {
	for _, name := range testmodels.Models {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.ModelDir(t, name)
			g, err := onnx.Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			if err := RunPipeline(g, Options{}); err != nil {
				t.Fatal(err)
			}
			cal := sharedCalibration(t, g, dir, 256)
			ranges := map[*compiler.Node][3]float64{}
			for _, b := range cal {
				for _, c := range captureAttention(t, g, b) {
					r := ranges[c.node]
					r[0], r[1], r[2] = math.Max(r[0], absMax(c.q)), math.Max(r[1], absMax(c.k)), math.Max(r[2], absMax(c.v))
					ranges[c.node] = r
				}
			}
			// INT8 graph, static, alpha 0.5, for the Linears' own error at the attention output.
			stats := collect(t, g, cal, calib.Options{})
			q := g.Clone()
			runPasses(t, q, QuantPipeline(stats, QuantOptions{Alpha: 0.5})...)
			ref, _ := testmodels.LoadReference(dir)
			var sigA, noiseA, noiseL float64
			var macLin, macAtt float64
			for lo := 0; lo < 256; lo += 16 {
				exs := ref.Examples[lo : lo+16]
				in, _ := testmodels.Inputs(g, exs)
				fp := captureAttention(t, g, in)
				qq := captureAttention(t, q, in)
				mask := in["attention_mask"]
				for li, c := range fp {
					r := ranges[c.node]
					sim := int8Attention(c, r[0], r[1], r[2])
					w := int(c.out.Shape[2])
					for i, v := range c.out.F32 {
						if mask.I64[i/w] == 0 {
							continue
						}
						sigA += float64(v) * float64(v)
						dA := sim[i] - float64(v)
						noiseA += dA * dA
						dL := float64(qq[li].out.F32[i]) - float64(v)
						noiseL += dL * dL
					}
				}
			}
			for _, e := range ref.Examples {
				s := float64(len(e.InputIDs))
				_ = s
			}
			layers := 0
			var h, f float64
			for _, n := range g.Nodes {
				if n.Op == opAttention {
					layers++
				}
				if n.Op == opLinear && n.Name != "" {
					w := g.Initializers[n.Inputs[1]]
					if w.Shape[0] > w.Shape[1] {
						f = float64(w.Shape[0])
					}
					h = float64(w.Shape[1])
				}
			}
			for _, e := range ref.Examples {
				s := float64(len(e.InputIDs))
				macLin += float64(layers) * s * (4*h*h + 2*h*f)
				macAtt += float64(layers) * 2 * s * s * h
			}
			t.Logf("attention output SQNR: INT8 attention alone %.1f dB; INT8 Linears (alpha 0.5 static) %.1f dB", 10*math.Log10(sigA/noiseA), 10*math.Log10(sigA/noiseL))
			t.Logf("h=%g f=%g layers=%d: attention matmuls are %.2f%% of encoder MACs on SST-2 dev", h, f, layers, 100*macAtt/(macAtt+macLin))
		})
	}
}
