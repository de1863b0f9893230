package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// byteChars is GPT-2's byte-to-character table: printable Latin-1 bytes
// map to themselves, the other 68 to U+0100 onwards.
var byteChars = func() (t [256]string) {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = string(rune(b))
		} else {
			t[b] = string(rune(256 + n))
			n++
		}
	}
	return t
}()

// byteLevelMap spells each byte of s with its ByteLevel character.
func byteLevelMap(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteString(byteChars[s[i]])
	}
	return b.String()
}

// byteLevelPreTok is the ByteLevel pre-tokenizer: optionally a space
// before each piece, GPT-2's split, then every byte as its character.
type byteLevelPreTok struct {
	addPrefixSpace bool
	useRegex       bool
}

func (q byteLevelPreTok) split(dst []piece, p piece) []piece {
	if p.al != nil {
		return q.splitAligned(dst, p)
	}
	text := p.text
	if q.addPrefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	if !q.useRegex {
		return append(dst, piece{text: byteLevelMap(text), first: p.first})
	}
	for i := 0; i < len(text); {
		n := gpt2Match(text[i:])
		dst = append(dst, piece{text: byteLevelMap(text[i : i+n]), first: p.first && i == 0})
		i += n
	}
	return dst
}

// splitAligned is split keeping the alignments: the prefix space takes the
// first character's span, each mapped byte its character's.
func (q byteLevelPreTok) splitAligned(dst []piece, p piece) []piece {
	a := aligned{p.text, *p.al}
	if q.addPrefixSpace && !strings.HasPrefix(a.s, " ") {
		a = a.prepend(" ")
	}
	emit := func(start, end int) {
		b := byteLevelAligned(a.sub(start, end))
		dst = append(dst, piece{text: b.s, first: p.first && start == 0, al: &b.al})
	}
	if !q.useRegex {
		if a.s != "" {
			emit(0, len(a.s))
		}
		return dst
	}
	for i := 0; i < len(a.s); {
		n := gpt2Match(a.s[i:])
		emit(i, i+n)
		i += n
	}
	return dst
}

// gpt2Match is the length of the match at the start of s (non-empty) of
// GPT-2's pattern, tried alternative by alternative as a backtracking
// engine does:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Every character is matched by some alternative, so the matches tile s.
func gpt2Match(s string) int {
	if s[0] == '\'' {
		for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
			if strings.HasPrefix(s[1:], c) {
				return 1 + len(c)
			}
		}
	}
	body := 0 // optional leading space
	if s[0] == ' ' && len(s) > 1 {
		body = 1
	}
	for _, class := range [...]func(rune) bool{unicode.IsLetter, unicode.IsNumber, isGPT2Other} {
		if n := runOf(s[body:], class); n > 0 {
			return body + n
		}
		if body == 1 {
			// Without the space: the space itself is not in any class
			// but \s, so only the whitespace alternatives remain below.
			continue
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	if !unicode.IsSpace(r) {
		// Unreachable for valid classes; keep progress on odd input.
		return size
	}
	n := runOf(s, unicode.IsSpace)
	if n == len(s) {
		return n // \s+ to the end
	}
	// \s+(?!\S): give back the last space, unless it is the only one.
	_, last := utf8.DecodeLastRuneInString(s[:n])
	if n-last > 0 {
		return n - last
	}
	return n // \s+
}

// runOf is the byte length of the leading run of s for which is holds.
func runOf(s string, is func(rune) bool) int {
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if !is(r) {
			break
		}
		n += size
	}
	return n
}

// isGPT2Other is [^\s\p{L}\p{N}].
func isGPT2Other(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}
