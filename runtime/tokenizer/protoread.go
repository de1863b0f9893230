package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// protoReader walks the fields of one protobuf message: just enough of the
// wire format for SentencePiece's ModelProto, so the package keeps to the
// standard library.
type protoReader struct {
	buf []byte
}

var errProtoTruncated = errors.New("truncated protobuf")

func (r *protoReader) varint() (uint64, error) {
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		return 0, errProtoTruncated
	}
	r.buf = r.buf[n:]
	return v, nil
}

// protoField is one field: its number, wire type and value (varint or
// fixed value in num, bytes for length-delimited fields).
type protoField struct {
	num   int
	wire  int
	value uint64
	bytes []byte
}

// next reads the next field; ok is false at the end of the message.
func (r *protoReader) next() (f protoField, ok bool, err error) {
	if len(r.buf) == 0 {
		return f, false, nil
	}
	key, err := r.varint()
	if err != nil {
		return f, false, err
	}
	f.num, f.wire = int(key>>3), int(key&7)
	switch f.wire {
	case 0:
		f.value, err = r.varint()
	case 1:
		if len(r.buf) < 8 {
			return f, false, errProtoTruncated
		}
		f.value, r.buf = binary.LittleEndian.Uint64(r.buf), r.buf[8:]
	case 2:
		var n uint64
		if n, err = r.varint(); err == nil {
			if n > uint64(len(r.buf)) {
				return f, false, errProtoTruncated
			}
			f.bytes, r.buf = r.buf[:n], r.buf[n:]
		}
	case 5:
		if len(r.buf) < 4 {
			return f, false, errProtoTruncated
		}
		f.value, r.buf = uint64(binary.LittleEndian.Uint32(r.buf)), r.buf[4:]
	default:
		return f, false, fmt.Errorf("protobuf wire type %d is not supported", f.wire)
	}
	return f, err == nil, err
}

func (f protoField) float32() float32 { return math.Float32frombits(uint32(f.value)) }
