package tokenizer

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a stretch of normalised text on its way to the model.
type piece struct {
	text string
	// first: the piece starts at the beginning of the original text
	// (Metaspace's prepend_scheme "first" tests it).
	first bool
	// al aligns text to the original text (offsets.go); nil when only
	// ids are wanted. A pointer keeps pieces small on the ids path.
	al *[]Offset
}

// sub is text[start:end] as a piece.
func (p piece) sub(start, end int) piece {
	q := piece{text: p.text[start:end], first: p.first && start == 0}
	if p.al != nil {
		al := (*p.al)[start:end]
		q.al = &al
	}
	return q
}

// preTokenizer splits a piece into words; it appends them to dst, empty
// words dropped.
type preTokenizer interface {
	split(dst []piece, p piece) []piece
}

// splitBehavior is SplitDelimiterBehavior: what becomes of the matches.
type splitBehavior uint8

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

// span is a byte range of a piece and whether it is a match.
type span struct {
	start, end int
	match      bool
}

// splitSpans applies a behaviour to the matches of a piece, as
// NormalizedString.split does; spans cover the text in order.
func splitSpans(dst []piece, p piece, spans []span, b splitBehavior) []piece {
	emit := func(start, end int) {
		if start < end {
			dst = append(dst, p.sub(start, end))
		}
	}
	switch b {
	case splitRemoved:
		for _, s := range spans {
			if !s.match {
				emit(s.start, s.end)
			}
		}
	case splitIsolated:
		for _, s := range spans {
			emit(s.start, s.end)
		}
	case splitContiguous, splitMergedWithPrevious:
		var out []span
		prev := false
		for _, s := range spans {
			merge := s.match == prev
			if b == splitMergedWithPrevious {
				merge = s.match && !prev
			}
			if merge && len(out) > 0 {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			prev = s.match
		}
		for _, s := range out {
			emit(s.start, s.end)
		}
	case splitMergedWithNext:
		var out []span // reversed
		prev := false
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prev && len(out) > 0 {
				out[len(out)-1].start = s.start
			} else {
				out = append(out, s)
			}
			prev = s.match
		}
		for i := len(out) - 1; i >= 0; i-- {
			emit(out[i].start, out[i].end)
		}
	}
	return dst
}

// charSpans marks every character for which is holds as its own match.
func charSpans(text string, is func(rune) bool) []span {
	var spans []span
	last := 0
	for i, r := range text {
		if is(r) {
			if last < i {
				spans = append(spans, span{last, i, false})
			}
			end := i + utf8.RuneLen(r)
			spans = append(spans, span{i, end, true})
			last = end
		}
	}
	if last < len(text) {
		spans = append(spans, span{last, len(text), false})
	}
	return spans
}

// regexSpans marks every non-empty match of re.
func regexSpans(text string, re *regexp.Regexp) []span {
	var spans []span
	last := 0
	for _, m := range re.FindAllStringIndex(text, -1) {
		if m[0] == m[1] {
			continue
		}
		if last < m[0] {
			spans = append(spans, span{last, m[0], false})
		}
		spans = append(spans, span{m[0], m[1], true})
		last = m[1]
	}
	if last < len(text) {
		spans = append(spans, span{last, len(text), false})
	}
	return spans
}

func invertSpans(spans []span) []span {
	for i := range spans {
		spans[i].match = !spans[i].match
	}
	return spans
}

// bertPreTok splits on whitespace (removed) and punctuation (isolated).
type bertPreTok struct{}

func (bertPreTok) split(dst []piece, p piece) []piece {
	start := -1
	for i, r := range p.text {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				dst = append(dst, p.sub(start, i))
				start = -1
			}
		case isPunct(r):
			if start >= 0 {
				dst = append(dst, p.sub(start, i))
				start = -1
			}
			dst = append(dst, p.sub(i, i+utf8.RuneLen(r)))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		dst = append(dst, p.sub(start, len(p.text)))
	}
	return dst
}

// whitespaceSplitPreTok splits on Unicode whitespace.
type whitespaceSplitPreTok struct{}

