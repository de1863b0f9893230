package onnx

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// oneFunctionOp is a model of one default-domain node op at opset, reading
// the given inputs, with output y.
func oneFunctionOp(op string, opset int64, inputs []*onnxpb.ValueInfoProto, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	var in []string
	for _, v := range inputs {
		in = append(in, v.GetName())
	}
	return model(opset, &onnxpb.GraphProto{Name: proto.String(op), Node: []*onnxpb.NodeProto{node(op, "the_op", in, []string{"y"}, attrs...)},
		Input: inputs, Output: []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_FLOAT)}})
}

// TestONNXGelu checks opset 20's Gelu against its formula in float64 for
// each approximate value, and refuses one ONNX does not define.
func TestONNXGelu(t *testing.T) {
	a := compiler.NewTensor(compiler.Float32, 2, 3, 4)
	for i := range a.F32 {
		a.F32[i] = float32(i)/3 - 4
	}
	erfGelu := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	tanhGelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) }
	x := []*onnxpb.ValueInfoProto{tensorInfo("a", onnxpb.TensorProto_FLOAT, 2, 3, 4)}
	for _, tc := range []struct {
		name  string
		attrs []*onnxpb.AttributeProto
		f     func(float64) float64
	}{
		{"default", nil, erfGelu},
		{"none", []*onnxpb.AttributeProto{strAttr("approximate", "none")}, erfGelu},
		{"tanh", []*onnxpb.AttributeProto{strAttr("approximate", "tanh")}, tanhGelu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Decode(marshal(t, oneFunctionOp("Gelu", 20, x, tc.attrs...)), "gelu.onnx")
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Meta["expanded_onnx_functions"]; got != "Gelu 1" {
				t.Errorf("Meta[expanded_onnx_functions] = %q", got)
			}
			out, err := interp.Run(g, map[string]*compiler.Tensor{"a": a}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, y := range out["y"].F32 {
				x := float64(a.F32[i])
				if want := tc.f(x); math.Abs(float64(y)-want) > 2e-6*max(1, math.Abs(want)) {
					t.Fatalf("y[%d] = %g for x = %g, want %g", i, y, x, want)
				}
			}
		})
	}
	_, err := Decode(marshal(t, oneFunctionOp("Gelu", 20, x, strAttr("approximate", "sigmoid"))), "gelu.onnx")
	for _, s := range []string{"gelu.onnx", "the_op", `approximate "sigmoid"`} {
		if !errorNames(err, s) {
			t.Fatalf("error %v, want it to name %q", err, s)
		}
	}
}

// attentionReference is softmax(Q·Kᵀ·scale + bias)·V in float64 on
// [batch, heads, seq, d] tensors, bias[b][k] added to every query of
// batch b (-inf masks).
func attentionReference(q, k, v *compiler.Tensor, bias [][]float64, scale float64) []float64 {
	b, h, s, d := int(q.Shape[0]), int(q.Shape[1]), int(q.Shape[2]), int(q.Shape[3])
	kv := int(k.Shape[2])
	y := make([]float64, b*h*s*d)
	for bi := range b {
		for hi := range h {
			base, kbase := (bi*h+hi)*s*d, (bi*h+hi)*kv*d
			for i := range s {
				p := make([]float64, kv)
				top := math.Inf(-1)
				for j := range kv {
					for c := range d {
						p[j] += float64(q.F32[base+i*d+c]) * float64(k.F32[kbase+j*d+c])
					}
					p[j] = p[j]*scale + bias[bi][j]
					top = max(top, p[j])
				}
				var sum float64
				for j := range p {
					p[j] = math.Exp(p[j] - top)
					sum += p[j]
				}
				for j := range kv {
					for c := range d {
						y[base+i*d+c] += p[j] / sum * float64(v.F32[kbase+j*d+c])
					}
				}
			}
		}
	}
	return y
}

