package tokenizer

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// checkInvariants checks what every single-sequence encoding satisfies.
func checkInvariants(t testing.TB, tok *Tokenizer, e Encoding) {
	t.Helper()
	n := len(e.InputIDs)
	if len(e.AttentionMask) != n || len(e.TokenTypeIDs) != n {
		t.Fatalf("lengths ids %d, mask %d, types %d", n, len(e.AttentionMask), len(e.TokenTypeIDs))
	}
	if n < 2 || n > tok.MaxLength() {
		t.Fatalf("length %d, want 2..%d", n, tok.MaxLength())
	}
	cls, _ := tok.ID("[CLS]")
	sep, _ := tok.ID("[SEP]")
	if e.InputIDs[0] != int64(cls) || e.InputIDs[n-1] != int64(sep) {
		t.Fatalf("ids %v do not run from [CLS] %d to [SEP] %d", e.InputIDs, cls, sep)
	}
	for i, id := range e.InputIDs {
		if id < 0 || id >= int64(tok.VocabSize()) {
			t.Fatalf("id %d at %d out of range [0, %d)", id, i, tok.VocabSize())
		}
		if e.AttentionMask[i] != 1 || e.TokenTypeIDs[i] != 0 {
			t.Fatalf("position %d: mask %d type %d, want 1 and 0", i, e.AttentionMask[i], e.TokenTypeIDs[i])
		}
	}
}

// checkOffsets checks what holds for EncodeWithOffsets(text) = e for every
// input: Encode's ids; one offset per token; {0, 0} for the template's
// special tokens; the others within text, on character boundaries (an
// invalid byte is a character), their starts in order.
func checkOffsets(t testing.TB, tok *Tokenizer, text string, e Encoding) {
	t.Helper()
	if plain := tok.Encode(text); !slices.Equal(plain.InputIDs, e.InputIDs) || !slices.Equal(plain.TokenTypeIDs, e.TokenTypeIDs) {
		t.Fatalf("%q: EncodeWithOffsets ids %v, Encode %v", text, e.InputIDs, plain.InputIDs)
	}
	if len(e.Offsets) != len(e.InputIDs) {
		t.Fatalf("%q: %d offsets for %d ids", text, len(e.Offsets), len(e.InputIDs))
	}
	boundary := make([]bool, len(text)+1)
	for i := 0; i < len(text); {
		boundary[i] = true
		_, n := utf8.DecodeRuneInString(text[i:])
		i += n
	}
	boundary[len(text)] = true
	// A single template is leading specials, A, trailing specials.
	lead := leadingSpecials(tok.single)
	trail := tok.single.numSpecial() - lead
	last := 0
	for k, o := range e.Offsets {
		if k < lead || k >= len(e.Offsets)-trail {
			if o != (Offset{}) {
				t.Fatalf("%q: special token %d has offset %v", text, k, o)
			}
			continue
		}
		if o.Start < 0 || o.Start > o.End || o.End > len(text) || !boundary[o.Start] || !boundary[o.End] {
			t.Fatalf("%q: token %d offset %v: outside the text or inside a character", text, k, o)
		}
		if o.Start < last {
			t.Fatalf("%q: token %d starts at %d, before the previous token's %d: %v", text, k, o.Start, last, e.Offsets)
		}
		last = o.Start
	}
}

// leadingSpecials is how many special tokens come before sequence A.
func leadingSpecials(tp template) int {
	n := 0
	for _, it := range tp {
		if it.seq != seqSpecial {
			break
		}
		n += len(it.ids)
	}
	return n
}