func (whitespaceSplitPreTok) split(dst []piece, p piece) []piece {
	return splitSpans(dst, p, charSpans(p.text, unicode.IsSpace), splitRemoved)
}

// whitespacePreTok keeps the runs of \w+ and of [^\w\s]+.
type whitespacePreTok struct{}

// isWordChar is Unicode's \w (UTS #18), as Oniguruma has it: Alphabetic
// (letters, Nl, Other_Alphabetic), marks, decimal digits, connector
// punctuation and the joiners.
func isWordChar(r rune) bool {
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc) || r == 0x200C || r == 0x200D
}

func (whitespacePreTok) split(dst []piece, p piece) []piece {
	text := p.text
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		word := isWordChar(r)
		j := i + n
		for j < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[j:])
			if unicode.IsSpace(r2) || isWordChar(r2) != word {
				break
			}
			j += n2
		}
		dst = append(dst, p.sub(i, j))
		i = j
	}
	return dst
}

// punctuationPreTok splits off punctuation characters.
type punctuationPreTok struct{ behavior splitBehavior }

func (q punctuationPreTok) split(dst []piece, p piece) []piece {
	return splitSpans(dst, p, charSpans(p.text, isPunct), q.behavior)
}

// digitsPreTok splits off digits, one by one or as runs.
type digitsPreTok struct{ individual bool }

func (q digitsPreTok) split(dst []piece, p piece) []piece {
	b := splitContiguous
	if q.individual {
		b = splitIsolated
	}
	return splitSpans(dst, p, charSpans(p.text, unicode.IsNumber), b)
}

// charDelimiterPreTok splits on one character, removed.
type charDelimiterPreTok struct{ delim rune }

func (q charDelimiterPreTok) split(dst []piece, p piece) []piece {
	return splitSpans(dst, p, charSpans(p.text, func(r rune) bool { return r == q.delim }), splitRemoved)
}

// splitPreTok is the Split pre-tokenizer: a string or a regular
// expression, a behaviour, and invert.
type splitPreTok struct {
	re       *regexp.Regexp
	behavior splitBehavior
	invert   bool
}

func (q splitPreTok) split(dst []piece, p piece) []piece {
	spans := regexSpans(p.text, q.re)
	if q.invert {
		spans = invertSpans(spans)
	}
	return splitSpans(dst, p, spans, q.behavior)
}

// metaspacePreTok replaces spaces by the replacement character, prepends
// one, and splits before each.
type metaspacePreTok struct {
	replacement string
	prepend     string // "always", "first" or "never"
	doSplit     bool
}

func (q metaspacePreTok) split(dst []piece, p piece) []piece {
	var np piece
	if p.al == nil {
		text := strings.ReplaceAll(p.text, " ", q.replacement)
		if !strings.HasPrefix(text, q.replacement) && (q.prepend == "always" || q.prepend == "first" && p.first) {
			text = q.replacement + text
		}
		np = piece{text: text, first: p.first}
	} else {
		a := aligned{p.text, *p.al}
		var spaces [][]int
		for i := 0; i < len(a.s); i++ {
			if a.s[i] == ' ' {
				spaces = append(spaces, []int{i, i + 1})
			}
		}
		if len(spaces) > 0 {
			a = a.replace(spaces, q.replacement)
		}
		if !strings.HasPrefix(a.s, q.replacement) && (q.prepend == "always" || q.prepend == "first" && p.first) {
			a = a.prepend(q.replacement)
		}
		np = piece{text: a.s, first: p.first, al: &a.al}
	}
	text := np.text
	if !q.doSplit {
		if text != "" {
			dst = append(dst, np)
		}
		return dst
	}
	rep, _ := utf8.DecodeRuneInString(q.replacement)
	return splitSpans(dst, np, charSpans(text, func(r rune) bool { return r == rep }), splitMergedWithNext)
}

// seqPreTok applies pre-tokenizers in order, each to every piece.
type seqPreTok []preTokenizer

func (q seqPreTok) split(dst []piece, p piece) []piece {
	cur := []piece{p}
	for _, pt := range q {
		var next []piece
		for _, c := range cur {
			next = pt.split(next, c)
		}
		cur = next
	}
	return append(dst, cur...)
}
