package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// model turns one pre-tokenized word into token ids.
type model interface {
	appendIDs(dst []int32, word string) []int32
	// appendTokens is appendIDs that also appends each token's byte span
	// in word (offsets.go).
	appendTokens(dst []int32, spans []Offset, word string) ([]int32, []Offset)
}

// wordPieceModel adapts the WordPiece matcher to model.
type wordPieceModel struct{ wp *wordPiece }

func (m wordPieceModel) appendIDs(dst []int32, word string) []int32 {
	return m.wp.appendWord(dst, []byte(word))
}

func (m wordPieceModel) appendTokens(dst []int32, spans []Offset, word string) ([]int32, []Offset) {
	dst = m.wp.appendWordSpans(dst, &spans, []byte(word))
	return dst, spans
}

// wordLevel maps each word to its id, or to unk.
type wordLevel struct {
	vocab map[string]int32
	unk   int32
}

func (m wordLevel) appendIDs(dst []int32, word string) []int32 {
	if id, ok := m.vocab[word]; ok {
		return append(dst, id)
	}
	return append(dst, m.unk)
}

func (m wordLevel) appendTokens(dst []int32, spans []Offset, word string) ([]int32, []Offset) {
	return m.appendIDs(dst, word), append(spans, Offset{0, len(word)})
}

// pipeline is a tokenizer.json pipeline after the added tokens:
// normalizer, pre-tokenizer, model. nil stages do nothing.
type pipeline struct {
	norm  textNormalizer
	pre   preTokenizer
	model model
}

// pipeIDs is appendIDs for tokenizer.json tokenizers, in the order the
// tokenizers library works: added tokens with normalized=false are found
// in the raw text; each stretch between them is normalised and searched
// for the normalized=true ones; what remains is pre-tokenized into words
// for the model.
func (t *Tokenizer) pipeIDs(dst []int32, text string) []int32 {
	text = validUTF8(text)
	for _, rs := range t.raw.splits(text) {
		if rs.tok != nil {
			dst = append(dst, rs.tok.id)
			continue
		}
		chunk := text[rs.start:rs.end]
		atStart := rs.start == 0
		if t.pipe.norm != nil {
			// The library asks whether a piece begins at offset 0 of the
			// original text; a normalizer that deletes the first character
			// moves the start of what follows off 0.
			if atStart {
				_, n := utf8.DecodeRuneInString(chunk)
				atStart = t.pipe.norm.normalize(chunk[:n]) != ""
			}
			chunk = t.pipe.norm.normalize(chunk)
		}
		for _, ns := range t.normed.splits(chunk) {
			if ns.tok != nil {
				dst = append(dst, ns.tok.id)
				continue
			}
			if ns.start == ns.end {
				continue
			}
			p := piece{text: chunk[ns.start:ns.end], first: atStart && ns.start == 0}
			if t.pipe.pre == nil {
				dst = t.pipe.model.appendIDs(dst, p.text)
				continue
			}
			var stack [32]piece
			for _, w := range t.pipe.pre.split(stack[:0], p) {
				dst = t.pipe.model.appendIDs(dst, w.text)
			}
		}
	}
	return dst
}

// addedSplit is a stretch of text: an added token when tok is set.
type addedSplit struct {
	start, end int
	tok        *addedToken
}

// splits cuts s at the added tokens, as AddedVocabulary.find_matches does:
// leftmost-longest matches, single_word ones only between non-word
// characters (\w as the regex crate has it), lstrip and rstrip ones taking the whitespace beside them.
func (m *matcher) splits(s string) []addedSplit {
	var out []addedSplit
	last := 0
	for from := 0; from < len(s); {
		at, tok := m.find(s[from:])
		if at < 0 {
			break
		}
		start, stop := from+at, from+at+len(tok.content)
		from = stop
		if tok.singleWord {
			before, _ := utf8.DecodeLastRuneInString(s[:start])
			after, _ := utf8.DecodeRuneInString(s[stop:])
			if (start > 0 && isWordChar(before)) || (stop < len(s) && isWordChar(after)) {
				continue
			}
		}
		if tok.lstrip {
			ns := len(s[:start]) - len(trimRightSpace(s[:start]))
			start = max(start-ns, last)
		}
		if tok.rstrip {
			stop += len(s[stop:]) - len(trimLeftSpace(s[stop:]))
			from = stop
		}
		if last < start {
			out = append(out, addedSplit{start: last, end: start})
		}
		out = append(out, addedSplit{start: start, end: stop, tok: tok})
		last = stop
	}
	if last < len(s) || len(out) == 0 {
		out = append(out, addedSplit{start: last, end: len(s)})
	}
	return out
}

func trimRightSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func trimLeftSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}
