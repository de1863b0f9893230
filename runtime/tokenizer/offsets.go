package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Offset is where a token came from in the text given to EncodeWithOffsets
// or EncodePairWithOffsets: the bytes text[Start:End]. Template special
// tokens ([CLS], [SEP], <s>, </s>) have Offset{0, 0}; in a pair, each
// token's offset is into its own text.
//
// The spans are the HuggingFace tokenizers library's: they go back through
// every normalizer to the original text (NormalizedString alignments), so a
// token made by NFKC, lowercasing or a Precompiled charsmap spans the
// characters it was made from; several tokens may share one character (a
// byte-level BPE token holding part of a multi-byte character spans the
// whole character, and so do byte-fallback tokens); RobertaProcessing and
// ByteLevel post-processors trim the spaces a token starts or ends with.
// Offsets are always on UTF-8 character boundaries of the input (an invalid
// byte counts as one character). The library's Python and Node bindings
// report the same spans counted in characters (Unicode code points);
// CharOffsets converts.
//
// SentencePiece model files (FromSentencePieceFile) are read by the
// SentencePiece library, not by the tokenizers library, so their spans are
// SentencePiece's: each piece's begin and end in its SentencePieceText,
// byte offsets in its C++ API (its Python binding converts them to code
// points, as CharOffsets does). A piece spans from where the input of its
// first byte starts to where the input of the byte after it starts. So
// input the normaliser drops (extra spaces, characters it maps to nothing)
// goes to the piece before the next kept character; a piece that ends
// inside a character's normalised form (½ is "1⁄2") ends where that
// character starts and the piece holding the form's end spans it; the
// dummy-prefix "▁" alone spans nothing, at the first kept character; and
// of the byte-fallback tokens spelling one character only the last spans
// it, the others span nothing at its start (the tokenizers library gives
// every byte token the whole run of unknown characters). The template's
// special tokens, which that library does not add, have Offset{0, 0} as
// everywhere.
type Offset struct{ Start, End int }

// CharOffsets converts byte offsets into text to code point offsets, the
// unit of the tokenizers library's Python and Node bindings. An invalid
// UTF-8 byte counts as one code point; an offset outside text is clamped
// to it.
func CharOffsets(text string, offs []Offset) []Offset {
	// chars[i] is the number of code points before byte i of text, for
	// every byte at a character boundary and for len(text).
	chars := make([]int, len(text)+1)
	n := 0
	for i := 0; i < len(text); {
		_, size := utf8.DecodeRuneInString(text[i:])
		for k := range size {
			chars[i+k] = n
		}
		n++
		i += size
	}
	chars[len(text)] = n
	out := make([]Offset, len(offs))
	at := func(i int) int { return chars[min(max(i, 0), len(text))] }
	for i, o := range offs {
		out[i] = Offset{at(o.Start), at(o.End)}
	}
	return out
}

// aligned is a normalized text with, for each of its bytes, the span of the
// original text it came from: the library's NormalizedString, whose
// alignments give token offsets. Every byte of a character has the same span
// (except after spNormalizer, which keeps SentencePiece's alignment).
type aligned struct {
	s  string
	al []Offset // len(al) == len(s)
}

// alignedText is text as the pipelines see it (validUTF8), aligned to text:
// each character spans its bytes, an invalid byte's U+FFFD spans that byte.
func alignedText(text string) aligned {
	s := validUTF8(text)
	a := aligned{s: s, al: make([]Offset, 0, len(s))}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		n := size
		if r == utf8.RuneError && size == 1 {
			n = utf8.RuneLen(utf8.RuneError)
		}
		for range n {
			a.al = append(a.al, Offset{i, i + size})
		}
		i += size
	}
	return a
}

// sub is the part of a between bytes start and end of a.s.
func (a aligned) sub(start, end int) aligned {
	return aligned{s: a.s[start:end], al: a.al[start:end]}
}

// span is the original span of a.s[start:end] (convert_offsets).
func (a aligned) span(start, end int) Offset {
	if start >= end || start >= len(a.al) {
		if start < len(a.al) {
			return Offset{a.al[start].Start, a.al[start].Start}
		}
		if len(a.al) > 0 {
			e := a.al[len(a.al)-1].End
			return Offset{e, e}
		}
		return Offset{}
	}
	return Offset{a.al[start].Start, a.al[end-1].End}
}

