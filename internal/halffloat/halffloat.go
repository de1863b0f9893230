// Package halffloat widens the two 16-bit float formats checkpoints are
// stored in, IEEE 754 binary16 (float16) and bfloat16, to float32. The
// widening is exact: every value of either format, subnormals, infinities
// and NaN included, is a float32. Both frontends use it: safetensors
// checkpoints (compiler/hf) and ONNX files (compiler/onnx), so a model
// stored at half width computes in float32 with exactly its stored values.
package halffloat

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// Format is a 16-bit float format.
type Format int

const (
	// Float16 is IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits.
	Float16 Format = iota
	// BFloat16 is the upper half of a float32: 1 sign, 8 exponent, 7
	// fraction bits.
	BFloat16
)

func (f Format) String() string {
	if f == BFloat16 {
		return "bfloat16"
	}
	return "float16"
}

// Float32 widens one value given by its bits.
func (f Format) Float32(bits uint16) float32 {
	if f == BFloat16 {
		return math.Float32frombits(uint32(bits) << 16)
	}
	return float16.Frombits(bits).Float32()
}

// Widen widens little-endian values; a trailing odd byte is ignored
// (callers check sizes first).
func (f Format) Widen(raw []byte) []float32 {
	out := make([]float32, len(raw)/2)
	for i := range out {
		out[i] = f.Float32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return out
}
