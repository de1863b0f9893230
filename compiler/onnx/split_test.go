package onnx

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// splitModel is one Split of x [2, "n", 7] on axis at opset, into outs
// outputs, with sizes as the split attribute (attr) or as an initializer
// input (sizes without attr), and extra attributes.
func splitModel(opset, axis int64, outs int, sizes []int64, attr bool, extra ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	in := []string{"x"}
	attrs := append([]*onnxpb.AttributeProto{intAttr("axis", axis)}, extra...)
	var inits []*onnxpb.TensorProto
	switch {
	case sizes != nil && attr:
		attrs = append(attrs, intsAttr("split", sizes...))
	case sizes != nil:
		in = append(in, "sizes")
		inits = append(inits, i64Typed("sizes", []int64{int64(len(sizes))}, sizes...))
	}
	var names []string
	var outputs []*onnxpb.ValueInfoProto
	for i := range outs {
		names = append(names, "y"+string(rune('0'+i)))
		outputs = append(outputs, tensorInfo(names[i], onnxpb.TensorProto_FLOAT))
	}
	return model(opset, &onnxpb.GraphProto{Name: proto.String("split"), Node: []*onnxpb.NodeProto{node("Split", "the_split", in, names, attrs...)},
		Initializer: inits, Input: []*onnxpb.ValueInfoProto{tensorInfo("x", onnxpb.TensorProto_FLOAT, 2, "n", 7)}, Output: outputs})
}

// TestSplitIsSlices: Split loads as Slices giving ONNX's parts: sizes as
// an attribute (opset 11) or a constant input (13), equal parts of a
// static or a dynamic dim, and opset 18's num_outputs with a shorter last
// part; a split input the file does not hold as a constant is refused.
func TestSplitIsSlices(t *testing.T) {
	x := compiler.NewTensor(compiler.Float32, 2, 6, 7)
	for i := range x.F32 {
		x.F32[i] = float32(i)
	}
	// parts gives, per output, the [start, end) of the axis it takes.
	for _, c := range []struct {
		name  string
		m     *onnxpb.ModelProto
		axis  int
		parts [][2]int64
	}{
		{"attribute", splitModel(11, 2, 3, []int64{2, 4, 1}, true), 2, [][2]int64{{0, 2}, {2, 6}, {6, 7}}},
		{"input", splitModel(13, -1, 2, []int64{3, 4}, false), 2, [][2]int64{{0, 3}, {3, 7}}},
		{"equal on a dynamic dim", splitModel(13, 1, 3, nil, false), 1, [][2]int64{{0, 2}, {2, 4}, {4, 6}}},
		{"num_outputs, last shorter", splitModel(18, 2, 3, nil, false, intAttr("num_outputs", 3)), 2, [][2]int64{{0, 3}, {3, 6}, {6, 7}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := Decode(marshal(t, c.m), "split.onnx")
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(g.Nodes, func(n *compiler.Node) bool {
				return n.Op != "Slice" && n.Op != "Shape" && n.Op != "Add" && n.Op != "Div" && n.Op != "Mul"
			}) {
				t.Errorf("ops beyond the Slices and their bounds:\n%s", g.Text())
			}
			out, err := interp.Run(g, map[string]*compiler.Tensor{"x": x}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range c.parts {
				y := out["y"+string(rune('0'+i))]
				want := slices.Clone(x.Shape)
				want[c.axis] = p[1] - p[0]
				if !slices.Equal(y.Shape, want) {
					t.Fatalf("part %d shape %v, want %v", i, y.Shape, want)
				}
				k := 0
				for a := range x.Shape[0] {
					for b := range x.Shape[1] {
						for e := range x.Shape[2] {
							idx := [3]int64{a, b, e}
							if idx[c.axis] < p[0] || idx[c.axis] >= p[1] {
								continue
							}
							if v := x.F32[(a*x.Shape[1]+b)*x.Shape[2]+e]; y.F32[k] != v {
								t.Fatalf("part %d[%d] = %g, want %g", i, k, y.F32[k], v)
							}
							k++
						}
					}
				}
			}
		})
	}
	bad := splitModel(13, 2, 2, nil, false)
	bad.Graph.Input = append(bad.Graph.Input, tensorInfo("sizes", onnxpb.TensorProto_INT64, 2))
	bad.Graph.Node[0].Input = append(bad.Graph.Node[0].Input, "sizes")
	if _, err := Decode(marshal(t, bad), "split.onnx"); !errors.Is(err, ErrUnsupportedFeature) {
		t.Errorf("split sizes as a graph input: err = %v, want ErrUnsupportedFeature", err)
	}
}
