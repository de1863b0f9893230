package modelrt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"unsafe"
)

// The weight file of a generated package (weights.bin, which the package
// embeds), format version 1. All numbers are little-endian.
//
//	offset  size  field
//	0       8     magic "SQCWGT\x00\x01" (the last byte is the format version)
//	8       8     uint64: total file length in bytes, header included
//	16      48    zero
//	64      ...   arrays, each starting at a multiple of WeightAlign bytes,
//	              zero padding between them
//
// An array is a dense run of float32 (IEEE 754 bits), int32, int64, int8
// or raw bytes (the vocabulary, one token per line). The file carries no
// directory: the generated code holds each array's offset and element
// count as constants, and the file's length and SHA-256 as well, which
// OpenWeights checks before anything is decoded.

// WeightMagic opens every weight file.
const WeightMagic = "SQCWGT\x00\x01"

// WeightAlign is the alignment of every array in the file: one cache line,
// so that an array viewed in place starts a line.
const WeightAlign = 64

const weightHeaderLen = 64

// WeightsWriter builds a weight file (used by the generator).
type WeightsWriter struct {
	buf bytes.Buffer
}

// NewWeightsWriter starts a weight file: the header, its length filled in
// by Bytes.
func NewWeightsWriter() *WeightsWriter {
	w := &WeightsWriter{}
	w.buf.Write(make([]byte, weightHeaderLen))
	return w
}

// align pads to the next multiple of WeightAlign and returns the offset.
func (w *WeightsWriter) align() int {
	for w.buf.Len()%WeightAlign != 0 {
		w.buf.WriteByte(0)
	}
	return w.buf.Len()
}

// F32 appends float32 values and returns their offset.
func (w *WeightsWriter) F32(v []float32) int {
	off := w.align()
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		w.buf.Write(b[:])
	}
	return off
}

// I32 appends int32 values and returns their offset.
func (w *WeightsWriter) I32(v []int32) int {
	off := w.align()
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], uint32(x))
		w.buf.Write(b[:])
	}
	return off
}

// I64 appends int64 values and returns their offset.
func (w *WeightsWriter) I64(v []int64) int {
	off := w.align()
	var b [8]byte
	for _, x := range v {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		w.buf.Write(b[:])
	}
	return off
}

// I8 appends int8 values and returns their offset.
func (w *WeightsWriter) I8(v []int8) int {
	off := w.align()
	for _, x := range v {
		w.buf.WriteByte(byte(x))
	}
	return off
}

// Raw appends bytes and returns their offset.
func (w *WeightsWriter) Raw(v []byte) int {
	off := w.align()
	w.buf.Write(v)
	return off
}

// Bytes finishes the file (padded to WeightAlign) and returns it with its
// SHA-256 in hex.
func (w *WeightsWriter) Bytes() ([]byte, string) {
	w.align()
	data := bytes.Clone(w.buf.Bytes())
	copy(data, WeightMagic)
	binary.LittleEndian.PutUint64(data[8:], uint64(len(data)))
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])
}

// Weights reads arrays out of a verified weight file. On little-endian
// hosts the typed accessors alias the file's bytes (no copy) whenever the
// array's start is aligned for its type, which the format's 64-byte
// offsets give when the file itself is: the weights are then resident
// once, as the pages of the embedded weights.bin that the integrity check
// reads anyway, instead of once there and again as a decoded copy on the
// heap. The returned slices must not be modified (an embedded file lies
// in read-only memory); their capacity is their length. Big-endian hosts
// and misaligned files get decoded copies. An offset or count outside the
// file makes the accessor return nil and Err report it.
type Weights struct {
	data []byte
	err  error
}

// OpenWeights checks data against the length and SHA-256 (hex) the
// generator recorded and the header, and returns a reader; the error wraps
// ErrCorruptWeights.
func OpenWeights(data []byte, size int, sha256Hex string) (*Weights, error) {
	if len(data) != size {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrCorruptWeights, len(data), size)
	}
	if len(data) < weightHeaderLen || string(data[:8]) != WeightMagic {
		return nil, fmt.Errorf("%w: no weight file header (format version 1)", ErrCorruptWeights)
	}
	if n := binary.LittleEndian.Uint64(data[8:]); n != uint64(len(data)) {
		return nil, fmt.Errorf("%w: header records %d bytes, file has %d", ErrCorruptWeights, n, len(data))
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != sha256Hex {
		return nil, fmt.Errorf("%w: SHA-256 %s, want %s", ErrCorruptWeights, got, sha256Hex)
	}
	return &Weights{data: data}, nil
}

// Err is the first accessor error, or nil.
func (w *Weights) Err() error { return w.err }

func (w *Weights) span(off, n, size int) []byte {
	if w.err != nil {
		return nil
	}
	if off < weightHeaderLen || off%WeightAlign != 0 || n < 0 || off+n*size > len(w.data) {
		w.err = fmt.Errorf("%w: array at offset %d of %d x %d bytes is outside the %d-byte file", ErrCorruptWeights, off, n, size, len(w.data))
		return nil
	}
	return w.data[off : off+n*size]
}

// F32 returns n float32 values at off.
func (w *Weights) F32(off, n int) []float32 {
	b := w.span(off, n, 4)
	if b == nil {
		return nil
	}
	if v, ok := alias[float32](b, n); ok {
		return v
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// I32 returns n int32 values at off.
func (w *Weights) I32(off, n int) []int32 {
	b := w.span(off, n, 4)
	if b == nil {
		return nil
	}
	if v, ok := alias[int32](b, n); ok {
		return v
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// I64 returns n int64 values at off.
func (w *Weights) I64(off, n int) []int64 {
	b := w.span(off, n, 8)
	if b == nil {
		return nil
	}
	if v, ok := alias[int64](b, n); ok {
		return v
	}
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

// I8 returns n int8 values at off.
func (w *Weights) I8(off, n int) []int8 {
	b := w.span(off, n, 1)
	if b == nil {
		return nil
	}
	if v, ok := alias[int8](b, n); ok {
		return v
	}
	v := make([]int8, n)
	for i, x := range b {
		v[i] = int8(x)
	}
	return v
}

// Raw returns the n bytes at off, aliasing the file (not copied).
func (w *Weights) Raw(off, n int) []byte {
	return w.span(off, n, 1)
}

// alias returns b as n values of T sharing its memory, if the host is
// little-endian (the file's byte order) and b starts aligned for T.
func alias[T float32 | int32 | int64 | int8](b []byte, n int) ([]T, bool) {
	var zero T
	if n == 0 || !hostLittleEndian() {
		return nil, false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%unsafe.Alignof(zero) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), n), true
}

// hostLittleEndian reports whether the host stores integers least
// significant byte first, as the weight file does.
func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
