package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// EncodeWithOffsets is Encode that also sets Offsets: each token's byte
// span in text, Offset{0, 0} for the template's special tokens. The ids
// are Encode's; it is slower, so Encode stays the one to use for ids.
func (t *Tokenizer) EncodeWithOffsets(text string) Encoding {
	ids, offs := t.idsOffsets(text)
	a := t.truncateSingle(ids, t.maxLen-t.single.numSpecial())
	oa := keptOffsets(ids, a, offs)
	e := t.assemble(t.single, a, nil, 0)
	e.Offsets = t.templateOffsets(t.single, t.trim(a, oa), nil, e.Len())
	return e
}

// EncodePairWithOffsets is EncodePair that also sets Offsets, each into
// its own text (a's tokens into a, b's into b).
func (t *Tokenizer) EncodePairWithOffsets(a, b string) Encoding {
	ia, oa := t.idsOffsets(a)
	ib, ob := t.idsOffsets(b)
	ka, kb := t.truncatePair(ia, ib, t.maxLen-t.pair.numSpecial())
	oa, ob = keptOffsets(ia, ka, oa), keptOffsets(ib, kb, ob)
	e := t.assemble(t.pair, ka, kb, 0)
	e.Offsets = t.templateOffsets(t.pair, t.trim(ka, oa), t.trim(kb, ob), e.Len())
	return e
}

// keptOffsets is the part of offs that truncation kept: kept is a
// subslice of ids (cut keeps a prefix or a suffix).
func keptOffsets(ids, kept []int32, offs []Offset) []Offset {
	lo := cap(ids) - cap(kept)
	return offs[lo : lo+len(kept)]
}

// templateOffsets lays offsets out as fill lays ids: special tokens and
// padding get Offset{0, 0}.
func (t *Tokenizer) templateOffsets(tp template, a, b []Offset, length int) []Offset {
	out := make([]Offset, 0, length)
	for _, it := range tp {
		switch it.seq {
		case 0:
			out = append(out, a...)
		case 1:
			out = append(out, b...)
		default:
			out = append(out, make([]Offset, len(it.ids))...)
		}
	}
	return append(out, make([]Offset, length-len(out))...)
}

// trim takes the spaces a token starts or ends with out of its offset, as
// the library's byte-level post-processing (process_offsets) does after
// truncation: only when the post-processor says trim_offsets.
func (t *Tokenizer) trim(ids []int32, offs []Offset) []Offset {
	if !t.trimOffsets {
		return offs
	}
	out := make([]Offset, len(offs))
	for i, o := range offs {
		tok := t.tokens[ids[i]]
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
		if lead > 0 {
			o.Start = min(o.Start+lead, o.End)
		}
		if trail > 0 && o.End >= trail {
			o.End = max(o.End-trail, o.Start)
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
func (t *Tokenizer) idsOffsets(text string) ([]int32, []Offset) {
	pipe := t.pipe
	if pipe == nil {
		pipe = &pipeline{norm: bertNorm{t.norm}, pre: vocabWordsPreTok{}, model: wordPieceModel{&t.wp}}
	}
	var ids []int32
	var offs []Offset
	src := alignedText(text)
	for _, rs := range t.raw.splits(src.s) {
		if rs.tok != nil {
			ids = append(ids, rs.tok.id)
			offs = append(offs, tokenSpan(src, rs))
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
				offs = append(offs, tokenSpan(chunk, ns))
				continue
			}
			if ns.start == ns.end {
				continue
			}
			p := piece{text: chunk.s[ns.start:ns.end], first: atStart && ns.start == 0, al: chunk.al[ns.start:ns.end]}
			words := []piece{p}
			if pipe.pre != nil {
				words = pipe.pre.split(nil, p)
			}
			for _, w := range words {
				var spans []Offset
				ids, spans = pipe.model.appendTokens(ids, spans, w.text)
				wa := aligned{w.text, w.al}
				for _, sp := range spans {
					offs = append(offs, wa.span(sp.Start, sp.End))
				}
			}
		}
	}
	return ids, offs
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

// tokenSpan is an added token's span: its content, without the whitespace
// lstrip and rstrip took along, as the library reports it.
func tokenSpan(a aligned, sp addedSplit) Offset {
	start, end := sp.start, sp.end
	if i := strings.Index(a.s[start:end], sp.tok.content); i >= 0 {
		start, end = start+i, start+i+len(sp.tok.content)
	}
	return a.span(start, end)
}
