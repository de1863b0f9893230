package passes

import (
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// qattn is a quantised BERT self-attention block (hidden 16, 2 heads of 8)
// with a padding mask; QMODE, KMODE and VMODE are replaced by each
// projection's activation attributes.
const qattn = `graph "qattn" opset 17 {
  input %x: f32[batch, seq, 16]
  input %mask: i64[batch, seq]
  init %g: f32[16] = splat(1)
  init %wq: i8[16, 16] = elided("sha256:00000000000000f1")
  init %wk: i8[16, 16] = elided("sha256:00000000000000f2")
  init %wv: i8[16, 16] = elided("sha256:00000000000000f3")
  init %wo: i8[16, 16] = elided("sha256:00000000000000f4")
  init %sq: f32[16] = splat(0.004)
  init %sk: f32[16] = splat(0.005)
  init %sv: f32[16] = splat(0.003)
  init %so: f32[16] = splat(0.002)
  init %bq: f32[16] = elided("sha256:00000000000000f5")
  init %bk: f32[16] = elided("sha256:00000000000000f6")
  init %bv: f32[16] = elided("sha256:00000000000000f7")
  %h = LayerNormalization(%x, %g) {axis=-1, epsilon=1e-12}
  %q = sqc.QLinear(%h, %wq, %sq, %bq) {QMODE} @q
  %k = sqc.QLinear(%h, %wk, %sk, %bk) {KMODE} @k
  %v = sqc.QLinear(%h, %wv, %sv, %bv) {VMODE} @v
  %am = sqc.AttentionMask(%mask)
  %att = sqc.Attention(%q, %k, %v, %am) {heads=2, scale=0.35355339} @attention
  %o = sqc.QLinear(%att, %wo, %so) {act_scale=0.01, act_zero_point=128} @out
  %r = Add(%o, %h)
  %y = LayerNormalization(%r, %g) {axis=-1, epsilon=1e-12}
  output %y: f32[batch, seq, 16]
}`

const staticAct = `act_scale=0.03, act_zero_point=128`

func qattnGraph(t *testing.T, q, k, v string) *compiler.Graph {
	t.Helper()
	return parseGraph(t, strings.NewReplacer("QMODE", q, "KMODE", k, "VMODE", v).Replace(qattn))
}

// qattnInputs are right-padded batches of x with their masks.
func qattnInputs() []map[string]*compiler.Tensor {
	return []map[string]*compiler.Tensor{
		{"x": randomF32(3, 2, 5, 16), "mask": int64Tensor([]int64{2, 5}, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0)},
		{"x": randomF32(4, 3, 7, 16), "mask": int64Tensor([]int64{3, 7}, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0)},
	}
}

func TestFuseQKV(t *testing.T) {
	for mode, act := range map[string]string{"static": staticAct, "dynamic": `act_mode="dynamic"`} {
		t.Run(mode, func(t *testing.T) {
			g := qattnGraph(t, act, act, act)
			fused := applyPass(t, g, FuseQKV)
			wantOps(t, fused, map[string]int{"LayerNormalization": 2, opQLinear: 2, "sqc.AttentionMask": 1, "sqc.Attention": 1, "Add": 1})
			att := nodeByName(t, fused, "attention")
			if !compiler.AttentionPacked(att) || len(att.Inputs) != 4 || att.Inputs[1] != "" || att.Inputs[2] != "" || att.Inputs[3] != "am" {
				t.Fatalf("attention = %s, want the packed form with the mask", nodeText(fused, att))
			}
			qkv := fused.Nodes[slicesIndexOp(fused, opQLinear)]
			if qkv.Outputs[0] != att.Inputs[0] || qkv.Inputs[0] != "h" || compiler.QLinearMode(qkv) != compiler.QLinearMode(nodeByName(t, g, "q")) {
				t.Errorf("fused projection %s does not read %%h and feed the attention", nodeText(fused, qkv))
			}
			w, s, b := fused.Initializers[qkv.Inputs[1]], fused.Initializers[qkv.Inputs[2]], fused.Initializers[qkv.Inputs[3]]
			if w.Shape[0] != 16 || w.Shape[1] != 48 || s.Len() != 48 || b.Len() != 48 {
				t.Fatalf("fused weight %v, scale %v, bias %v; want [16, 48], [48], [48]", w.Shape, s.Shape, b.Shape)
			}
			// Column j of part p is column j of the projection's weight.
			for p, name := range []string{"wq", "wk", "wv"} {
				src := g.Initializers[name]
				for r := range 16 {
					for c := range 16 {
						if w.I8[r*48+p*16+c] != src.I8[r*16+c] {
							t.Fatalf("weight [%d, %d] of %s moved", r, c, name)
						}
					}
				}
			}
			if v := valueInfo(fused, qkv.Outputs[0]); v == nil || v.Shape.String() != "[batch, seq, 48]" {
				t.Errorf("fused output record %v", v)
			}
			// Not the same program (one GEMM for three), but the same bits,
			// in exec and in the interpreter alike.
			checkFusedEquivalent(t, g, fused, qattnInputs(), 0, 0.02)
			pu, pf := execProgram(t, g), execProgram(t, fused)
			if gu, gf := strings.Count(pu.String(), "= qgemm.GEMM("), strings.Count(pf.String(), "= qgemm.GEMM("); gu != 4 || gf != 2 {
				t.Errorf("%d GEMMs unfused and %d fused, want 4 and 2:\n%s", gu, gf, pf)
			}
			if !strings.Contains(pf.String(), "qkv_packed") {
				t.Errorf("exec's attention step is not packed:\n%s", pf)
			}
			if runPasses(t, fused, FuseQKV) {
				t.Error("a second run changed the graph")
			}
		})
	}
}

// TestFuseQKVNeedsOneQuantisedInput: projections that quantise their input
// differently read different u8 rows and cannot share a GEMM.
func TestFuseQKVNeedsOneQuantisedInput(t *testing.T) {
	for name, k := range map[string]string{
		"scale":      `act_scale=0.031, act_zero_point=128`,
		"zero point": `act_scale=0.03, act_zero_point=127`,
		"mode":       `act_mode="dynamic"`,
		"activation": staticAct + `, act="gelu"`,
	} {
		t.Run(name, func(t *testing.T) {
			g := qattnGraph(t, staticAct, k, staticAct)
			if runPasses(t, g.Clone(), FuseQKV) {
				t.Errorf("fused projections with different activation handling (K: %s)", k)
			}
		})
	}
}

// TestFuseQKVLeavesSharedProjections: a projection another node also reads
// must stay.
func TestFuseQKVLeavesSharedProjections(t *testing.T) {
	src := strings.Replace(strings.NewReplacer("QMODE", staticAct, "KMODE", staticAct, "VMODE", staticAct).Replace(qattn),
		"output %y: f32[batch, seq, 16]", "output %y: f32[batch, seq, 16]\n  output %k: f32[batch, seq, 16]", 1)
	g := parseGraph(t, src)
	if runPasses(t, g, FuseQKV) {
		t.Errorf("fused a K projection that is also a graph output:\n%s", g.Text())
	}
}

func TestPackedAttentionVerifies(t *testing.T) {
	g := qattnGraph(t, staticAct, staticAct, staticAct)
	fused := applyPass(t, g, FuseQKV)
	att := nodeByName(t, fused, "attention")
	for name, mod := range map[string]func(n *compiler.Node){
		"key present": func(n *compiler.Node) { n.Inputs[1] = "h" },
		"bad flag":    func(n *compiler.Node) { n.Attrs["qkv_packed"] = compiler.IntAttr(2) },
		"unpacked":    func(n *compiler.Node) { delete(n.Attrs, "qkv_packed") },
	} {
		bad := fused.Clone()
		mod(bad.Nodes[slicesIndexNode(fused, att)])
		if err := bad.Verify(); err == nil {
			t.Errorf("%s: the verifier accepts %s", name, nodeText(bad, bad.Nodes[slicesIndexNode(fused, att)]))
		}
	}
}

func slicesIndexOp(g *compiler.Graph, op string) int {
	for i, n := range g.Nodes {
		if n.Op == op {
			return i
		}
	}
	return -1
}

func slicesIndexNode(g *compiler.Graph, n *compiler.Node) int {
	for i, m := range g.Nodes {
		if m == n {
			return i
		}
	}
	return -1
}
