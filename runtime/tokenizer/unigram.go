package tokenizer

import "unicode/utf8"

// unigram is SentencePiece's unigram model as the tokenizers library runs
// it: the Viterbi path through every segmentation into vocabulary pieces,
// maximising the sum of piece scores. A character no piece starts with
// becomes an unknown piece scored min_score - 10; consecutive unknowns
// fuse into one, which byte fallback then spells as <0xXX> tokens.
type unigram struct {
	vocab        map[string]int32
	scores       []float64 // by id
	maxLen       int       // longest piece in bytes
	unk          int32
	unkScore     float64
	byteFallback bool
	byteIDs      [256]int32
	// float32: keep path scores in single precision as the SentencePiece
	// library does (the tokenizers library uses double), with its mixed
	// arithmetic: a piece's candidate is summed in double and compared
	// with the stored float, an unknown's is summed in float. Near-ties
	// then fall the same way as there.
	float32 bool
	// spByteSpans: give byte-fallback tokens the spans the SentencePiece
	// library gives them. Its unknown pieces are one character each (it
	// fuses runs of unknowns only without byte fallback), and of the byte
	// tokens spelling one only the last spans the character; the others
	// span nothing, at its start. The tokenizers library fuses the run and
	// has every byte token span all of it.
	spByteSpans bool
}

// unkPenalty is kUnkPenalty of SentencePiece.
const unkPenalty = 10.0

func newUnigram(pieces []string, scores []float64, unk int32, byteFallback bool) *unigram {
	u := &unigram{vocab: make(map[string]int32, len(pieces)), scores: scores, unk: unk, byteFallback: byteFallback}
	minScore, first := 0.0, true
	for id, p := range pieces {
		if p == "" {
			continue // a piece never matched in text
		}
		u.vocab[p] = int32(id) // a duplicate keeps its last id, as the library does
		u.maxLen = max(u.maxLen, len(p))
		if first || scores[id] < minScore {
			minScore, first = scores[id], false
		}
	}
	u.unkScore = minScore - unkPenalty
	u.byteIDs = byteTokenIDs(u.vocab)
	return u
}

type unigramNode struct {
	score float64
	start int // -1 while unreached
	id    int32
}

func (u *unigram) appendIDs(dst []int32, s string) []int32 {
	return u.appendSpans(dst, nil, s)
}

func (u *unigram) appendTokens(dst []int32, spans []Offset, s string) ([]int32, []Offset) {
	dst = u.appendSpans(dst, &spans, s)
	return dst, spans
}

// appendSpans is appendIDs that also appends, when spans is not nil, each
// token's byte span in s; the byte-fallback tokens of a piece all span it,
// as the tokenizers library has them, or as spByteSpans says.
func (u *unigram) appendSpans(dst []int32, spans *[]Offset, s string) []int32 {
	if s == "" {
		return dst
	}
	best := make([]unigramNode, len(s)+1)
	for i := range best {
		best[i].start = -1
	}
	for start := 0; start < len(s); {
		base := best[start].score
		_, charLen := utf8.DecodeRuneInString(s[start:])
		single := false
		for end := start + 1; end <= len(s) && end-start <= u.maxLen; end++ {
			id, ok := u.vocab[s[start:end]]
			if !ok {
				continue
			}
			if end-start == charLen {
				single = true
			}
			if cand := base + u.scores[id]; best[end].start < 0 || cand > best[end].score {
				best[end] = unigramNode{score: u.store(cand), start: start, id: id}
			}
		}
		if !single {
			end := start + charLen
			if cand := u.store(base + u.unkScore); best[end].start < 0 || cand > best[end].score {
				best[end] = unigramNode{score: cand, start: start, id: u.unk}
			}
		}
		start += charLen
	}
	// Walk back, fusing runs of unknowns; then emit in order.
	type seg struct{ start, end int }
	var segs []seg
	for end := len(s); end > 0; {
		n := best[end]
		if n.id == u.unk && len(segs) > 0 && best[segs[len(segs)-1].end].id == u.unk && segs[len(segs)-1].start == end {
			segs[len(segs)-1].start = n.start
		} else {
			segs = append(segs, seg{n.start, end})
		}
		end = n.start
	}
	for i := len(segs) - 1; i >= 0; i-- {
		piece := s[segs[i].start:segs[i].end]
		if id, ok := u.vocab[piece]; ok {
			dst = append(dst, id)
			continue
		}
		if u.byteFallback && u.haveBytes(piece) {
			for k := 0; k < len(piece); k++ {
				dst = append(dst, u.byteIDs[piece[k]])
			}
			continue
		}
		dst = append(dst, u.unk)
	}
	if spans != nil {
		for i := len(segs) - 1; i >= 0; i-- {
			o := Offset{segs[i].start, segs[i].end}
			piece := s[o.Start:o.End]
			if _, ok := u.vocab[piece]; ok || !u.byteFallback || !u.haveBytes(piece) {
				*spans = append(*spans, o)
				continue
			}
			if !u.spByteSpans {
				for range len(piece) {
					*spans = append(*spans, o)
				}
				continue
			}
			for c := o.Start; c < o.End; {
				_, size := utf8.DecodeRuneInString(s[c:o.End])
				for range size - 1 {
					*spans = append(*spans, Offset{c, c})
				}
				*spans = append(*spans, Offset{c, c + size})
				c += size
			}
		}
	}
	return dst
}

// store rounds a path score to the precision it is kept in.
func (u *unigram) store(x float64) float64 {
	if u.float32 {
		return float64(float32(x))
	}
	return x
}

func (u *unigram) haveBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if u.byteIDs[s[i]] < 0 {
			return false
		}
	}
	return true
}
