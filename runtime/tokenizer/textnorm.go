package tokenizer

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// textNormalizer is one normalizer of a tokenizer.json pipeline: it maps
// valid UTF-8 to valid UTF-8.
type textNormalizer interface {
	normalize(s string) string
	// normalizeAligned is normalize keeping the alignments (offsets_norm.go).
	normalizeAligned(a aligned) aligned
}

// bertNorm is the BertNormalizer, shared with the vocab.txt path.
type bertNorm struct{ n normalizer }

func (b bertNorm) normalize(s string) string { return string(b.n.appendNormalized(nil, s)) }

// unicodeNorm is NFC, NFD, NFKC or NFKD.
type unicodeNorm struct{ form norm.Form }

func (u unicodeNorm) normalize(s string) string { return u.form.String(s) }

// lowercaseNorm lowercases per character with the full mapping, as
// Rust's char::to_lowercase does (no final-sigma context).
type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 'İ' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// stripAccentsNorm drops every combining mark (category M: Mn, Mc, Me);
// unlike BertNormalizer, which drops Mn only, it does not decompose first,
// so files pair it with NFD or NFKD.
type stripAccentsNorm struct{}

func (stripAccentsNorm) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// stripNorm trims Unicode whitespace from either end.
type stripNorm struct{ left, right bool }

func (n stripNorm) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// prependNorm puts a string before any non-empty text.
type prependNorm struct{ prefix string }

func (n prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

// replaceNorm replaces every non-overlapping match, leftmost first.
type replaceNorm struct {
	re      *regexp.Regexp // nil for a plain string pattern
	pattern string
	content string
}

func (n replaceNorm) normalize(s string) string {
	if n.re == nil {
		if n.pattern == "" {
			return s
		}
		return strings.ReplaceAll(s, n.pattern, n.content)
	}
	return n.re.ReplaceAllLiteralString(s, n.content)
}

// byteLevelNorm maps every byte to its ByteLevel alphabet character.
type byteLevelNorm struct{}

func (byteLevelNorm) normalize(s string) string { return byteLevelMap(s) }

// seqNorm applies normalizers in order.
type seqNorm []textNormalizer

func (q seqNorm) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// validUTF8 turns every invalid byte into U+FFFD (as the vocab.txt path
// decodes them); the pipelines work on valid UTF-8 only.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // range yields U+FFFD once per invalid byte
	}
	return b.String()
}
