package tokenizer

import (
	"errors"
	"fmt"
)

// ErrNoRoom is the cause of EncodePairWindows' error when the first
// sequence and the template leave the second no window longer than the
// stride.
var ErrNoRoom = errors.New("no room for the second sequence")

// EncodePairWindows encodes a pair as transformers' question-answering
// pipeline asks the tokenizers library to (truncation "only_second",
// return_overflowing_tokens, stride): a whole, and b cut into windows of
// w = maxLen - len(a) - the pair template's tokens, the k-th starting at
// k·(w - stride), the last the first to reach b's end (Encoding.truncate's
// overflowing parts, in order). Each window is one Encoding of at most
// maxLen positions with Offsets into its own text, as EncodePairWithOffsets
// gives. A b that fits whole is one window; an empty b is one window of
// no tokens. The tokenizer's own MaxLength and truncation do not apply.
// Token types follow the pair template in every window; the library gives
// b's tokens in the windows after the first the type 1 it encoded b with
// even where the template says 0, which the models of such templates
// (RoBERTa's, XLM-R's: one token type, no token_type_ids input) never
// read.
// Errors wrap ErrNoRoom when b does not fit and w <= stride, as the
// library refuses such a pair.
func (t *Tokenizer) EncodePairWindows(a, b string, maxLen, stride int) ([]Encoding, error) {
	if stride < 0 {
		return nil, fmt.Errorf("tokenizer: stride %d is negative", stride)
	}
	ia, oa, va, wa := t.idsOffsets(a)
	ib, ob, vb, wb := t.idsOffsets(b)
	w := maxLen - len(ia) - t.pair.numSpecial()
	if len(ib) > w && (w <= stride || w < 1) { // a pair that fits needs no window
		return nil, fmt.Errorf("tokenizer: %w: %d tokens of the first sequence and %d of the template in %d leave a window of %d, not more than the stride %d",
			ErrNoRoom, len(ia), t.pair.numSpecial(), maxLen, w, stride)
	}
	offA := t.trim(a, ia, ia, oa, va)
	var out []Encoding
	for lo := 0; ; lo += w - stride {
		hi := min(lo+max(w, 0), len(ib))
		kb := ib[lo:hi]
		e := t.assemble(t.pair, ia, kb, 0)
		e.Offsets = t.templateOffsets(t.pair, offA, t.trim(b, ib, kb, ob, vb), e.Len())
		e.Words = templateWords(t.pair, wa, kept(ib, kb, wb), e.Len())
		e.Sequences = templateSequences(t.pair, len(ia), len(kb), e.Len())
		out = append(out, e)
		if hi == len(ib) {
			return out, nil
		}
	}
}
