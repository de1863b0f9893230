package tokenizer

import "unicode/utf8"

// Encoding is one encoder input. The three slices have equal length; int64
// matches the input_ids, attention_mask and token_type_ids of BERT models
// exported to ONNX.
type Encoding struct {
	InputIDs      []int64
	AttentionMask []int64 // 1 for tokens, 0 for padding
	TokenTypeIDs  []int64 // 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding
	// Offsets, set by EncodeWithOffsets, EncodePairWithOffsets and
	// EncodePairWindows only, are each token's byte span in its text (see
	// Offset).
	Offsets []Offset
	// Words, set with Offsets, is each token's word in its text: the
	// index of the pre-tokenizer's split (or added token) it came from,
	// as the tokenizers library's word_ids numbers them; -1 for the
	// template's tokens and padding.
	Words []int32
	// Sequences, set with Offsets, says whose token each position is: 0
	// for the (first) text's, 1 for the second's, -1 for the template's
	// and padding (the library's sequence_ids).
	Sequences []int8
}

// Len is the number of positions, padding included.
func (e Encoding) Len() int { return len(e.InputIDs) }

// stackPieces is how many piece ids Encode keeps on the stack before it
// allocates; 128 covers typical single sentences.
const stackPieces = 128

// Encode tokenizes text as [CLS] text [SEP], truncated to MaxLength.
func (t *Tokenizer) Encode(text string) Encoding {
	var stack [stackPieces]int32
	a := t.ids(stack[:0], text)
	a = t.truncateSingle(a, t.maxLen-t.single.numSpecial())
	return t.assemble(t.single, a, nil, 0)
}

// EncodePair tokenizes a sentence pair with the pair template (for BERT
// [CLS] a [SEP] b [SEP], token type 1 for b and its [SEP]). Truncation to
// MaxLength is the tokenizer.json's strategy as the tokenizers library
// runs it; for a vocab.txt tokenizer it removes tokens from the end of
// the longer sequence, one at a time (from b on a tie), as transformers'
// longest_first strategy does.
func (t *Tokenizer) EncodePair(a, b string) Encoding {
	var stackA, stackB [stackPieces]int32
	ia := t.ids(stackA[:0], a)
	ib := t.ids(stackB[:0], b)
	ia, ib = t.truncatePair(ia, ib, t.maxLen-t.pair.numSpecial())
	return t.assemble(t.pair, ia, ib, 0)
}

// EncodeBatch encodes each text as Encode does and right-pads every
// encoding to the same length: the longest in the batch, or padTo if that
// is longer (use it for fixed shapes; MaxLength still caps the tokens).
// Padding positions hold PadID with attention mask 0 and token type 0.
func (t *Tokenizer) EncodeBatch(texts []string, padTo int) []Encoding {
	// The pieces of every text go into one buffer; ends[i] closes text i.
	var all []int32
	ends := make([]int, len(texts))
	length := max(padTo, 0)
	for i, text := range texts {
		start := len(all)
		all = t.ids(all, text)
		p := t.truncateSingle(all[start:], t.maxLen-t.single.numSpecial())
		all = append(all[:start], p...) // p may start later (left truncation)
		ends[i] = len(all)
		length = max(length, len(p)+t.single.numSpecial())
	}
	out := make([]Encoding, len(texts))
	ids := make([]int64, 3*len(texts)*length)
	masks, types := ids[len(texts)*length:], ids[2*len(texts)*length:]
	start := 0
	for i := range out {
		lo, hi := i*length, (i+1)*length
		out[i] = Encoding{InputIDs: ids[lo:hi:hi], AttentionMask: masks[lo:hi:hi], TokenTypeIDs: types[lo:hi:hi]}
		t.fill(out[i], t.single, all[start:ends[i]], nil)
		start = ends[i]
	}
	return out
}

// Tokenize returns the tokens of text without the template's special
// tokens and without truncation: WordPiece pieces ("##" marks a
// continuation), [UNK] for words that could not be matched, and added
// tokens found verbatim in the text.
func (t *Tokenizer) Tokenize(text string) []string {
	ids := t.ids(nil, text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.tokens[id]
	}
	return out
}

