package onnx

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// Causes specific to ONNX input. They are wrapped in compiler.InputError
// like compiler's own sentinels, so errors.Is(err, compiler.ErrBadInput)
// holds for them too.
var (
	// ErrUnsupportedDType: an element type sqc does not handle (float16,
	// bfloat16, string, uint16, complex, ...).
	ErrUnsupportedDType = errors.New("unsupported dtype")
	// ErrUnsupportedFeature: a valid ONNX construct sqc does not handle
	// (sparse tensors, sequence or map types, graph-valued attributes, ...).
	ErrUnsupportedFeature = errors.New("unsupported ONNX feature")
)

// UnsupportedNode is one node whose op sqc cannot compile.
type UnsupportedNode struct {
	Node   string // node name, or "#<index>" when the node is unnamed
	Op     string // op_type
	Domain string // "" for the default ONNX domain
	Opset  int64  // opset of the node's domain (0 when the model imports none)
}

func (u UnsupportedNode) String() string {
	return fmt.Sprintf("node %s: %s (opset %d)", u.Node, u.qualifiedOp(), u.Opset)
}

// qualifiedOp is the op with its domain before it, if any
// (com.microsoft.Attention).
func (u UnsupportedNode) qualifiedOp() string {
	if u.Domain != "" {
		return u.Domain + "." + u.Op
	}
	return u.Op
}

// UnsupportedOpsError lists every unsupported node of a model at once, so a
// user sees the whole gap in one run. It wraps compiler.ErrUnsupportedOp.
// Its message groups the nodes by op (an ONNX Runtime export can have a
// hundred of one kind), names a few of each, and says what to do where the
// ops tell a known story: a model already quantised, or one rewritten by
// ONNX Runtime's transformer optimizer.
type UnsupportedOpsError struct {
	Nodes []UnsupportedNode
}

// unsupportedNamesShown is how many node names the message gives per op.
const unsupportedNamesShown = 3

// quantizedOps are the ops of models ONNX Runtime's quantiser has
// quantised in a form sqc does not read: its QOperator format (QLinear*,
// *Integer convolutions) and com.microsoft's fused ones. Dynamic
// quantisation (DynamicQuantizeLinear, MatMulInteger, DequantizeLinear)
// and the QDQ format (QuantizeLinear, DequantizeLinear) are read, and
// dequantised by passes.DequantizeIntegerOps.
var quantizedOps = map[string]bool{
	"QLinearMatMul": true, "ConvInteger": true, "QLinearConv": true,
	"com.microsoft.QAttention": true, "com.microsoft.QGemm": true, "com.microsoft.DynamicQuantizeLSTM": true,
	"com.microsoft.QuantizeLinear": true, "com.microsoft.DequantizeLinear": true,
}

func (e *UnsupportedOpsError) Error() string {
	type group struct {
		op    string // with its domain
		opset int64
		nodes []string
	}
	var groups []*group
	byOp := map[string]*group{}
	quantized, msDomain := false, false
	for _, n := range e.Nodes {
		op := n.qualifiedOp()
		g := byOp[op]
		if g == nil {
			g = &group{op: op, opset: n.Opset}
			byOp[op] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, n.Node)
		quantized = quantized || quantizedOps[op]
		msDomain = msDomain || n.Domain == "com.microsoft"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v in %d node(s): ", compiler.ErrUnsupportedOp, len(e.Nodes))
	for i, g := range groups {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (opset %d) in ", g.op, g.opset)
		if len(g.nodes) == 1 {
			fmt.Fprintf(&b, "node %s", g.nodes[0])
			continue
		}
		shown := g.nodes[:min(len(g.nodes), unsupportedNamesShown)]
		fmt.Fprintf(&b, "%d nodes: %s", len(g.nodes), strings.Join(shown, ", "))
		if more := len(g.nodes) - len(shown); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
	}
	switch {
	case quantized:
		b.WriteString(". The model is quantised already, in a form sqc does not read (ONNX Runtime's QOperator format or its fused quantised ops " +
			"made these nodes); sqc reads FP32 models, ONNX Runtime's dynamic quantisation (quantize_dynamic: DynamicQuantizeLinear, MatMulInteger, " +
			"DequantizeLinear) and its QDQ format (QuantizeLinear, DequantizeLinear), and quantises them itself: give it the FP32 export " +
			"(e.g. onnx/model.onnx) or a dynamically quantised or QDQ one (model_quantized.onnx)")
	case msDomain:
		fmt.Fprintf(&b, ". com.microsoft ops are ONNX Runtime's own, made by its transformer optimizer; sqc reads those of its BERT fusions (%s), not these: "+
			"give sqc the export before that optimisation (e.g. onnx/model.onnx)", strings.Join(slices.Sorted(maps.Keys(contribExpanders)), ", "))
	}
	return b.String()
}

func (e *UnsupportedOpsError) Unwrap() error { return compiler.ErrUnsupportedOp }
