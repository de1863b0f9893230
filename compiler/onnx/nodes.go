package onnx

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

func (b *builder) nodes(g *compiler.Graph, gp *onnxpb.GraphProto) error {
	g.Nodes = make([]*compiler.Node, 0, len(gp.GetNode()))
	for i, np := range gp.GetNode() {
		where := nodeObject(i, np)
		n := &compiler.Node{
			Name:    np.GetName(),
			Op:      np.GetOpType(),
			Inputs:  slices.Clone(np.GetInput()),
			Outputs: slices.Clone(np.GetOutput()),
			Attrs:   make(map[string]compiler.Attr, len(np.GetAttribute())),
		}
		if isContribOp(np.GetDomain(), n.Op) {
			n.Op = contribOp(n.Op) // until expandContrib replaces it
		} else if isFunctionOp(np.GetDomain(), n.Op) {
			n.Op = functionOp(n.Op) // likewise
		}
		for _, ap := range np.GetAttribute() {
			name := ap.GetName()
			if name == "" {
				return b.bad(where, fmt.Errorf("%w: attribute without a name", compiler.ErrMalformed))
			}
			if _, dup := n.Attrs[name]; dup {
				return b.bad(where+" attribute "+name, fmt.Errorf("%w: attribute %q given twice", compiler.ErrDuplicate, name))
			}
			a, err := b.attr(ap)
			if err != nil {
				return b.bad(where+" attribute "+name, err)
			}
			n.Attrs[name] = a
		}
		b.widenCast(n)
		if n.Op == "Constant" {
			if err := normalizeConstant(n); err != nil {
				return b.bad(where, err)
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	return nil
}

// attr converts one attribute. Old files may leave the type unset; it is
// then inferred from the one value field present.
func (b *builder) attr(ap *onnxpb.AttributeProto) (compiler.Attr, error) {
	if ap.GetRefAttrName() != "" {
		return compiler.Attr{}, fmt.Errorf("%w: attribute refers to function attribute %q", ErrUnsupportedFeature, ap.GetRefAttrName())
	}
	typ := ap.GetType()
	if typ == onnxpb.AttributeProto_UNDEFINED {
		typ = inferAttrType(ap)
	}
	switch typ {
	case onnxpb.AttributeProto_FLOAT:
		return compiler.Attr{Kind: compiler.AttrFloat, Float: ap.GetF()}, nil
	case onnxpb.AttributeProto_INT:
		return compiler.Attr{Kind: compiler.AttrInt, Int: ap.GetI()}, nil
	case onnxpb.AttributeProto_STRING:
		return compiler.Attr{Kind: compiler.AttrString, String: string(ap.GetS())}, nil
	case onnxpb.AttributeProto_FLOATS:
		return compiler.Attr{Kind: compiler.AttrFloats, Floats: slices.Clone(ap.GetFloats())}, nil
	case onnxpb.AttributeProto_INTS:
		return compiler.Attr{Kind: compiler.AttrInts, Ints: slices.Clone(ap.GetInts())}, nil
	case onnxpb.AttributeProto_STRINGS:
		s := make([]string, len(ap.GetStrings()))
		for i, v := range ap.GetStrings() {
			s[i] = string(v)
		}
		return compiler.Attr{Kind: compiler.AttrStrings, Strings: s}, nil
	case onnxpb.AttributeProto_TENSOR:
		if ap.GetT() == nil {
			return compiler.Attr{}, fmt.Errorf("%w: TENSOR attribute holds no tensor", compiler.ErrMalformed)
		}
		t, err := decodeTensor(ap.GetT(), b.ext)
		if err != nil {
			return compiler.Attr{}, err
		}
		b.widened.note(ap.GetT().GetDataType(), widenedTensor)
		return compiler.Attr{Kind: compiler.AttrTensor, Tensor: t}, nil
	case onnxpb.AttributeProto_UNDEFINED:
		return compiler.Attr{}, fmt.Errorf("%w: attribute has neither a type nor a value", compiler.ErrMalformed)
	}
	return compiler.Attr{}, fmt.Errorf("%w: %s attribute", ErrUnsupportedFeature, typ)
}

func inferAttrType(ap *onnxpb.AttributeProto) onnxpb.AttributeProto_AttributeType {
	switch {
	case ap.F != nil:
		return onnxpb.AttributeProto_FLOAT
	case ap.I != nil:
		return onnxpb.AttributeProto_INT
	case ap.S != nil:
		return onnxpb.AttributeProto_STRING
	case ap.T != nil:
		return onnxpb.AttributeProto_TENSOR
	case ap.G != nil:
		return onnxpb.AttributeProto_GRAPH
	case ap.SparseTensor != nil:
		return onnxpb.AttributeProto_SPARSE_TENSOR
	case ap.Tp != nil:
		return onnxpb.AttributeProto_TYPE_PROTO
	case len(ap.Floats) > 0:
		return onnxpb.AttributeProto_FLOATS
	case len(ap.Ints) > 0:
		return onnxpb.AttributeProto_INTS
	case len(ap.Strings) > 0:
		return onnxpb.AttributeProto_STRINGS
	case len(ap.Tensors) > 0:
		return onnxpb.AttributeProto_TENSORS
	case len(ap.Graphs) > 0:
		return onnxpb.AttributeProto_GRAPHS
	case len(ap.SparseTensors) > 0:
		return onnxpb.AttributeProto_SPARSE_TENSORS
	case len(ap.TypeProtos) > 0:
		return onnxpb.AttributeProto_TYPE_PROTOS
	}
	return onnxpb.AttributeProto_UNDEFINED
}

// normalizeConstant rewrites a Constant node's one value attribute
// (value, value_float, value_floats, value_int, value_ints) into a single
// AttrTensor "value", so every later stage handles one form.
func normalizeConstant(n *compiler.Node) error {
	if len(n.Attrs) != 1 {
		return fmt.Errorf("%w: Constant needs exactly one value attribute, has %d", compiler.ErrMalformed, len(n.Attrs))
	}
	for name, a := range n.Attrs {
		var t *compiler.Tensor
		want := compiler.AttrTensor
		switch name {
		case "value":
			t = a.Tensor
		case "value_float":
			want = compiler.AttrFloat
			t = &compiler.Tensor{DType: compiler.Float32, Shape: []int64{}, F32: []float32{a.Float}}
		case "value_floats":
			want = compiler.AttrFloats
			t = &compiler.Tensor{DType: compiler.Float32, Shape: []int64{int64(len(a.Floats))}, F32: a.Floats}
		case "value_int":
			want = compiler.AttrInt
			t = &compiler.Tensor{DType: compiler.Int64, Shape: []int64{}, I64: []int64{a.Int}}
		case "value_ints":
			want = compiler.AttrInts
			t = &compiler.Tensor{DType: compiler.Int64, Shape: []int64{int64(len(a.Ints))}, I64: a.Ints}
		case "value_string", "value_strings":
			return fmt.Errorf("%w: Constant of strings (%s)", ErrUnsupportedDType, name)
		default:
			return fmt.Errorf("%w: Constant has unknown attribute %q", compiler.ErrMalformed, name)
		}
		if a.Kind != want {
			return fmt.Errorf("%w: Constant attribute %q has the wrong type", compiler.ErrMalformed, name)
		}
		n.Attrs = map[string]compiler.Attr{"value": {Kind: compiler.AttrTensor, Tensor: t}}
	}
	return nil
}
