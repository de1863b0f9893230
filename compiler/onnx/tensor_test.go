package onnx

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

func TestDecodeTensorEveryDType(t *testing.T) {
	le := binary.LittleEndian
	dims := []int64{2, 2}
	cases := []struct {
		name string
		tp   *onnxpb.TensorProto
		want *compiler.Tensor
	}{
		{"f32 raw", &onnxpb.TensorProto{DataType: proto.Int32(1), RawData: le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil,
			math.Float32bits(1.5)), math.Float32bits(-2)), math.Float32bits(0)), math.Float32bits(3e-38))},
			&compiler.Tensor{DType: compiler.Float32, F32: []float32{1.5, -2, 0, 3e-38}}},
		{"f32 typed", &onnxpb.TensorProto{DataType: proto.Int32(1), FloatData: []float32{1.5, -2, 0, 3e-38}},
			&compiler.Tensor{DType: compiler.Float32, F32: []float32{1.5, -2, 0, 3e-38}}},
		{"f64 raw", &onnxpb.TensorProto{DataType: proto.Int32(11), RawData: le.AppendUint64(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil,
			math.Float64bits(1.25)), math.Float64bits(-1e300)), 0), math.Float64bits(7))},
			&compiler.Tensor{DType: compiler.Float64, F64: []float64{1.25, -1e300, 0, 7}}},
		{"f64 typed", &onnxpb.TensorProto{DataType: proto.Int32(11), DoubleData: []float64{1.25, -1e300, 0, 7}},
			&compiler.Tensor{DType: compiler.Float64, F64: []float64{1.25, -1e300, 0, 7}}},
		{"i64 raw", &onnxpb.TensorProto{DataType: proto.Int32(7), RawData: le.AppendUint64(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil,
			1), math.MaxUint64), 1<<40), 0)},
			&compiler.Tensor{DType: compiler.Int64, I64: []int64{1, -1, 1 << 40, 0}}},
		{"i64 typed", &onnxpb.TensorProto{DataType: proto.Int32(7), Int64Data: []int64{1, -1, 1 << 40, 0}},
			&compiler.Tensor{DType: compiler.Int64, I64: []int64{1, -1, 1 << 40, 0}}},
		{"i32 raw", &onnxpb.TensorProto{DataType: proto.Int32(6), RawData: le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil,
			7), math.MaxUint32), 1<<30), 0)},
			&compiler.Tensor{DType: compiler.Int32, I32: []int32{7, -1, 1 << 30, 0}}},
		{"i32 typed", &onnxpb.TensorProto{DataType: proto.Int32(6), Int32Data: []int32{7, -1, 1 << 30, 0}},
			&compiler.Tensor{DType: compiler.Int32, I32: []int32{7, -1, 1 << 30, 0}}},
		{"i8 raw", &onnxpb.TensorProto{DataType: proto.Int32(3), RawData: []byte{0x80, 0xff, 0x7f, 0}},
			&compiler.Tensor{DType: compiler.Int8, I8: []int8{-128, -1, 127, 0}}},
		{"i8 typed", &onnxpb.TensorProto{DataType: proto.Int32(3), Int32Data: []int32{-128, -1, 127, 0}},
			&compiler.Tensor{DType: compiler.Int8, I8: []int8{-128, -1, 127, 0}}},
		{"u8 raw", &onnxpb.TensorProto{DataType: proto.Int32(2), RawData: []byte{0, 1, 128, 255}},
			&compiler.Tensor{DType: compiler.Uint8, U8: []uint8{0, 1, 128, 255}}},
		{"u8 typed", &onnxpb.TensorProto{DataType: proto.Int32(2), Int32Data: []int32{0, 1, 128, 255}},
			&compiler.Tensor{DType: compiler.Uint8, U8: []uint8{0, 1, 128, 255}}},
		{"bool raw", &onnxpb.TensorProto{DataType: proto.Int32(9), RawData: []byte{1, 0, 0, 1}},
			&compiler.Tensor{DType: compiler.Bool, Bool: []bool{true, false, false, true}}},
		{"bool typed", &onnxpb.TensorProto{DataType: proto.Int32(9), Int32Data: []int32{1, 0, 0, 1}},
			&compiler.Tensor{DType: compiler.Bool, Bool: []bool{true, false, false, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.tp.Name = proto.String("t_" + c.name)
			c.tp.Dims = dims
			c.want.Shape = dims
			name, got, err := DecodeTensor(marshal(t, c.tp))
			if err != nil {
				t.Fatal(err)
			}
			if name != c.tp.GetName() || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q %+v, want %q %+v", name, got, c.tp.GetName(), c.want)
			}
		})
	}
}

