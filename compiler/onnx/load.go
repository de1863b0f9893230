package onnx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// The default-domain opsets whose op semantics sqc follows. Models outside
// this range are refused unless Options.AllowAnyOpset is set.
const (
	MinOpset = 11
	MaxOpset = 23
)

// ErrUnsupportedOpset: the model's default-domain opset is outside
// MinOpset..MaxOpset.
var ErrUnsupportedOpset = errors.New("unsupported opset")

// Options relax what the loader accepts. The zero value is what Load uses.
type Options struct {
	// AllowAnyOpset accepts a default-domain opset outside MinOpset..MaxOpset.
	// ONNX's backend node tests are single-op models stamped with every
	// opset up to the newest; conformance tests set this and rely on the
	// op list and the interpreter to reject semantics sqc lacks.
	AllowAnyOpset bool
	// AllowNonFinite accepts NaN and Inf in float initializers, which are
	// otherwise refused as a sign of a broken checkpoint.
	AllowNonFinite bool
}

// Load reads an .onnx model file. External data is resolved relative to
// the file's directory.
func Load(path string) (*compiler.Graph, error) { return LoadWith(path, Options{}) }

// LoadWith is Load with Options.
func LoadWith(path string, opts Options) (*compiler.Graph, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeWith(data, path, opts)
}

// Decode parses a serialized ModelProto. path is used only in error
// messages and, through its directory, to find external data; it may be
// "" for a self-contained model.
func Decode(data []byte, path string) (*compiler.Graph, error) {
	return DecodeWith(data, path, Options{})
}

// DecodeWith is Decode with Options.
func DecodeWith(data []byte, path string, opts Options) (*compiler.Graph, error) {
	if len(data) == 0 {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: the file is empty, not an ONNX model", compiler.ErrTruncated))
	}
	var m onnxpb.ModelProto
	if err := unmarshalOptions().Unmarshal(data, &m); err != nil {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: cannot parse as an ONNX ModelProto: %w", wireCause(data), err))
	}
	ext := newExternalData(path)
	defer ext.close()
	b := &builder{file: path, opts: opts, ext: ext, widened: widenings{}}
	return b.model(&m)
}

// LoadTensor reads a file holding one serialized TensorProto, such as the
// input_0.pb and output_0.pb files of ONNX's backend test cases.
func LoadTensor(path string) (*compiler.Tensor, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	_, t, err := decodeTensorFile(data, path)
	return t, err
}

// DecodeTensor parses one serialized TensorProto and returns its name and
// value. Tensors whose data is external cannot be resolved here; use
// LoadTensor for those.
func DecodeTensor(data []byte) (name string, t *compiler.Tensor, err error) {
	return decodeTensorFile(data, "")
}

func decodeTensorFile(data []byte, path string) (string, *compiler.Tensor, error) {
	if len(data) == 0 {
		return "", nil, compiler.BadInput(path, "", fmt.Errorf("%w: the file is empty, not a TensorProto", compiler.ErrTruncated))
	}
	var tp onnxpb.TensorProto
	if err := unmarshalOptions().Unmarshal(data, &tp); err != nil {
		return "", nil, compiler.BadInput(path, "", fmt.Errorf("%w: cannot parse as an ONNX TensorProto: %w", wireCause(data), err))
	}
	ext := newExternalData(path)
	defer ext.close()
	t, err := decodeTensor(&tp, ext)
	if err != nil {
		return "", nil, compiler.BadInput(path, tensorObject(tp.GetName()), err)
	}
	return tp.GetName(), t, nil
}

func tensorObject(name string) string {
	if name == "" {
		return ""
	}
	return "tensor " + name
}

// readFile reads path, reporting failure as bad input naming the file
// (without repeating the path that fs.PathError would add).
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, compiler.BadInput(path, "", err)
	}
	return data, nil
}

// wireCause tells a truncated file from a corrupt one after protobuf has
// refused it. A file cut short leaves its last top-level field incomplete,
// so walking the top-level fields finds an unexpected end; anything else
// is corruption.
func wireCause(data []byte) error {
	for len(data) > 0 {
		_, _, n := protowire.ConsumeField(data)
		if n < 0 {
			if errors.Is(protowire.ParseError(n), io.ErrUnexpectedEOF) {
				return compiler.ErrTruncated
			}
			return compiler.ErrMalformed
		}
		data = data[n:]
	}
	return compiler.ErrMalformed
}

// unmarshalOptions skips unknown fields (newer ONNX releases add some)
// instead of keeping them in memory.
func unmarshalOptions() proto.UnmarshalOptions {
	return proto.UnmarshalOptions{DiscardUnknown: true}
}
