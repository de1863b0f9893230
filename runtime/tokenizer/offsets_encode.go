package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// EncodeWithOffsets is Encode that also sets Offsets: each token's byte
// span in text, Offset{0, 0} for the template's special tokens. The ids
// are Encode's; it is slower, so Encode stays the one to use for ids.
func (t *Tokenizer) EncodeWithOffsets(text string) Encoding {
	ids, offs, vals, words := t.idsOffsets(text)
	a := t.truncateSingle(ids, t.maxLen-t.single.numSpecial())
	e := t.assemble(t.single, a, nil, 0)
	e.Offsets = t.templateOffsets(t.single, t.trim(text, ids, a, offs, vals), nil, e.Len())
	e.Words = templateWords(t.single, kept(ids, a, words), nil, e.Len())
	e.Sequences = templateSequences(t.single, len(a), 0, e.Len())
	return e
}

// EncodePairWithOffsets is EncodePair that also sets Offsets, each into
// its own text (a's tokens into a, b's into b).
func (t *Tokenizer) EncodePairWithOffsets(a, b string) Encoding {
	ia, oa, va, wa := t.idsOffsets(a)
	ib, ob, vb, wb := t.idsOffsets(b)
	ka, kb := t.truncatePair(ia, ib, t.maxLen-t.pair.numSpecial())
	e := t.assemble(t.pair, ka, kb, 0)
	e.Offsets = t.templateOffsets(t.pair, t.trim(a, ia, ka, oa, va), t.trim(b, ib, kb, ob, vb), e.Len())
	e.Words = templateWords(t.pair, kept(ia, ka, wa), kept(ib, kb, wb), e.Len())
	e.Sequences = templateSequences(t.pair, len(ka), len(kb), e.Len())
	return e
}

// kept is the words of the tokens truncation kept (kept is a subslice of
// ids, as trim reads it).
func kept(ids, keptIDs []int32, words []int32) []int32 {
	lo := cap(ids) - cap(keptIDs)
	return words[lo : lo+len(keptIDs)]
}

// templateSequences is the sequence of each position of an encoding of tp
// with la tokens of A and lb of B (assemble's layout): 0 or 1 for A's and
// B's tokens, -1 for the template's and padding.
func templateSequences(tp template, la, lb, length int) []int8 {
	out := make([]int8, 0, length)
	for _, it := range tp {
		n, seq := len(it.ids), int8(-1)
		switch it.seq {
		case 0:
			n, seq = la, 0
		case 1:
			n, seq = lb, 1
		}
		for range n {
			out = append(out, seq)
		}
	}
	for len(out) < length {
		out = append(out, -1)
	}
	return out
}

// templateWords lays words out as fill lays ids: the template's special
// tokens and padding get -1.
func templateWords(tp template, a, b []int32, length int) []int32 {
	return templateLayout(tp, a, b, -1, length)
}

// templateOffsets lays offsets out as fill lays ids: special tokens and
// padding get Offset{0, 0}.
func (t *Tokenizer) templateOffsets(tp template, a, b []Offset, length int) []Offset {
	return templateLayout(tp, a, b, Offset{}, length)
}

// templateLayout lays a per-token value out as fill lays ids: A's values,
// B's, and special for the template's tokens and the padding up to length.
func templateLayout[T any](tp template, a, b []T, special T, length int) []T {
	out := make([]T, 0, length)
	for _, it := range tp {
		switch it.seq {
		case 0:
			out = append(out, a...)
		case 1:
			out = append(out, b...)
		default:
			for range it.ids {
				out = append(out, special)
			}
		}
	}
	for len(out) < length {
		out = append(out, special)
	}
	return out
}

// trim returns the offsets of the tokens truncation kept (kept is a
// subslice of ids: cut keeps a prefix or a suffix) and, when the
// post-processor says trim_offsets, takes the spaces each token's value
// starts or ends with out of its offset, as the library's byte-level
// process_offsets does after truncation. The library trims offsets already
// counted in characters (its bindings convert before post-processing), so
// this trims whole characters too, and offsets stay on character
// boundaries.
func (t *Tokenizer) trim(text string, ids, kept []int32, offs []Offset, vals []string) []Offset {
	lo := cap(ids) - cap(kept)
	offs = offs[lo : lo+len(kept)]
	if !t.trimOffsets {
		return offs
	}
	out := make([]Offset, len(offs))
	for i, o := range offs {
		tok := t.tokens[kept[i]]
		if k := lo + i; k < len(vals) && vals[k] != "" {
			tok = vals[k]
		}
		lead, trail := 0, 0
		for _, r := range tok {
			if !isTrimSpace(r) {
				break
			}
			lead++
		}
		for s := tok; s != ""; {
			r, n := utf8.DecodeLastRuneInString(s)
			if !isTrimSpace(r) {
				break
			}
			trail++
			s = s[:len(s)-n]
		}
		if lead > 0 && (i == 0 || o.Start == 0) && t.trimPrefixSpace && lead == 1 {
			// The one space add_prefix_space put there stays.
			lead = 0
		}
		// o.Start = min(o.Start+lead, o.End), in characters.
		for ; lead > 0 && o.Start < o.End; lead-- {
			_, n := utf8.DecodeRuneInString(text[o.Start:])
			o.Start = min(o.Start+n, o.End)
		}
		// o.End = max(o.End-trail, o.Start) when End, in characters, is at
		// least trail.
		if trail > 0 && runesAtLeast(text[:o.End], trail) {
			for ; trail > 0 && o.End > o.Start; trail-- {
				_, n := utf8.DecodeLastRuneInString(text[:o.End])
				o.End = max(o.End-n, o.Start)
			}
		}
		out[i] = o
	}
	return out
}