func TestDecodeTensorEdgeCases(t *testing.T) {
	// Scalar: no dims, one element, a non-nil empty shape.
	_, s, err := DecodeTensor(marshal(t, i64Typed("s", nil, 42)))
	if err != nil || s.Shape == nil || len(s.Shape) != 0 || !reflect.DeepEqual(s.I64, []int64{42}) {
		t.Errorf("scalar: %+v %v", s, err)
	}
	// Empty tensor: a zero dim and no data at all.
	_, e, err := DecodeTensor(marshal(t, &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{0, 3}}))
	if err != nil || e.Check() != nil || e.Len() != 0 {
		t.Errorf("empty: %+v %v", e, err)
	}
	for _, c := range []struct {
		name   string
		tp     *onnxpb.TensorProto
		target error
	}{
		{"i8 out of range", &onnxpb.TensorProto{DataType: proto.Int32(3), Dims: []int64{1}, Int32Data: []int32{200}}, compiler.ErrMalformed},
		{"u8 out of range", &onnxpb.TensorProto{DataType: proto.Int32(2), Dims: []int64{1}, Int32Data: []int32{-1}}, compiler.ErrMalformed},
		{"undefined dtype", &onnxpb.TensorProto{Dims: []int64{1}, RawData: []byte{0}}, ErrUnsupportedDType},
		{"uint16", &onnxpb.TensorProto{DataType: proto.Int32(4), Dims: []int64{1}, RawData: []byte{0, 0}}, ErrUnsupportedDType},
		{"future dtype", &onnxpb.TensorProto{DataType: proto.Int32(999), Dims: []int64{1}}, ErrUnsupportedDType},
		{"segment", &onnxpb.TensorProto{DataType: proto.Int32(1), Segment: &onnxpb.TensorProto_Segment{}}, ErrUnsupportedFeature},
		{"external without path", &onnxpb.TensorProto{DataType: proto.Int32(1), Dims: []int64{1},
			DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(), ExternalData: kv("location", "w.bin")}, compiler.ErrMissingTensor},
	} {
		_, _, err := DecodeTensor(marshal(t, c.tp))
		wantBad(t, err, c.target, "")
	}
}

func kv(pairs ...string) []*onnxpb.StringStringEntryProto {
	var out []*onnxpb.StringStringEntryProto
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &onnxpb.StringStringEntryProto{Key: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	return out
}

func TestLoadTensorFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "input_0.pb")
	data := marshal(t, f32Raw("x", []int64{1, 3}, 1, 2, 3))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTensor(path)
	if err != nil || !reflect.DeepEqual(got.F32, []float32{1, 2, 3}) || !reflect.DeepEqual(got.Shape, []int64{1, 3}) {
		t.Fatalf("LoadTensor: %+v %v", got, err)
	}
	if err := os.WriteFile(path, data[:len(data)-2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadTensor(path)
	wantBad(t, err, compiler.ErrTruncated, path)
	_, err = LoadTensor(filepath.Join(dir, "absent.pb"))
	wantBad(t, err, compiler.ErrBadInput, "absent.pb")
}

// externalModel writes a model whose W initializer lives in dir/location at
// the given offset, plus that file holding pad bytes and then W's data.
func externalModel(t *testing.T, dir, location string, offset int, entries []*onnxpb.StringStringEntryProto) string {
	t.Helper()
	w := f32Raw("W", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8)
	bin := append(make([]byte, offset), w.RawData...)
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	w.RawData = nil
	w.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	w.ExternalData = entries
	m := tinyModel()
	m.Graph.Initializer[0] = w
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, marshal(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	path := externalModel(t, dir, "weights.bin", 16, kv("location", "weights.bin", "offset", "16", "length", "32"))
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := g.Initializers["W"]; !reflect.DeepEqual(w.F32, []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("W = %v", w.F32)
	}
	// No length: the rest of the file.
	if _, err := Load(externalModel(t, dir, "weights.bin", 8, kv("location", "weights.bin", "offset", "8"))); err != nil {
		t.Errorf("without length: %v", err)
	}
	// A subdirectory is fine.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "weights.bin"), filepath.Join(dir, "sub", "w.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(externalModel(t, dir, "weights.bin", 0, kv("location", "sub/w.bin"))); err != nil {
		t.Errorf("subdirectory: %v", err)
	}

	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.bin"), make([]byte, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(dir, "link.bin")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, filepath.Join(outside, "secret.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		entries []*onnxpb.StringStringEntryProto
		target  error
		says    string
	}{
		{"dotdot", kv("location", rel), compiler.ErrMalformed, "not a path inside"},
		{"absolute", kv("location", filepath.Join(outside, "secret.bin")), compiler.ErrMalformed, "not a path inside"},
		{"symlink out", kv("location", "link.bin"), compiler.ErrMalformed, "link.bin"},
		{"no location", kv("offset", "0"), compiler.ErrMalformed, "no location"},
		{"absent file", kv("location", "nope.bin"), compiler.ErrMissingTensor, "nope.bin"},
		{"past the end", kv("location", "weights.bin", "offset", "8"), compiler.ErrTruncated, "weights.bin"},
		{"wrong length", kv("location", "weights.bin", "length", "31"), compiler.ErrShapeMismatch, "31 bytes"},
		{"bad offset", kv("location", "weights.bin", "offset", "-3"), compiler.ErrMalformed, "offset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := externalModel(t, dir, "weights.bin", 0, c.entries)
			_, err := Load(path)
			wantBad(t, err, c.target, path, "initializer W", c.says)
		})
	}
	// Decode without a path cannot find external files.
	data, err := os.ReadFile(externalModel(t, dir, "weights.bin", 0, kv("location", "weights.bin")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Decode(data, "")
	wantBad(t, err, compiler.ErrMissingTensor, "", "path is unknown")
}