// change is one character of a transformation, as the library's
// NormalizedString.transform takes them: n == 0 replaces the next original
// character, n > 0 inserts (taking the previous character's span), n < 0
// replaces the next character and removes -n more. skip (r < 0) removes n
// characters without output, which the library does through
// transform_range's initial offset.
type change struct {
	r rune
	n int
}

func skip(n int) change { return change{r: -1, n: n} }

// transform rebuilds a from a list of changes covering it, with the
// library's alignment rules.
func (a aligned) transform(cs []change) aligned {
	var b strings.Builder
	b.Grow(len(a.s))
	al := make([]Offset, 0, len(a.s))
	pos := 0 // byte cursor in a.s
	next := func() {
		if pos < len(a.s) {
			_, n := utf8.DecodeRuneInString(a.s[pos:])
			pos += n
		}
	}
	for _, c := range cs {
		if c.r < 0 {
			for range c.n {
				next()
			}
			continue
		}
		var o Offset
		switch {
		case c.n > 0:
			if pos > 0 {
				o = a.al[pos-1]
			}
		case pos < len(a.al):
			o = a.al[pos]
		case len(a.al) > 0:
			o = Offset{a.al[len(a.al)-1].End, a.al[len(a.al)-1].End}
		}
		if c.n <= 0 {
			next()
			for range -c.n {
				next()
			}
		}
		b.WriteRune(c.r)
		for range utf8.RuneLen(c.r) {
			al = append(al, o)
		}
	}
	return aligned{s: b.String(), al: al}
}

// mapRunes replaces each character by f's (one for one).
func (a aligned) mapRunes(f func(rune) rune) aligned {
	cs := make([]change, 0, len(a.s))
	for _, r := range a.s {
		cs = append(cs, change{f(r), 0})
	}
	return a.transform(cs)
}

// filter keeps the characters keep accepts, as NormalizedString.filter
// does: a removed character goes with the kept one before it.
func (a aligned) filter(keep func(rune) bool) aligned {
	var cs []change
	removed, lead := 0, 0
	last := rune(-1)
	for _, r := range a.s {
		if !keep(r) {
			removed++
			continue
		}
		if last >= 0 {
			cs = append(cs, change{last, -removed})
		} else {
			lead = removed
		}
		last, removed = r, 0
	}
	if last >= 0 {
		cs = append(cs, change{last, -removed})
	}
	if lead > 0 {
		cs = append([]change{skip(lead)}, cs...)
	}
	return a.transform(cs)
}

// expand replaces each character by f's characters, the first replacing
// it and the rest inserted after it (lowercase, byte-level mapping).
func (a aligned) expand(f func(dst []rune, r rune) []rune) aligned {
	cs := make([]change, 0, len(a.s))
	var buf []rune
	for _, r := range a.s {
		buf = f(buf[:0], r)
		for i, x := range buf {
			cs = append(cs, change{x, min(i, 1)})
		}
	}
	return a.transform(cs)
}

// prepend puts prefix before a non-empty a; its characters take the span of
// a's first character (NormalizedString.prepend).
func (a aligned) prepend(prefix string) aligned {
	first, size := utf8.DecodeRuneInString(a.s)
	if a.s == "" || prefix == "" {
		return a
	}
	var cs []change
	i := 0
	for _, r := range prefix {
		cs = append(cs, change{r, min(i, 1)})
		i++
	}
	cs = append(cs, change{first, 1})
	for _, r := range a.s[size:] {
		cs = append(cs, change{r, 0})
	}
	return a.transform(cs)
}

// replace puts content in place of each [start, end) byte range of a.s
// (sorted, disjoint); content's characters take the span of the last
// character replaced, as NormalizedString.replace does.
func (a aligned) replace(matches [][]int, content string) aligned {
	var cs []change
	last := 0
	for _, m := range matches {
		for _, r := range a.s[last:m[0]] {
			cs = append(cs, change{r, 0})
		}
		cs = append(cs, skip(utf8.RuneCountInString(a.s[m[0]:m[1]])))
		for _, r := range content {
			cs = append(cs, change{r, 1})
		}
		last = m[1]
	}
	for _, r := range a.s[last:] {
		cs = append(cs, change{r, 0})
	}
	return a.transform(cs)
}
