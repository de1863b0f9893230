package onnx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// externalData reads tensor bytes stored outside the model file, as ONNX's
// external data format describes: a "location" relative to the model's
// directory, an optional byte "offset" and "length". Files are opened
// through an os.Root on that directory, so neither ".." nor a symlink can
// reach outside it. The "checksum" key is not verified.
type externalData struct {
	dir  string   // directory of the model or tensor file; "" when unknown
	root *os.Root // opened on first use
}

func newExternalData(path string) *externalData {
	if path == "" {
		return &externalData{}
	}
	return &externalData{dir: filepath.Dir(path)}
}

func (e *externalData) close() {
	if e.root != nil {
		e.root.Close()
		e.root = nil
	}
}

// read returns the wantBytes bytes a tensor's external_data entries point
// at, checking the declared length against wantBytes before reading.
func (e *externalData) read(entries []*onnxpb.StringStringEntryProto, wantBytes int64) ([]byte, error) {
	var location string
	var offset, length int64 = 0, -1
	for _, kv := range entries {
		switch kv.GetKey() {
		case "location":
			location = kv.GetValue()
		case "offset", "length":
			v, err := strconv.ParseInt(kv.GetValue(), 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: external data %s %q is not a non-negative integer", compiler.ErrMalformed, kv.GetKey(), kv.GetValue())
			}
			if kv.GetKey() == "offset" {
				offset = v
			} else {
				length = v
			}
		}
	}
	if location == "" {
		return nil, fmt.Errorf("%w: external data has no location", compiler.ErrMalformed)
	}
	local := filepath.FromSlash(location)
	if !filepath.IsLocal(local) {
		return nil, fmt.Errorf("%w: external data location %q is not a path inside the model's directory", compiler.ErrMalformed, location)
	}
	if length >= 0 && length != wantBytes {
		return nil, fmt.Errorf("%w: external data length is %d bytes, the tensor's dims need %d", compiler.ErrShapeMismatch, length, wantBytes)
	}
	if e.dir == "" {
		return nil, fmt.Errorf("%w: tensor data is in external file %q but the model's path is unknown (use Load, or pass the path to Decode)", compiler.ErrMissingTensor, location)
	}
	if e.root == nil {
		root, err := os.OpenRoot(e.dir)
		if err != nil {
			return nil, fmt.Errorf("%w: opening model directory for external data: %w", compiler.ErrMissingTensor, err)
		}
		e.root = root
	}
	f, err := e.root.Open(local)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: external data file %q: %w", compiler.ErrMissingTensor, location, err)
		}
		return nil, fmt.Errorf("%w: external data file %q: %w", compiler.ErrMalformed, location, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data file %q: %w", location, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: external data location %q is not a regular file", compiler.ErrMalformed, location)
	}
	if offset > st.Size() || wantBytes > st.Size()-offset {
		return nil, fmt.Errorf("%w: external data file %q has %d bytes, the tensor needs bytes [%d, %d)",
			compiler.ErrTruncated, location, st.Size(), offset, offset+wantBytes)
	}
	if length < 0 && st.Size()-offset != wantBytes {
		return nil, fmt.Errorf("%w: external data file %q holds %d bytes after offset %d and gives no length; the tensor's dims need %d",
			compiler.ErrShapeMismatch, location, st.Size()-offset, offset, wantBytes)
	}
	buf := make([]byte, wantBytes)
	if n, err := f.ReadAt(buf, offset); n != len(buf) {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %w", compiler.ErrTruncated, err)
		}
		return nil, fmt.Errorf("reading external data file %q: %w", location, err)
	}
	return buf, nil
}