// TestONNXAttention checks opset 23's Attention against a float64
// reference: 4-D inputs with a boolean or a float mask, the scale given or
// 1/√d, and 3-D inputs with q_num_heads / kv_num_heads.
func TestONNXAttention(t *testing.T) {
	const batch, heads, seq, d = 2, 2, 3, 4
	fill := func(seed int, shape ...int64) *compiler.Tensor {
		x := compiler.NewTensor(compiler.Float32, shape...)
		for i := range x.F32 {
			x.F32[i] = float32((i*seed)%11)/5 - 1
		}
		return x
	}
	q, k, v := fill(3, batch, heads, seq, d), fill(5, batch, heads, seq, d), fill(7, batch, heads, seq, d)
	// Sequence 1 has its last key masked.
	boolMask := compiler.NewTensor(compiler.Bool, batch, 1, 1, seq)
	floatMask := compiler.NewTensor(compiler.Float32, batch, 1, 1, seq)
	bias := [][]float64{{0, 0, 0}, {0, 0, math.Inf(-1)}}
	for bi := range batch {
		for j := range seq {
			boolMask.Bool[bi*seq+j] = !math.IsInf(bias[bi][j], -1)
			floatMask.F32[bi*seq+j] = float32(max(bias[bi][j], -1e9))
		}
	}
	info4 := func(name string, elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.ValueInfoProto {
		return tensorInfo(name, elem, dims...)
	}
	qkv4 := []*onnxpb.ValueInfoProto{info4("q", onnxpb.TensorProto_FLOAT, batch, heads, seq, d), info4("k", onnxpb.TensorProto_FLOAT, batch, heads, seq, d), info4("v", onnxpb.TensorProto_FLOAT, batch, heads, seq, d)}
	for _, tc := range []struct {
		name  string
		mask  *compiler.Tensor
		scale float64
		attrs []*onnxpb.AttributeProto
	}{
		{"bool mask, default scale", boolMask, 1 / math.Sqrt(d), nil},
		{"float mask, scale given", floatMask, 0.3, []*onnxpb.AttributeProto{floatAttr("scale", 0.3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elem := onnxpb.TensorProto_FLOAT
			if tc.mask.DType == compiler.Bool {
				elem = onnxpb.TensorProto_BOOL
			}
			inputs := append(append([]*onnxpb.ValueInfoProto{}, qkv4...), info4("mask", elem, batch, 1, 1, seq))
			g, err := Decode(marshal(t, oneFunctionOp("Attention", 23, inputs, tc.attrs...)), "attention.onnx")
			if err != nil {
				t.Fatal(err)
			}
			out, err := interp.Run(g, map[string]*compiler.Tensor{"q": q, "k": k, "v": v, "mask": tc.mask}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := attentionReference(q, k, v, bias, tc.scale)
			for i, y := range out["y"].F32 {
				if math.Abs(float64(y)-want[i]) > 1e-5 {
					t.Fatalf("y[%d] = %g, want %g", i, y, want[i])
				}
			}
		})
	}
	t.Run("3-D with head counts", func(t *testing.T) {
		// [batch, seq, heads·d] holds the same numbers as q, k, v with the
		// heads split from the last axis.
		to3 := func(x *compiler.Tensor) *compiler.Tensor {
			y := compiler.NewTensor(compiler.Float32, batch, seq, heads*d)
			for bi := range batch {
				for hi := range heads {
					for i := range seq {
						for c := range d {
							y.F32[(bi*seq+i)*heads*d+hi*d+c] = x.F32[((bi*heads+hi)*seq+i)*d+c]
						}
					}
				}
			}
			return y
		}
		inputs := []*onnxpb.ValueInfoProto{info4("q", onnxpb.TensorProto_FLOAT, batch, seq, heads*d), info4("k", onnxpb.TensorProto_FLOAT, batch, seq, heads*d), info4("v", onnxpb.TensorProto_FLOAT, batch, seq, heads*d)}
		g, err := Decode(marshal(t, oneFunctionOp("Attention", 23, inputs, intAttr("q_num_heads", heads), intAttr("kv_num_heads", heads))), "attention.onnx")
		if err != nil {
			t.Fatal(err)
		}
		out, err := interp.Run(g, map[string]*compiler.Tensor{"q": to3(q), "k": to3(k), "v": to3(v)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want4 := compiler.NewTensor(compiler.Float32, batch, heads, seq, d)
		for i, w := range attentionReference(q, k, v, [][]float64{{0, 0, 0}, {0, 0, 0}}, 1/math.Sqrt(d)) {
			want4.F32[i] = float32(w)
		}
		want := to3(want4)
		if len(out["y"].Shape) != 3 {
			t.Fatalf("y shape %v, want [%d, %d, %d]", out["y"].Shape, batch, seq, heads*d)
		}
		for i, y := range out["y"].F32 {
			if math.Abs(float64(y-want.F32[i])) > 1e-5 {
				t.Fatalf("y[%d] = %g, want %g", i, y, want.F32[i])
			}
		}
	})
}

// TestONNXAttentionRefused: decoder features of Attention are errors
// naming the file, the node and the feature.
func TestONNXAttentionRefused(t *testing.T) {
	qkv := func(rank int) []*onnxpb.ValueInfoProto {
		dims := []any{2, 2, 3, 4}[4-rank:]
		return []*onnxpb.ValueInfoProto{tensorInfo("q", onnxpb.TensorProto_FLOAT, dims...), tensorInfo("k", onnxpb.TensorProto_FLOAT, dims...), tensorInfo("v", onnxpb.TensorProto_FLOAT, dims...)}
	}
	withPast := oneFunctionOp("Attention", 23, qkv(4))
	withPast.Graph.Node[0].Input = []string{"q", "k", "v", "", "k", "v"}
	scoresRead := oneFunctionOp("Attention", 23, qkv(4))
	scoresRead.Graph.Node[0].Output = []string{"y", "", "", "qk"}
	scoresRead.Graph.Output = append(scoresRead.Graph.Output, tensorInfo("qk", onnxpb.TensorProto_FLOAT))
	for _, tc := range []struct {
		name string
		m    *onnxpb.ModelProto
		want string
	}{
		{"cache", withPast, "input 4 (past_key)"},
		{"causal", oneFunctionOp("Attention", 23, qkv(4), intAttr("is_causal", 1)), "is_causal=1"},
		{"softcap", oneFunctionOp("Attention", 23, qkv(4), floatAttr("softcap", 30)), "softcap=30"},
		{"scores read", scoresRead, "output 3 (qk"},
		{"3-D without heads", oneFunctionOp("Attention", 23, qkv(3)), "q_num_heads"},
		{"grouped-query", oneFunctionOp("Attention", 23, qkv(3), intAttr("q_num_heads", 2), intAttr("kv_num_heads", 1)), "grouped-query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(marshal(t, tc.m), "attention.onnx")
			for _, s := range []string{"attention.onnx", "the_op", tc.want} {
				if !errorNames(err, s) {
					t.Fatalf("error %v, want it to name %q", err, s)
				}
			}
		})
	}
}
