package passes

import (
	"math"

	"github.com/x448/float16"

	"github.com/sqc-dev/sqc/compiler"
)

// FuseGelu replaces GELU written out in elementwise ops by sqc.Gelu.
//
// The erf form, as torch.onnx exports nn.GELU() and HF's gelu:
//
//	x * 0.5 * (1 + erf(x / sqrt(2)))
//	= Mul(Mul(x, Add(Erf(Div(x, 1.4142135)), 1)), 0.5)
//
// is matched with the Div written as Mul(x, 0.70710678), with the operands
// of each Add and Mul in either order, and with the three factors x, 0.5 and
// (1 + erf) multiplied in any association. It becomes sqc.Gelu(x).
//
// The tanh form (HF "gelu_new", torch GELU(approximate="tanh")):
//
//	0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//
// with x^3 as Pow(x, 3) or Mul(x, Mul(x, x)), becomes
// sqc.Gelu(x) {approximate: "tanh"}.
var FuseGelu = Pass{Name: "FuseGelu", Run: fuseGelu}

const (
	// geluConstTolerance is the relative slack on 0.5, 1, 3, sqrt(2),
	// 1/sqrt(2), sqrt(2/pi) and 0.044715: exporters write them as float32,
	// whose rounding is ~6e-8 relative. A float16 model (read widened to
	// float32) holds them rounded to float16 instead, up to 4.9e-4 off
	// (sqrt(2) is 1.4140625, 0.044715 is 0.04470825): near takes exactly
	// that rounding of the float32 constant too, and nothing else that
	// far off.
	geluConstTolerance = 1e-5
	opGelu             = "sqc.Gelu"
)

func fuseGelu(g *compiler.Graph) (bool, error) {
	var cur cursor // names the node in a panic (see Run)
	defer cur.annotate()
	ix := newIndex(g)
	nm := g.Namer()
	repl := map[*compiler.Node]*compiler.Node{}
	for _, n := range g.Nodes {
		cur.n = n
		var x string
		var sink *compiler.Node
		approximate := ""
		switch n.Op {
		case "Erf":
			x, sink = matchErfGelu(ix, n)
		case "Tanh":
			x, sink = matchTanhGelu(ix, n)
			approximate = compiler.GeluTanh
		}
		if sink == nil || repl[sink] != nil || !isFloat32(g, x) {
			continue
		}
		fused := &compiler.Node{
			Name:    nm.Fresh(sink.Name + "/Gelu"),
			Op:      opGelu,
			Inputs:  []string{x},
			Outputs: []string{sink.Outputs[0]},
		}
		if approximate != "" {
			fused.Attrs = map[string]compiler.Attr{"approximate": compiler.StringAttr(approximate)}
		}
		repl[sink] = fused
	}
	replaceNodes(g, repl)
	if len(repl) > 0 {
		removeDead(g)
	}
	return len(repl) > 0, nil
}

// matchErfGelu matches the erf form around its Erf node and returns x and
// the chain's last node.
func matchErfGelu(ix *index, erf *compiler.Node) (string, *compiler.Node) {
	x, ok := "", false
	if div := ix.producedBy(erf.Inputs[0], "Div"); div != nil && ix.geluConst(div.Inputs[1], math.Sqrt2) {
		x, ok = div.Inputs[0], true
	} else if mul := ix.producedBy(erf.Inputs[0], "Mul"); mul != nil {
		var c float64
		x, c, ok = splitConstOperand(ix, mul)
		ok = ok && near(c, 1/math.Sqrt2)
	}
	if !ok || ix.uses(erf.Inputs[0]) != 1 {
		return "", nil
	}
	onePlus := ix.onlyConsumer(erf.Outputs[0])
	if onePlus == nil || onePlus.Op != "Add" {
		return "", nil
	}
	if other, ok := otherInput(onePlus, erf.Outputs[0]); !ok || !ix.geluConst(other, 1) {
		return "", nil
	}
	return matchHalfXProduct(ix, x, onePlus.Outputs[0])
}

