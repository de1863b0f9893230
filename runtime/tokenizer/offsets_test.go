package tokenizer

import (
	"slices"
	"testing"
)

// TestOffsetsKnown pins offsets the reference libraries give, in code
// points (the tokenizers library's Node binding; for .model files
// SentencePiece's Python binding, EncodeAsImmutableProto, with the
// template's {0, 0}), for a few texts, so the semantics are checked
// without the oracles installed.
func TestOffsetsKnown(t *testing.T) {
	cases := []struct {
		file, text string
		want       []Offset // code points
	}{
		// Byte-level BPE: é and ö split in two tokens that share the
		// character; the emoji token's leading Ġ is trimmed (5 -> 6).
		{"roberta.json", "héllo 😀 wörld", []Offset{{0, 0}, {0, 1}, {1, 2}, {2, 4}, {4, 5}, {6, 7}, {8, 9}, {9, 10}, {9, 10}, {10, 11}, {11, 13}, {0, 0}}},
		{"roberta.json", "日本語 x", []Offset{{0, 0}, {0, 1}, {0, 1}, {0, 1}, {1, 2}, {1, 2}, {1, 2}, {2, 3}, {2, 3}, {2, 3}, {4, 5}, {0, 0}}},
		// Unigram: the prepended ▁ takes the first character's span.
		{"xlmr.json", "héllo 😀 wörld", []Offset{{0, 0}, {0, 1}, {1, 2}, {2, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 9}, {9, 10}, {10, 11}, {11, 13}, {0, 0}}},
		{"xlmr.json", "日本語 x", []Offset{{0, 0}, {0, 1}, {0, 3}, {3, 5}, {0, 0}}},
		// SentencePiece: the dummy prefix alone spans nothing; a piece
		// ending inside ½'s "1⁄2" ends where ½ starts; dropped spaces go
		// to the piece before the next kept character.
		{"sentencepiece.bpe.model", "日本語 x", []Offset{{0, 0}, {0, 0}, {0, 3}, {3, 5}, {0, 0}}},
		{"sentencepiece.bpe.model", "ﬁnance ½", []Offset{{0, 0}, {0, 1}, {1, 2}, {2, 6}, {6, 7}, {7, 7}, {7, 8}, {0, 0}}},
		{"sentencepiece.bpe.model", "x  \u3000 y", []Offset{{0, 0}, {0, 1}, {1, 5}, {5, 6}, {0, 0}}},
		{"sentencepiece.bpe.model", "  a  b ", []Offset{{0, 0}, {2, 3}, {3, 6}, {0, 0}}},
		// Byte fallback: only a character's last byte token spans it.
		{"spiece.model", "日本語 x", []Offset{{0, 0}, {0, 0}, {0, 0}, {0, 1}, {1, 1}, {1, 1}, {1, 2}, {2, 2}, {2, 2}, {2, 3}, {3, 4}, {4, 5}, {0, 0}}},
		{"spiece.model", "héllo 😀 wörld", []Offset{{0, 1}, {1, 2}, {2, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 9}, {9, 9}, {9, 10}, {10, 11}, {11, 12}, {12, 13}, {0, 0}}},
	}
	for _, c := range cases {
		tok := loadFuzzTokenizer(t, c.file)
		e := tok.EncodeWithOffsets(c.text)
		if got := CharOffsets(c.text, e.Offsets); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: offsets %v, want %v", c.file, c.text, got, c.want)
		}
	}
}

// TestOffsetsBytes checks the byte unit and the pair layout on a vocab.txt
// tokenizer: each sequence's offsets are into its own text.
func TestOffsetsBytes(t *testing.T) {
	tok := testTokenizer(t, Options{Lowercase: true})
	e := tok.EncodePairWithOffsets("Héllo world", "the world")
	var got []string
	for i, o := range e.Offsets {
		text := "Héllo world"
		if e.TokenTypeIDs[i] == 1 {
			text = "the world"
		}
		got = append(got, text[o.Start:o.End])
	}
	want := []string{"", "Héllo", "world", "", "the", "world", ""}
	if !slices.Equal(got, want) {
		t.Errorf("token texts %q, want %q (offsets %v, ids %v)", got, want, e.Offsets, e.InputIDs)
	}
}

func TestCharOffsets(t *testing.T) {
	got := CharOffsets("a😀\xffé", []Offset{{0, 1}, {1, 5}, {5, 6}, {6, 8}, {0, 99}})
	want := []Offset{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}}
	if !slices.Equal(got, want) {
		t.Errorf("CharOffsets %v, want %v", got, want)
	}
}
