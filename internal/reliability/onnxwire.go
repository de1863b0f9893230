package reliability

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A hand-rolled ONNX writer. compiler/onnx's generated protobuf types are
// internal to that package, and tests here must be able to write what no
// well-behaved exporter would (two initializers of one name, a cycle, a
// header that lies about its length), so ModelProto bytes are put
// together field by field with protowire. Field numbers are onnx.proto's.

// ONNX TensorProto.DataType values used here.
const (
	onnxFloat = 1
	onnxInt64 = 7
)

// onnxTensor is a TensorProto: F32 goes to raw_data (little-endian), I64
// to int64_data.
type onnxTensor struct {
	Name  string
	Dims  []int64
	DType int32
	F32   []float32
	I64   []int64
	// Raw, when non-nil, is written as raw_data instead of F32 (to make
	// its length disagree with Dims).
	Raw []byte
}

func (t onnxTensor) marshal() []byte {
	var b []byte
	if len(t.Dims) > 0 {
		var packed []byte
		for _, d := range t.Dims {
			packed = protowire.AppendVarint(packed, uint64(d))
		}
		b = appendBytes(b, 1, packed) // dims
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType) // data_type
	b = protowire.AppendVarint(b, uint64(t.DType))
	if len(t.I64) > 0 {
		var packed []byte
		for _, v := range t.I64 {
			packed = protowire.AppendVarint(packed, uint64(v))
		}
		b = appendBytes(b, 7, packed) // int64_data
	}
	if t.Name != "" {
		b = appendBytes(b, 8, []byte(t.Name)) // name
	}
	raw := t.Raw
	if raw == nil && t.F32 != nil {
		raw = make([]byte, 4*len(t.F32))
		for i, v := range t.F32 {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	}
	if raw != nil {
		b = appendBytes(b, 9, raw) // raw_data
	}
	return b
}

// onnxAttr is an AttributeProto of type INT or INTS.
type onnxAttr struct {
	Name string
	Int  *int64
	Ints []int64
}

func (a onnxAttr) marshal() []byte {
	b := appendBytes(nil, 1, []byte(a.Name))
	if a.Int != nil {
		b = protowire.AppendTag(b, 3, protowire.VarintType) // i
		b = protowire.AppendVarint(b, uint64(*a.Int))
		b = protowire.AppendTag(b, 20, protowire.VarintType) // type = INT
		return protowire.AppendVarint(b, 2)
	}
	for _, v := range a.Ints {
		b = protowire.AppendTag(b, 8, protowire.VarintType) // ints
		b = protowire.AppendVarint(b, uint64(v))
	}
	b = protowire.AppendTag(b, 20, protowire.VarintType) // type = INTS
	return protowire.AppendVarint(b, 7)
}

// onnxNode is a NodeProto of the default domain.
type onnxNode struct {
	Name, Op string
	In, Out  []string
	Attrs    []onnxAttr
}

func (n onnxNode) marshal() []byte {
	var b []byte
	for _, s := range n.In {
		b = appendBytes(b, 1, []byte(s))
	}
	for _, s := range n.Out {
		b = appendBytes(b, 2, []byte(s))
	}
	b = appendBytes(b, 3, []byte(n.Name))
	b = appendBytes(b, 4, []byte(n.Op))
	for _, a := range n.Attrs {
		b = appendBytes(b, 5, a.marshal())
	}
	return b
}

// onnxValue is a ValueInfoProto of tensor type; a string dim is a
// dim_param, an int64 a dim_value.
type onnxValue struct {
	Name  string
	DType int32
	Dims  []any
}

func (v onnxValue) marshal() []byte {
	var shape []byte
	for _, d := range v.Dims {
		var dim []byte
		switch d := d.(type) {
		case string:
			dim = appendBytes(dim, 2, []byte(d))
		case int:
			dim = protowire.AppendTag(dim, 1, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(d))
		}
		shape = appendBytes(shape, 1, dim)
	}
	tensorType := protowire.AppendTag(nil, 1, protowire.VarintType) // elem_type
	tensorType = protowire.AppendVarint(tensorType, uint64(v.DType))
	tensorType = appendBytes(tensorType, 2, shape)
	typ := appendBytes(nil, 1, tensorType) // TypeProto.tensor_type
	b := appendBytes(nil, 1, []byte(v.Name))
	return appendBytes(b, 2, typ)
}

// onnxModel is a ModelProto with one graph and a default-domain opset.
type onnxModel struct {
	Opset        int64
	Nodes        []onnxNode
	Initializers []onnxTensor
	Inputs       []onnxValue
	Outputs      []onnxValue
}

func (m onnxModel) marshal() []byte {
	var g []byte
	for _, n := range m.Nodes {
		g = appendBytes(g, 1, n.marshal())
	}
	g = appendBytes(g, 2, []byte("tiny"))
	for _, t := range m.Initializers {
		g = appendBytes(g, 5, t.marshal())
	}
	for _, v := range m.Inputs {
		g = appendBytes(g, 11, v.marshal())
	}
	for _, v := range m.Outputs {
		g = appendBytes(g, 12, v.marshal())
	}
	b := protowire.AppendTag(nil, 1, protowire.VarintType) // ir_version
	b = protowire.AppendVarint(b, 8)
	b = appendBytes(b, 2, []byte("sqc-reliability")) // producer_name
	b = appendBytes(b, 7, g)                         // graph
	opset := appendBytes(nil, 1, nil)                // domain ""
	opset = protowire.AppendTag(opset, 2, protowire.VarintType)
	opset = protowire.AppendVarint(opset, uint64(m.Opset))
	return appendBytes(b, 8, opset) // opset_import
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func intPtr(v int64) *int64 { return &v }
