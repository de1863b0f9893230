package tokenizer

import "unicode/utf8"

// wordPiece is the WordPiece model: greedy longest-match-first over a
// vocabulary, with a prefix marking pieces that continue a word.
type wordPiece struct {
	// whole maps tokens to ids; cont maps continuation tokens to ids keyed
	// without their prefix, so a lookup never builds "##"+piece.
	whole, cont map[string]int32
	// wholeMax and contMax are the longest keys of whole and cont in bytes:
	// no match can be longer, so the search starts there.
	wholeMax, contMax int
	unk               int32
	maxChars          int    // longer words become unk (max_input_chars_per_word)
	prefix            string // continuing_subword_prefix, for ContinuingSubwordPrefix
}

func newWordPiece(vocab map[string]int32, prefix string, unk int32, maxChars int) wordPiece {
	wp := wordPiece{whole: vocab, unk: unk, maxChars: maxChars, prefix: prefix}
	if prefix == "" {
		wp.cont = vocab
	} else {
		wp.cont = make(map[string]int32)
		for tok, id := range vocab {
			if len(tok) > len(prefix) && tok[:len(prefix)] == prefix {
				wp.cont[tok[len(prefix):]] = id
			}
		}
	}
	for tok := range wp.whole {
		wp.wholeMax = max(wp.wholeMax, len(tok))
	}
	for tok := range wp.cont {
		wp.contMax = max(wp.contMax, len(tok))
	}
	return wp
}

// appendWord appends the pieces of word (valid UTF-8, non-empty) to dst.
func (wp *wordPiece) appendWord(dst []int32, word []byte) []int32 {
	return wp.appendWordSpans(dst, nil, word)
}

// appendWordSpans is appendWord that also appends, when spans is not nil,
// each token's byte span in word (an unknown word's is all of it).
func (wp *wordPiece) appendWordSpans(dst []int32, spans *[]Offset, word []byte) []int32 {
	if len(word) > wp.maxChars && utf8.RuneCount(word) > wp.maxChars {
		return wp.appendUnk(dst, spans, len(word))
	}
	first := len(dst)
	firstSpan := 0
	if spans != nil {
		firstSpan = len(*spans)
	}
	for start := 0; start < len(word); {
		m, longest := wp.whole, wp.wholeMax
		if start > 0 {
			m, longest = wp.cont, wp.contMax
		}
		end := len(word)
		if end-start > longest {
			end = start + longest
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		found := false
		for end > start {
			if id, ok := m[string(word[start:end])]; ok {
				dst = append(dst, id)
				if spans != nil {
					*spans = append(*spans, Offset{start, end})
				}
				found = true
				break
			}
			end--
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		if !found {
			if spans != nil {
				*spans = (*spans)[:firstSpan]
			}
			return wp.appendUnk(dst[:first], spans, len(word))
		}
		start = end
	}
	return dst
}

func (wp *wordPiece) appendUnk(dst []int32, spans *[]Offset, n int) []int32 {
	if spans != nil {
		*spans = append(*spans, Offset{0, n})
	}
	return append(dst, wp.unk)
}
