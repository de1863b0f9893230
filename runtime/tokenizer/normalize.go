package tokenizer

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer is BertNormalizer (tokenizers) / BasicTokenizer (transformers)
// up to, but not including, the whitespace and punctuation split.
type normalizer struct {
	clean   bool // drop NUL, U+FFFD and C*; whitespace -> ' '
	chinese bool // spaces around CJK ideographs
	lower   bool // per-character lowercase
	strip   bool // NFD, then drop Mn
	// keepUnassigned keeps unassigned code points (Cn) through clean text,
	// as the tokenizers library's BertNormalizer does; transformers'
	// BasicTokenizer drops them.
	keepUnassigned bool
}

// appendNormalized appends the normalised form of s to dst. Invalid UTF-8
// bytes count as U+FFFD. The result is always valid UTF-8.
func (n *normalizer) appendNormalized(dst []byte, s string) []byte {
	start := len(dst)
	ascii := true
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			if n.clean {
				if isASCIIControl(c) {
					continue
				}
				if c == '\t' || c == '\n' || c == '\r' {
					c = ' '
				}
			}
			if n.lower && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if n.clean {
			if r == utf8.RuneError || (n.keepUnassigned && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)) || (!n.keepUnassigned && isOther(r)) {
				continue
			}
			if unicode.Is(unicode.Zs, r) {
				dst = append(dst, ' ')
				continue
			}
		}
		ascii = false
		if n.chinese && isCJK(r) {
			dst = append(dst, ' ')
			dst = utf8.AppendRune(dst, r)
			dst = append(dst, ' ')
			continue
		}
		if n.lower {
			if r == 'İ' {
				// Python's str.lower and Rust's char::to_lowercase use the
				// full mapping "i\u0307"; Go's simple mapping gives "i".
				dst = append(dst, 'i')
				r = '\u0307'
			} else {
				r = unicode.ToLower(r)
			}
		}
		dst = utf8.AppendRune(dst, r)
	}
	if n.strip && !ascii {
		dst = stripAccents(dst, start)
	}
	return dst
}

// stripAccents rewrites buf[start:] in NFD with every nonspacing mark (Mn)
// removed, as BasicTokenizer._run_strip_accents does.
func stripAccents(buf []byte, start int) []byte {
	// x/text's API lets its arguments escape, so it gets a copy: buf may
	// be the caller's stack buffer, and ASCII text never comes here.
	text := bytes.Clone(buf[start:])
	if !norm.NFD.IsNormal(text) {
		text = norm.NFD.Append(nil, text...)
	}
	out := buf[:start]
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if !unicode.Is(unicode.Mn, r) {
			out = append(out, text[i:i+size]...)
		}
		i += size
	}
	return out
}

// isASCIIControl reports whether c is dropped by clean text: NUL and every
// ASCII Cc character except tab, newline and CR.
func isASCIIControl(c byte) bool {
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f
}

// isOther reports whether a non-ASCII rune is in Unicode category C*:
// control, format, surrogate, private use, or unassigned (Cn, which Go's
// unicode package has no table for).
func isOther(r rune) bool {
	if unicode.Is(unicode.C, r) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isCJK reports whether r is a CJK ideograph in the ranges that
// BasicTokenizer._is_chinese_char tests (the CJK Unified Ideographs blocks
// and extensions, plus the compatibility ideographs). Hangul, kana and
// CJK punctuation are not in them.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// isSpace reports whether r separates words. After clean text only ' ' and
// U+2028/U+2029 remain (Python's str.split splits on those too); without
// clean text it is the Unicode White_Space property, as in tokenizers.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || ('\t' <= r && r <= '\r')
	}
	return unicode.IsSpace(r)
}

// isPunct reports whether r is split off as a word of its own: every ASCII
// character that is not a letter, digit or space, and Unicode category P*.
func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}
