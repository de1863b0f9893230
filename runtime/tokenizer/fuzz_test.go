package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// FuzzEncode feeds arbitrary bytes (invalid UTF-8 included) to Encode,
// EncodePair and Tokenize of an uncased tokenizer, a cased one, and one
// with a short MaxLength, and checks what must hold for every input.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello world", "Héllo, 中文!", "[CLS][SEP]", "\xff\xfe\x00", strings.Repeat("a", 101)} {
		f.Add([]byte(s))
	}
	uncased := testTokenizer(f, Options{Lowercase: true})
	cased := testTokenizer(f, Options{})
	short := testTokenizer(f, Options{Lowercase: true, MaxLength: 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		text := string(data)
		for _, tok := range []*Tokenizer{uncased, cased, short} {
			e := tok.Encode(text)
			checkInvariants(t, tok, e)
			checkOffsets(t, tok, text, tok.EncodeWithOffsets(text))

			// Without truncation the encoding is [CLS] Tokenize [SEP].
			pieces := tok.Tokenize(text)
			if len(pieces)+2 <= tok.MaxLength() {
				if len(e.InputIDs) != len(pieces)+2 {
					t.Fatalf("Encode has %d ids, Tokenize %d pieces", len(e.InputIDs), len(pieces))
				}
				for i, p := range pieces {
					if id, ok := tok.ID(p); !ok || int64(id) != e.InputIDs[i+1] {
						t.Fatalf("piece %d %q has id %d, %v; Encode gave %d", i, p, id, ok, e.InputIDs[i+1])
					}
				}
			} else if len(e.InputIDs) != tok.MaxLength() {
				t.Fatalf("%d pieces truncated to %d ids, want MaxLength %d", len(pieces), len(e.InputIDs), tok.MaxLength())
			}

			// Invalid bytes act as U+FFFD, which clean text drops.
			if valid := strings.ToValidUTF8(text, "\uFFFD"); valid != text {
				if v := tok.Encode(valid); !slices.Equal(v.InputIDs, e.InputIDs) {
					t.Fatalf("Encode differs after replacing invalid UTF-8: %v vs %v", e.InputIDs, v.InputIDs)
				}
			}

			// Pairs: [CLS] A [SEP] B [SEP], types 0 then 1, within MaxLength.
			half := len(text) / 2
			p := tok.EncodePair(text[:half], text[half:])
			n := len(p.InputIDs)
			if len(p.AttentionMask) != n || len(p.TokenTypeIDs) != n || n < 3 || n > tok.MaxLength() {
				t.Fatalf("pair lengths %d %d %d, MaxLength %d", n, len(p.AttentionMask), len(p.TokenTypeIDs), tok.MaxLength())
			}
			if p.InputIDs[0] != e.InputIDs[0] || p.InputIDs[n-1] != e.InputIDs[len(e.InputIDs)-1] || p.TokenTypeIDs[0] != 0 || p.TokenTypeIDs[n-1] != 1 {
				t.Fatalf("pair %v types %v", p.InputIDs, p.TokenTypeIDs)
			}
			if !slices.IsSorted(p.TokenTypeIDs) {
				t.Fatalf("pair types %v are not 0s then 1s", p.TokenTypeIDs)
			}
			for _, id := range p.InputIDs {
				if id < 0 || id >= int64(tok.VocabSize()) {
					t.Fatalf("pair id %d out of range", id)
				}
			}
		}
	})
}