// matchTanhGelu matches the tanh form around its Tanh node.
func matchTanhGelu(ix *index, tanh *compiler.Node) (string, *compiler.Node) {
	scaled := ix.producedBy(tanh.Inputs[0], "Mul")
	if scaled == nil || ix.uses(tanh.Inputs[0]) != 1 {
		return "", nil
	}
	inner, c, ok := splitConstOperand(ix, scaled)
	if !ok || !near(c, math.Sqrt(2/math.Pi)) {
		return "", nil
	}
	// inner = x + 0.044715 * x^3
	sum := ix.producedBy(inner, "Add")
	if sum == nil || ix.uses(inner) != 1 {
		return "", nil
	}
	for k := range 2 {
		x, cubeTerm := sum.Inputs[k], sum.Inputs[1-k]
		if isCubeTerm(ix, cubeTerm, x) {
			onePlus := ix.onlyConsumer(tanh.Outputs[0])
			if onePlus == nil || onePlus.Op != "Add" {
				return "", nil
			}
			if other, ok := otherInput(onePlus, tanh.Outputs[0]); !ok || !ix.geluConst(other, 1) {
				return "", nil
			}
			return matchHalfXProduct(ix, x, onePlus.Outputs[0])
		}
	}
	return "", nil
}

// isCubeTerm reports whether name computes 0.044715 * x^3.
func isCubeTerm(ix *index, name, x string) bool {
	mul := ix.producedBy(name, "Mul")
	if mul == nil {
		return false
	}
	cube, c, ok := splitConstOperand(ix, mul)
	if !ok || !near(c, 0.044715) {
		return false
	}
	if pow := ix.producedBy(cube, "Pow"); pow != nil {
		return pow.Inputs[0] == x && ix.geluConst(pow.Inputs[1], 3)
	}
	// Mul(x, Mul(x, x)) in either order.
	outer := ix.producedBy(cube, "Mul")
	if outer == nil {
		return false
	}
	sq, ok := otherInput(outer, x)
	if !ok {
		return false
	}
	square := ix.producedBy(sq, "Mul")
	return square != nil && square.Inputs[0] == x && square.Inputs[1] == x
}

// matchHalfXProduct matches the product x * 0.5 * f, where f is the value
// named factor, in any of the associations exporters produce, and returns
// x and the product's last Mul.
func matchHalfXProduct(ix *index, x, factor string) (string, *compiler.Node) {
	m1 := ix.onlyConsumer(factor)
	if m1 == nil || m1.Op != "Mul" {
		return "", nil
	}
	other, ok := otherInput(m1, factor)
	if !ok {
		return "", nil
	}
	switch {
	case other == x:
		// (x * f) * 0.5
		if m2 := ix.onlyConsumer(m1.Outputs[0]); m2 != nil && m2.Op == "Mul" {
			if c, ok := otherInput(m2, m1.Outputs[0]); ok && ix.geluConst(c, 0.5) {
				return x, m2
			}
		}
	case ix.geluConst(other, 0.5):
		// x * (f * 0.5)
		if m2 := ix.onlyConsumer(m1.Outputs[0]); m2 != nil && m2.Op == "Mul" {
			if y, ok := otherInput(m2, m1.Outputs[0]); ok && y == x {
				return x, m2
			}
		}
	default:
		// (x * 0.5) * f
		if half := ix.producedBy(other, "Mul"); half != nil && ix.uses(other) == 1 {
			if y, c, ok := splitConstOperand(ix, half); ok && y == x && near(c, 0.5) {
				return x, m1
			}
		}
	}
	return "", nil
}

// near reports whether constant got is want as an exporter writes it:
// within geluConstTolerance, or want rounded to float32 then float16 (as
// float16 converters round float32 models), exactly.
func near(got, want float64) bool {
	return math.Abs(got-want) <= geluConstTolerance*math.Abs(want) ||
		got == float64(float16.Fromfloat32(float32(want)).Float32())
}

// geluConst reports whether name is a scalar constant near want.
func (ix *index) geluConst(name string, want float64) bool {
	v, ok := ix.scalar(name)
	return ok && near(v, want)
}
