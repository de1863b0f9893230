package hf

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// pickleArg says how a pickle opcode's argument is laid out after it.
type pickleArg int8

const (
	argNone     pickleArg = iota
	argFixed1             // 1 byte
	argFixed2             // 2 bytes
	argFixed4             // 4 bytes
	argFixed8             // 8 bytes
	argLine               // up to a newline
	argTwoLines           // two newline-terminated lines
	argLen1               // a 1-byte length, then that many bytes
	argLen4               // a 4-byte little-endian length, then those bytes
	argLen8               // an 8-byte little-endian length, then those bytes
)

// pickleOpcodes are the argument layouts of protocols 0 to 5 (CPython's
// Lib/pickletools.py lists them). FRAME's 8-byte length is read as a
// fixed argument: the frame's opcodes follow inline.
var pickleOpcodes = func() [256]pickleArg {
	var t [256]pickleArg
	for i := range t {
		t[i] = -1
	}
	for _, op := range "(.0123NQRabd}el]ost)u" {
		t[op] = argNone
	}
	for op, a := range map[byte]pickleArg{
		'F': argLine, 'I': argLine, 'L': argLine, 'P': argLine, 'S': argLine, 'V': argLine, 'g': argLine, 'p': argLine,
		'c': argTwoLines, 'i': argTwoLines,
		'J': argFixed4, 'K': argFixed1, 'M': argFixed2, 'h': argFixed1, 'j': argFixed4, 'q': argFixed1, 'r': argFixed4, 'G': argFixed8,
		'T': argLen4, 'U': argLen1, 'X': argLen4, 'B': argLen4, 'C': argLen1,
		0x80: argFixed1, 0x81: argNone, 0x82: argFixed1, 0x83: argFixed2, 0x84: argFixed4, 0x85: argNone, 0x86: argNone, 0x87: argNone,
		0x88: argNone, 0x89: argNone, 0x8a: argLen1, 0x8b: argLen4, 0x8c: argLen1, 0x8d: argLen8, 0x8e: argLen8, 0x8f: argNone,
		0x90: argNone, 0x91: argNone, 0x92: argNone, 0x93: argNone, 0x94: argNone, 0x95: argFixed8, 0x96: argLen8, 0x97: argNone, 0x98: argNone,
	} {
		t[op] = a
	}
	return t
}()

// argWidth is the byte width of a fixed argument, or of a length prefix.
var argWidth = [...]int{argFixed1: 1, argFixed2: 2, argFixed4: 4, argFixed8: 8, argLen1: 1, argLen4: 4, argLen8: 8}

// checkPickle walks a pickle's opcodes up to its STOP and checks that
// every length it gives stays inside the data. The unpickler allocates
// what a length says before it reads, so a corrupt 400-byte file could
// otherwise ask for gigabytes.
func checkPickle(data []byte) error {
	for i := 0; i < len(data); {
		op := data[i]
		i++
		arg := pickleOpcodes[op]
		rest := len(data) - i
		switch arg {
		case argNone:
			if op == '.' {
				return nil
			}
		case argFixed1, argFixed2, argFixed4, argFixed8:
			n := argWidth[arg]
			if n > rest {
				return fmt.Errorf("opcode %#x at byte %d: truncated", op, i-1)
			}
			if op == 0x95 && binary.LittleEndian.Uint64(data[i:]) > uint64(rest-n) {
				return fmt.Errorf("frame at byte %d is longer than the data", i-1)
			}
			i += n
		case argLine, argTwoLines:
			for range 1 + int(arg-argLine) {
				nl := bytes.IndexByte(data[i:], '\n')
				if nl < 0 {
					return fmt.Errorf("opcode %q at byte %d: unterminated argument", op, i-1)
				}
				i += nl + 1
			}
		case argLen1, argLen4, argLen8:
			w := argWidth[arg]
			if w > rest {
				return fmt.Errorf("opcode %#x at byte %d: truncated", op, i-1)
			}
			var n uint64
			switch w {
			case 1:
				n = uint64(data[i])
			case 4:
				n = uint64(binary.LittleEndian.Uint32(data[i:]))
			default:
				n = binary.LittleEndian.Uint64(data[i:])
			}
			if n > uint64(rest-w) {
				return fmt.Errorf("opcode %#x at byte %d: %d bytes of argument, %d left", op, i-1, n, rest-w)
			}
			i += w + int(n)
		default:
			return fmt.Errorf("unknown opcode %#x at byte %d", op, i-1)
		}
	}
	return fmt.Errorf("no STOP opcode")
}
