package hf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/nlpodyssey/safetensors"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/halffloat"
)

// headerLenBytes is the size of the little-endian u64 that starts every
// safetensors file and gives the JSON header's length.
const headerLenBytes = 8

// maxHeaderBytes mirrors the safetensors library's own limit on the JSON
// header, checked first so that a wild length reads as malformed rather
// than truncated.
const maxHeaderBytes = 100_000_000

// modelPrefixes are the attribute names under which *ForSequenceClassification
// (and other task heads) keep the encoder; a base model saved alone has none.
var modelPrefixes = []string{"bert.", "distilbert.", "roberta.", "model.", "new.", "deberta.", "electra.", "mpnet.", "albert."}

// Safetensors is a WeightSource reading a .safetensors file held in memory.
type Safetensors struct {
	path    string
	data    []byte // the byte buffer after the header, which tensor offsets index
	tensors map[string]*safetensors.TensorInfo
	meta    map[string]string
}

// OpenSafetensors reads and indexes a .safetensors file.
func OpenSafetensors(path string) (*Safetensors, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", unwrapPath(err))
	}
	return ParseSafetensors(buf, path)
}

// ParseSafetensors indexes a whole .safetensors file held in buf (which it
// keeps); path names the file in errors.
func ParseSafetensors(buf []byte, path string) (*Safetensors, error) {
	size := uint64(len(buf))
	if size < headerLenBytes {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: %d bytes; a safetensors file starts with an %d-byte header length",
			compiler.ErrTruncated, size, headerLenBytes))
	}
	headerLen := binary.LittleEndian.Uint64(buf)
	if headerLen > maxHeaderBytes {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: header length %d is over the %d-byte limit (not a safetensors file?)",
			compiler.ErrMalformed, headerLen, maxHeaderBytes))
	}
	if headerLen > size-headerLenBytes {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: header claims %d bytes but only %d follow the length prefix",
			compiler.ErrTruncated, headerLen, size-headerLenBytes))
	}
	if name, dup := duplicateKey(buf[headerLenBytes : headerLenBytes+headerLen]); dup {
		return nil, compiler.BadInput(path, name, fmt.Errorf("%w: the header lists tensor %q twice", compiler.ErrDuplicate, name))
	}
	n, meta, err := safetensors.ReadMetadata(buf)
	if err != nil {
		return nil, diagnoseHeader(path, buf[headerLenBytes:headerLenBytes+headerLen], size-headerLenBytes-headerLen, err)
	}
	st := &Safetensors{
		path:    path,
		data:    buf[headerLenBytes+n:],
		tensors: meta.Tensors(),
		meta:    meta.Metadata(),
	}
	// The library checks that offsets are contiguous and sum to the file
	// size, but that sum can wrap around 2^64; bound every tensor again so
	// that slicing can never go out of range.
	for name, info := range st.tensors {
		if info.DataOffsets[1] > uint64(len(st.data)) {
			return nil, compiler.BadInput(path, name, fmt.Errorf("%w: data ends at byte %d of a %d-byte data section",
				compiler.ErrTruncated, info.DataOffsets[1], len(st.data)))
		}
		for _, d := range info.Shape {
			if d > math.MaxInt64 {
				return nil, compiler.BadInput(path, name, fmt.Errorf("%w: dimension %d is out of range", compiler.ErrMalformed, d))
			}
		}
	}
	return st, nil
}