// truncate shortens a and b to at most budget tokens together, longest
// first: it takes tokens off the end of the longer one, and off b when
// they are equally long. This is the closed form of transformers'
// truncate_sequences loop for TruncationStrategy.LONGEST_FIRST.
func truncate(a, b []int32, budget int) ([]int32, []int32) {
	budget = max(budget, 0)
	excess := len(a) + len(b) - budget
	if excess <= 0 {
		return a, b
	}
	la, lb := len(a), len(b)
	if la > lb {
		d := min(excess, la-lb)
		la, excess = la-d, excess-d
	} else if lb > la {
		d := min(excess, lb-la)
		lb, excess = lb-d, excess-d
	}
	// Now la == lb (or nothing is left to remove): they alternate, b first.
	lb -= (excess + 1) / 2
	la -= excess / 2
	return a[:la], b[:lb]
}

// assemble lays out a and b in template tp, padded to length positions.
func (t *Tokenizer) assemble(tp template, a, b []int32, length int) Encoding {
	length = max(length, tp.numSpecial()+len(a)+len(b))
	buf := make([]int64, 3*length)
	e := Encoding{
		InputIDs:      buf[:length:length],
		AttentionMask: buf[length : 2*length : 2*length],
		TokenTypeIDs:  buf[2*length:],
	}
	t.fill(e, tp, a, b)
	return e
}

// fill writes the template into e's zeroed slices and pads the rest.
func (t *Tokenizer) fill(e Encoding, tp template, a, b []int32) {
	k := 0
	for _, it := range tp {
		ids := it.ids
		switch it.seq {
		case 0:
			ids = a
		case 1:
			ids = b
		}
		for _, id := range ids {
			e.InputIDs[k] = int64(id)
			e.AttentionMask[k] = 1
			e.TokenTypeIDs[k] = it.typeID
			k++
		}
	}
	for ; k < len(e.InputIDs); k++ {
		e.InputIDs[k] = int64(t.pad)
	}
}

// normStackBytes is how much normalised text appendChunk keeps on the
// stack; longer chunks allocate.
const normStackBytes = 1024

// ids appends the ids of text's tokens to dst, before the template.
func (t *Tokenizer) ids(dst []int32, text string) []int32 {
	if t.pipe != nil {
		return t.pipeIDs(dst, text)
	}
	return t.appendIDs(dst, text)
}

// appendIDs appends the ids of text's tokens to dst: added tokens matched
// in the raw text, and the WordPiece pieces of the chunks between them.
func (t *Tokenizer) appendIDs(dst []int32, text string) []int32 {
	for text != "" {
		at, tok := t.raw.find(text)
		if at < 0 {
			return t.appendChunk(dst, text)
		}
		dst = t.appendChunk(dst, text[:at])
		dst = append(dst, tok.id)
		text = text[at+len(tok.content):]
	}
	return dst
}

// appendChunk normalises a chunk of text free of raw added tokens and
// appends the ids of its words.
func (t *Tokenizer) appendChunk(dst []int32, chunk string) []int32 {
	if chunk == "" {
		return dst
	}
	var stack [normStackBytes]byte
	text := t.norm.appendNormalized(stack[:0], chunk)
	for len(text) > 0 {
		at, tok := t.normed.findBytes(text)
		if at < 0 {
			return t.appendWords(dst, text)
		}
		dst = t.appendWords(dst, text[:at])
		dst = append(dst, tok.id)
		text = text[at+len(tok.content):]
	}
	return dst
}

// appendWords splits normalised text on whitespace and punctuation (the
// BertPreTokenizer) and appends the WordPiece ids of each word.
func (t *Tokenizer) appendWords(dst []int32, text []byte) []int32 {
	start := -1 // start of the current word, or -1 between words
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= 0x80 {
			r, size = utf8.DecodeRune(text[i:])
		}
		switch {
		case isSpace(r):
			if start >= 0 {
				dst = t.wp.appendWord(dst, text[start:i])
				start = -1
			}
		case isPunct(r):
			if start >= 0 {
				dst = t.wp.appendWord(dst, text[start:i])
				start = -1
			}
			dst = t.wp.appendWord(dst, text[i:i+size])
		default:
			if start < 0 {
				start = i
			}
		}
		i += size
	}
	if start >= 0 {
		dst = t.wp.appendWord(dst, text[start:])
	}
	return dst
}
