package passes

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// FuseQLinearEpilogues moves the elementwise work after an sqc.QLinear into
// the QLinear's epilogue (compiler/ops_sqc_quant.go), in the IR, where
// compiler/exec used to decide it at lowering time:
//
//   - QLinear (act "none", no residual) whose output only an activation the
//     epilogue has reads (compiler.EpilogueAct: sqc.Gelu of either form,
//     Relu) becomes QLinear {act="gelu", "gelu_tanh" or "relu"} producing
//     the activation's output;
//   - QLinear (no residual, any act) whose output only an Add reads, the
//     Add's other operand being an f32 value of surely the same shape that
//     is computed before the QLinear runs (a graph input, an initializer or
//     an earlier node's output), takes that operand as its residual input
//     and produces the Add's output: BERT's "dense + residual" before each
//     LayerNorm;
//   - likewise a QLinear whose output only a Mul reads, on the same
//     conditions for the Mul's other operand, takes it as a residual with
//     residual_op "mul": the gated feed-forward's act(x·W1) · (x·W2)
//     (ModernBERT, JinaBERT), fused into the epilogue of whichever of its
//     two QLinears runs second. The epilogue multiplies in float32 as the
//     Mul did (IEEE multiplication commutes), and the Mul and, once
//     WriteU8Directly has the QLinear write u8, the Quantize after it are
//     gone.
//
// The conditions are exactly those under which compiler/exec fused these
// nodes into the GEMM's epilogue before this pass existed (its
// planFusions), so exec lowers the fused graph to the very same steps —
// the same GEMM with the same Epilogue, writing the same buffer — and the
// bits cannot change: the epilogue computes gelu(v) with qgemm's float32
// erf-GELU, the kernel nn.Gelu runs for a standalone sqc.Gelu (the tanh
// form with nn.GeluTanh's, relu(v) with qgemm.Relu, which nn.Relu runs), and
// v + residual is the Add with its operands swapped, which IEEE addition
// allows. The FP32 interpreter's standalone sqc.Gelu is float64, so
// there the fused graph differs from the unfused one by float32 rounding
// (its Relu is exact either way).
//
// The fused node keeps the QLinear's name and position (its residual is
// computed earlier, and the Gelu and Add it replaces came later), so no
// reordering is needed.
var FuseQLinearEpilogues = Pass{Name: "FuseQLinearEpilogues", Run: fuseQLinearEpilogues, Level: compiler.VerifyQuantized}

func fuseQLinearEpilogues(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	// at is where a value is computed: its producer's position, -1 for
	// graph inputs and initializers. Values a fused QLinear now produces
	// are computed at the QLinear's position.
	at := func(v string) int {
		if p := ix.producer[v]; p != nil {
			return ix.position[p]
		}
		return -1
	}
	repl := map[*compiler.Node]*compiler.Node{}
	for i, n := range g.Nodes {
		cur.n = n
		if n.Op != opQLinear {
			continue
		}
		out := n.Outputs[0]
		act, err := compiler.QLinearAct(n)
		if err != nil {
			return false, fmt.Errorf("node %q: %w", n.Name, err)
		}
		residual := qlinearResidual(n)
		var absorbed []*compiler.Node
		if act == qgemm.ActNone && residual == "" {
			if c := ix.onlyConsumer(out); c != nil && isFloat32(g, out) {
				if a, ok := compiler.EpilogueAct(c); ok {
					act, out = a, c.Outputs[0]
					absorbed = append(absorbed, c)
				}
			}
		}
		mul := false
		if residual == "" {
			if c := ix.onlyConsumer(out); c != nil && (c.Op == "Add" || c.Op == "Mul") {
				if other, ok := otherInput(c, out); ok && other != out && isFloat32(g, other) && sameShapeSurely(g, other, out) && at(other) < i {
					residual, out, mul = other, c.Outputs[0], c.Op == "Mul"
					absorbed = append(absorbed, c)
				}
			}
		}
		if len(absorbed) == 0 {
			continue
		}
		fused := n.Clone()
		if fused.Attrs == nil {
			fused.Attrs = map[string]compiler.Attr{}
		}
		compiler.SetQLinearAct(fused, act)
		if residual != "" {
			fused.Inputs = qlinearWithResidual(n.Inputs, residual)
		}
		if mul {
			fused.Attrs["residual_op"] = compiler.StringAttr(compiler.QLinearResidualMul)
		}
		fused.Outputs = []string{out}
		repl[n] = fused
		for _, c := range absorbed {
			repl[c] = nil
		}
		ix.producer[out] = n // computed at n's position from now on
	}
	if len(repl) == 0 {
		return false, nil
	}
	replaceNodes(g, repl)
	removeDead(g) // the intermediate values' records
	return true, nil
}

// qlinearResidual is the residual input of an sqc.QLinear ("" if none).
func qlinearResidual(n *compiler.Node) string {
	if len(n.Inputs) > 4 {
		return n.Inputs[4]
	}
	return ""
}

// qlinearWithResidual returns a QLinear's inputs with residual as input 4
// (bias omitted as "" when absent).
func qlinearWithResidual(inputs []string, residual string) []string {
	out := make([]string, 5)
	copy(out, inputs)
	out[4] = residual
	return out
}

// sameShapeSurely reports whether two values certainly have one shape: both
// known, of one rank, each dimension the same size or the same symbol.
func sameShapeSurely(g *compiler.Graph, a, b string) bool {
	va, vb := valueInfo(g, a), valueInfo(g, b)
	if va == nil || vb == nil || va.Shape == nil || vb.Shape == nil || len(va.Shape) != len(vb.Shape) {
		return false
	}
	for i, x := range va.Shape {
		y := vb.Shape[i]
		if !(x.Param != "" && x.Param == y.Param) && !(x.Known() && y.Known() && x.Size == y.Size) {
			return false
		}
	}
	return true
}
