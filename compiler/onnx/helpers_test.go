package onnx

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// Builders for small ModelProtos, so tests state exactly what a file holds.

func f32Raw(name string, dims []int64, vals ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: dims, RawData: raw}
}

func i64Typed(name string, dims []int64, vals ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: dims, Int64Data: vals}
}

// tensorInfo builds a tensor ValueInfoProto; dims are int (size) or
// string (dim_param) or nil (unknown).
func tensorInfo(name string, elem onnxpb.TensorProto_DataType, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		switch d := d.(type) {
		case int:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}
		case string:
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(elem)), Shape: shape,
		}}},
	}
}

func node(op, name string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: in, Output: out, Attribute: attrs}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func strAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func floatAttr(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func tensorAttr(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

func model(opset int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("sqc-test"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:        g,
	}
}

// tinyModel is a valid opset-14 model exercising the common paths: a
// symbolic input, raw and typed initializers, Constant forms, and
// attributes of several kinds.
//
//	z = Gemm(x, W, B, transB=0, alpha=1)     x: f32[batch, 4]
//	axes = Constant(value_ints=[1])
//	u = Unsqueeze(z, axes)                   u: f32[batch, 1, 2]
//	half = Constant(value=f32 scalar 0.5)
//	y = Mul(u, half)
func tinyModel() *onnxpb.ModelProto {
	return model(14, &onnxpb.GraphProto{
		Name: proto.String("tiny"),
		Node: []*onnxpb.NodeProto{
			node("Gemm", "gemm", []string{"x", "W", "B"}, []string{"z"}, intAttr("transB", 0), floatAttr("alpha", 1)),
			node("Constant", "axes", nil, []string{"axes"}, intsAttr("value_ints", 1)),
			node("Unsqueeze", "unsq", []string{"z", "axes"}, []string{"u"}),
			node("Constant", "half", nil, []string{"half"}, tensorAttr("value", f32Raw("", nil, 0.5))),
			node("Mul", "mul", []string{"u", "half"}, []string{"y"}),
		},
		Initializer: []*onnxpb.TensorProto{
			f32Raw("W", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8),
			{Name: proto.String("B"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: []int64{2}, FloatData: []float32{0.25, -0.25}},
		},
		Input:     []*onnxpb.ValueInfoProto{tensorInfo("x", onnxpb.TensorProto_FLOAT, "batch", 4)},
		Output:    []*onnxpb.ValueInfoProto{tensorInfo("y", onnxpb.TensorProto_FLOAT, "batch", 1, 2)},
		ValueInfo: []*onnxpb.ValueInfoProto{tensorInfo("z", onnxpb.TensorProto_FLOAT, "batch", 2)},
	})
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sharedDir returns ../shared relative to the repository (module) root,
// or skips the test when it is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test directory; cannot locate ../shared")
		}
		dir = parent
	}
	shared := filepath.Join(filepath.Dir(dir), "shared")
	if _, err := os.Stat(filepath.Join(shared, "models")); err != nil {
		t.Skipf("shared test models not found at %s (expected ../shared next to the repository): %v", shared, err)
	}
	return shared
}

func floatsAttrOf(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v}
}

// errorNames reports whether err's message mentions s.
func errorNames(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}
