package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Grapheme cluster segmentation (UAX #29, extended clusters), enough of it
// for the Precompiled normalizer, which looks clusters up whole. Property
// values come from Go's Unicode tables; Extended_Pictographic is
// approximated by the emoji blocks.

type gcb uint8

const (
	gcbOther gcb = iota
	gcbCR
	gcbLF
	gcbControl
	gcbExtend
	gcbZWJ
	gcbRI
	gcbPrepend
	gcbSpacingMark
	gcbL
	gcbV
	gcbT
	gcbLV
	gcbLVT
)

func graphemeBreak(r rune) gcb {
	switch {
	case r == '\r':
		return gcbCR
	case r == '\n':
		return gcbLF
	case r == 0x200D:
		return gcbZWJ
	case r == 0x200C, r >= 0x1F3FB && r <= 0x1F3FF, r == 0xFF9E, r == 0xFF9F, r >= 0xE0020 && r <= 0xE007F:
		return gcbExtend
	case r >= 0x1F1E6 && r <= 0x1F1FF:
		return gcbRI
	case r >= 0x1100 && r <= 0x115F, r >= 0xA960 && r <= 0xA97C:
		return gcbL
	case r >= 0x1160 && r <= 0x11A7, r >= 0xD7B0 && r <= 0xD7C6:
		return gcbV
	case r >= 0x11A8 && r <= 0x11FF, r >= 0xD7CB && r <= 0xD7FB:
		return gcbT
	case r >= 0xAC00 && r <= 0xD7A3:
		if (r-0xAC00)%28 == 0 {
			return gcbLV
		}
		return gcbLVT
	case r >= 0x0600 && r <= 0x0605, r == 0x06DD, r == 0x070F, r == 0x0890, r == 0x0891, r == 0x08E2, r == 0x110BD, r == 0x110CD:
		return gcbPrepend
	case unicode.In(r, unicode.Mn, unicode.Me):
		return gcbExtend
	case r == 0x0E33, r == 0x0EB3:
		return gcbSpacingMark
	case unicode.Is(unicode.Mc, r):
		if unicode.Is(unicode.Other_Grapheme_Extend, r) {
			return gcbExtend
		}
		return gcbSpacingMark
	case unicode.Is(unicode.Other_Grapheme_Extend, r):
		return gcbExtend
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp), r >= 0xD800 && r <= 0xDFFF:
		return gcbControl
	}
	return gcbOther
}

// isPictographic approximates Extended_Pictographic.
func isPictographic(r rune) bool {
	return r == 0x00A9 || r == 0x00AE || r == 0x203C || r == 0x2049 || r == 0x2122 || r == 0x2139 ||
		(r >= 0x2194 && r <= 0x21AA) || (r >= 0x231A && r <= 0x23FF) || (r >= 0x24C2 && r <= 0x24C2) ||
		(r >= 0x25AA && r <= 0x25FE) || (r >= 0x2600 && r <= 0x27BF) || (r >= 0x2934 && r <= 0x2935) ||
		(r >= 0x2B05 && r <= 0x2B55) || r == 0x3030 || r == 0x303D || r == 0x3297 || r == 0x3299 ||
		(r >= 0x1F000 && r <= 0x1F0FF) || (r >= 0x1F10D && r <= 0x1F1AD) || (r >= 0x1F1AE && r <= 0x1F1E5) ||
		(r >= 0x1F201 && r <= 0x1F3FA) || (r >= 0x1F400 && r <= 0x1FAFF) || (r >= 0x1FC00 && r <= 0x1FFFD)
}

// graphemeLen is the length in bytes of the first grapheme cluster of s
// (valid UTF-8, non-empty).
func graphemeLen(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	prev := graphemeBreak(r)
	pict := isPictographic(r) // in an emoji sequence (GB11)
	riCount := 0
	if prev == gcbRI {
		riCount = 1
	}
	i := n
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		cur := graphemeBreak(r)
		join := false
		switch {
		case prev == gcbCR && cur == gcbLF: // GB3
			join = true
		case prev == gcbCR || prev == gcbLF || prev == gcbControl: // GB4
		case cur == gcbCR || cur == gcbLF || cur == gcbControl: // GB5
		case prev == gcbL && (cur == gcbL || cur == gcbV || cur == gcbLV || cur == gcbLVT): // GB6
			join = true
		case (prev == gcbLV || prev == gcbV) && (cur == gcbV || cur == gcbT): // GB7
			join = true
		case (prev == gcbLVT || prev == gcbT) && cur == gcbT: // GB8
			join = true
		case cur == gcbExtend || cur == gcbZWJ || cur == gcbSpacingMark: // GB9, GB9a
			join = true
		case prev == gcbPrepend: // GB9b
			join = true
		case prev == gcbZWJ && pict && isPictographic(r): // GB11
			join = true
		case prev == gcbRI && cur == gcbRI && riCount%2 == 1: // GB12, GB13
			join = true
		}
		if !join {
			break
		}
		if cur == gcbRI {
			riCount++
		}
		if !(cur == gcbExtend || cur == gcbZWJ) {
			pict = isPictographic(r)
		}
		prev = cur
		i += size
	}
	return i
}