// isTrimSpace: the ByteLevel space character Ġ, or Unicode whitespace.
func isTrimSpace(r rune) bool { return r == 'Ġ' || unicode.IsSpace(r) }

// idsOffsets is ids for one text with each token's byte span in it: the
// pipeline's steps on aligned text (offsets_norm.go). A vocab.txt
// tokenizer runs as the equivalent pipeline.
//
// vals[i], where set, is token i's value when it is not the vocabulary's:
// an added token's is the text it matched, with the whitespace lstrip and
// rstrip took along (the library's Token.value, which trimming reads).
// words[i] is token i's word: the index of the split it came from (an
// added token's own, or a pre-tokenizer word's), counted from 0 in text
// as the library numbers a PreTokenizedString's splits.
func (t *Tokenizer) idsOffsets(text string) (ids []int32, offs []Offset, vals []string, words []int32) {
	pipe := t.pipe
	if pipe == nil {
		pipe = &pipeline{norm: bertNorm{t.norm}, pre: vocabWordsPreTok{}, model: wordPieceModel{&t.wp}}
	}
	src := alignedText(text)
	var word int32
	for _, rs := range t.raw.splits(src.s) {
		if rs.tok != nil {
			ids = append(ids, rs.tok.id)
			offs = append(offs, src.span(rs.start, rs.end))
			vals = setVal(vals, len(ids)-1, src.s[rs.start:rs.end])
			words = append(words, word)
			word++
			continue
		}
		chunk := src.sub(rs.start, rs.end)
		atStart := rs.start == 0
		if pipe.norm != nil {
			// As in pipeIDs: whether the piece still starts the text.
			if atStart {
				_, n := utf8.DecodeRuneInString(chunk.s)
				atStart = pipe.norm.normalize(chunk.s[:n]) != ""
			}
			chunk = pipe.norm.normalizeAligned(chunk)
		}
		for _, ns := range t.normed.splits(chunk.s) {
			if ns.tok != nil {
				ids = append(ids, ns.tok.id)
				offs = append(offs, chunk.span(ns.start, ns.end))
				vals = setVal(vals, len(ids)-1, chunk.s[ns.start:ns.end])
				words = append(words, word)
				word++
				continue
			}
			if ns.start == ns.end {
				continue
			}
			al := chunk.al[ns.start:ns.end]
			p := piece{text: chunk.s[ns.start:ns.end], first: atStart && ns.start == 0, al: &al}
			split := []piece{p}
			if pipe.pre != nil {
				split = pipe.pre.split(nil, p)
			}
			for _, w := range split {
				var spans []Offset
				ids, spans = pipe.model.appendTokens(ids, spans, w.text)
				wa := aligned{w.text, *w.al}
				for _, sp := range spans {
					offs = append(offs, wa.span(sp.Start, sp.End))
					words = append(words, word)
				}
				word++
			}
		}
	}
	return ids, offs, vals, words
}

// setVal sets vals[i] = v, growing vals as needed.
func setVal(vals []string, i int, v string) []string {
	for len(vals) <= i {
		vals = append(vals, "")
	}
	vals[i] = v
	return vals
}

// vocabWordsPreTok is the word split of a vocab.txt tokenizer
// (appendWords): whitespace, and each punctuation character alone.
type vocabWordsPreTok struct{}

func (vocabWordsPreTok) split(dst []piece, p piece) []piece {
	start := -1
	for i, r := range p.text {
		switch {
		case isSpace(r) || isPunct(r):
			if start >= 0 {
				dst = append(dst, p.sub(start, i))
				start = -1
			}
			if !isSpace(r) {
				dst = append(dst, p.sub(i, i+utf8.RuneLen(r)))
			}
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

// runesAtLeast reports whether s has at least n characters, reading no
// more than n of them (from the end).
func runesAtLeast(s string, n int) bool {
	for ; n > 0 && s != ""; n-- {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return n == 0
}
