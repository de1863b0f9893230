package tokenizer

import "testing"

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
