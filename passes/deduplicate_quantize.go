package passes

import (
	"fmt"
	"math"

	"github.com/sqc-dev/sqc/compiler"
)

// DeduplicateQuantize keeps one sqc.Quantize per value and parameters
// (static with one scale and zero point, compared bit for bit, or
// dynamic): the first, which runs before every other of its kind, and
// whose outputs the readers of the others then read. The BERT Q, K and V
// projections, or any GEMMs sharing an input, so quantise it once, as the
// INT8 engine did when it decided this at lowering (its quantKey).
var DeduplicateQuantize = Pass{Name: "DeduplicateQuantize", Run: deduplicateQuantize, Level: compiler.VerifyQuantized}

// quantForm identifies one quantised form of a value.
type quantForm struct {
	value     string
	dynamic   bool
	scaleBits uint32
	zeroPoint int64
}

func formOf(n *compiler.Node) quantForm {
	f := quantForm{value: n.Inputs[0]}
	if compiler.QuantizeMode(n) == compiler.QLinearDynamic {
		f.dynamic = true
		return f
	}
	f.scaleBits = math.Float32bits(n.AttrFloat("scale", 0))
	f.zeroPoint = n.AttrInt("zero_point", 0)
	return f
}

func deduplicateQuantize(g *compiler.Graph) (bool, error) {
	var cur cursor
	defer cur.annotate()
	return keepFirst(g, &cur, func(n *compiler.Node) (string, bool) {
		if n.Op != "sqc.Quantize" {
			return "", false
		}
		return fmt.Sprintf("%+v/%d", formOf(n), len(n.Outputs)), true
	}), nil
}

// renamedInput returns a copy of n reading to as input i (nodes may be
// shared with the graph a pass list was given a clone of).
func renamedInput(n *compiler.Node, i int, to string) *compiler.Node {
	c := n.Clone()
	c.Inputs[i] = to
	return c
}