// duplicateKey returns a top-level key the JSON header lists twice. The
// safetensors library decodes the header into a map, where a second entry
// silently replaces the first (or surfaces as a puzzling offset error
// about another tensor). A header that is not a JSON object is left to the
// library to report.
func duplicateKey(header []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// diagnoseHeader explains why the library rejected a header. When the
// header itself is valid JSON whose offsets reach past the end of the
// file, the file was cut short; anything else is malformed.
func diagnoseHeader(path string, header []byte, dataBytes uint64, libErr error) error {
	var entries map[string]json.RawMessage
	if json.Unmarshal(header, &entries) == nil {
		var end uint64
		for name, raw := range entries {
			var info struct {
				DataOffsets []uint64 `json:"data_offsets"`
			}
			if name != "__metadata__" && json.Unmarshal(raw, &info) == nil && len(info.DataOffsets) == 2 {
				end = max(end, info.DataOffsets[1])
			}
		}
		if end > dataBytes {
			return compiler.BadInput(path, "", fmt.Errorf("%w: header says tensor data takes %d bytes but the file holds %d",
				compiler.ErrTruncated, end, dataBytes))
		}
		if end < dataBytes {
			return compiler.BadInput(path, "", fmt.Errorf("%w: %d stray bytes after the tensor data (header says it takes %d bytes, the file holds %d)",
				compiler.ErrMalformed, dataBytes-end, end, dataBytes))
		}
	}
	return compiler.BadInput(path, "", fmt.Errorf("%w: %v", compiler.ErrMalformed, libErr))
}

// File is the path the tensors came from.
func (s *Safetensors) File() string { return s.path }

// Names lists the stored tensor names, sorted.
func (s *Safetensors) Names() []string { return slices.Sorted(maps.Keys(s.tensors)) }

// Metadata is the header's "__metadata__" map (e.g. format: pt).
func (s *Safetensors) Metadata() map[string]string { return s.meta }

// Weight implements WeightSource. It finds name as given, else with the
// model prefix ("bert.", "distilbert.") removed or added, else under the
// old TensorFlow-era LayerNorm names gamma/beta, as `transformers`'
// from_pretrained does. F16, BF16 and F64 are converted to float32.
func (s *Safetensors) Weight(name string, _ []int64) (*compiler.Tensor, error) {
	stored, info := s.lookup(name)
	if info == nil {
		return nil, compiler.BadInput(s.path, name, fmt.Errorf("%w: no tensor %q (nor under another prefix) among the file's %d tensors",
			compiler.ErrMissingTensor, name, len(s.tensors)))
	}
	shape := make([]int64, len(info.Shape))
	for i, d := range info.Shape {
		shape[i] = int64(d)
	}
	raw := s.data[info.DataOffsets[0]:info.DataOffsets[1]]
	t := &compiler.Tensor{DType: compiler.Float32, Shape: shape}
	switch info.DType {
	case safetensors.F32:
		t.F32 = float32sLE(raw)
	case safetensors.F16:
		t.F32 = halffloat.Float16.Widen(raw)
	case safetensors.BF16:
		t.F32 = halffloat.BFloat16.Widen(raw)
	case safetensors.F64:
		t.F32 = narrowFloat64sLE(raw)
	default:
		return nil, compiler.BadInput(s.path, stored, fmt.Errorf("%w: dtype %s; weights must be F32 (F16, BF16 and F64 are converted)",
			compiler.ErrDTypeMismatch, info.DType))
	}
	return t, nil
}

// lookup resolves a parameter name to the stored name and its info, or
// returns a nil info.
func (s *Safetensors) lookup(name string) (string, *safetensors.TensorInfo) {
	for _, candidate := range nameVariants(name) {
		if info, ok := s.tensors[candidate]; ok {
			return candidate, info
		}
	}
	return "", nil
}

// nameVariants lists the names a parameter may be stored under, the
// canonical one first.
func nameVariants(name string) []string {
	bases := []string{name}
	stripped := false
	for _, p := range modelPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			bases = append(bases, rest)
			stripped = true
		}
	}
	if !stripped {
		for _, p := range modelPrefixes {
			bases = append(bases, p+name)
		}
	}
	variants := slices.Clone(bases)
	for _, b := range bases {
		if rest, ok := strings.CutSuffix(b, "LayerNorm.weight"); ok {
			variants = append(variants, rest+"LayerNorm.gamma")
		}
		if rest, ok := strings.CutSuffix(b, "LayerNorm.bias"); ok {
			variants = append(variants, rest+"LayerNorm.beta")
		}
	}
	return variants
}

// unwrapPath drops the path from an *fs.PathError, which BadInput already
// names, keeping the cause (and so errors.Is(err, fs.ErrNotExist)).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// float32sLE reads little-endian float32 bytes (safetensors' F32, torch's
// FloatStorage).
func float32sLE(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// narrowFloat64sLE reads little-endian float64 bytes (safetensors' F64,
// torch's DoubleStorage), rounded to float32.
func narrowFloat64sLE(b []byte) []float32 {
	out := make([]float32, len(b)/8)
	for i := range out {
		out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out
}
