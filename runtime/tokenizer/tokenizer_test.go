package tokenizer

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// Ids in testdata/vocab.txt (line number - 1).
const (
	idPad   = 0
	idUnk   = 1
	idCLS   = 2
	idSEP   = 3
	idMask  = 4
	idHello = 5
	idWorld = 6
)

func boolPtr(b bool) *bool { return &b }

func testTokenizer(t testing.TB, opts Options) *Tokenizer {
	t.Helper()
	tok, err := FromVocabFile("testdata/vocab.txt", opts)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testTokenizers is the uncased test vocabulary loaded from vocab.txt and
// from the equivalent tokenizer.json.
func testTokenizers(t testing.TB) map[string]*Tokenizer {
	t.Helper()
	fromJSON, err := FromTokenizerJSON("testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Tokenizer{"vocab.txt": testTokenizer(t, Options{Lowercase: true}), "tokenizer.json": fromJSON}
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{}},
		{"only spaces", " \t\n\r ", []string{}},
		{"lowercase", "HELLO World", []string{"hello", "world"}},
		{"accent composed", "Héllo", []string{"hello"}},
		{"accent decomposed", "He\u0301llo", []string{"hello"}},
		{"accents", "Café NAÏVE", []string{"cafe", "naive"}},
		{"dotted capital I", "İSTANBUL", []string{"istanbul"}},
		{"greek final sigma lowered per character", "ΟΔΟΣ", []string{"ο", "##δ", "##ο", "##σ"}},
		{"continuation", "playing plays", []string{"play", "##ing", "play", "##s"}},
		{"longest match first", "unaffable", []string{"un", "##aff", "##able"}},
		{"unmatched word", "hello helloq world", []string{"hello", "[UNK]", "world"}},
		{"unmatched continuation", "unaffableq", []string{"[UNK]"}},
		{"cjk split", "hello中文字world", []string{"hello", "中", "文", "字", "world"}},
		{"cjk not continued", "中中", []string{"中", "中"}},
		{"ascii punctuation", "hello, world!?", []string{"hello", ",", "world", "!", "?"}},
		{"ascii symbols are punctuation", "$hello^", []string{"$", "hello", "^"}},
		{"apostrophe", "hello's", []string{"hello", "'", "s"}},
		{"unicode punctuation", "¿hello—world「the」。", []string{"¿", "hello", "—", "world", "「", "the", "」", "。"}},
		{"symbol is not punctuation", "hello€", []string{"[UNK]"}},
		{"control chars dropped", "hel\x00lo wo\x01rld\x7f", []string{"hello", "world"}},
		{"format chars dropped", "hel\u200blo\ufeff", []string{"hello"}},
		{"replacement char dropped", "hel\ufffdlo", []string{"hello"}},
		{"invalid utf-8 dropped", "hel\xfflo w\xe4\xb8orld\xc3", []string{"hello", "world"}},
		{"private use dropped", "hello\ue000", []string{"hello"}},

		{"whitespace kinds", "hello\u00a0world\u3000hello\u2028world\tthe\na\rhello", []string{"hello", "world", "hello", "world", "the", "a", "hello"}},
		{"next line is a control char", "hello\u0085world", []string{"[UNK]"}},
		{"special tokens verbatim", "hello [CLS] world[SEP]the[MASK][PAD][UNK]", []string{"hello", "[CLS]", "world", "[SEP]", "the", "[MASK]", "[PAD]", "[UNK]"}},
		{"special tokens are case sensitive", "[cls]", []string{"[", "[UNK]", "]"}},
		{"special tokens inside brackets", "[[SEP]]", []string{"[", "[SEP]", "]"}},
		{"partial special token", "[SEP", []string{"[", "[UNK]"}},
		{"100 chars", strings.Repeat("a", 100), append([]string{"a"}, slices.Repeat([]string{"##a"}, 99)...)},
		{"101 chars", strings.Repeat("a", 101), []string{"[UNK]"}},
		{"101 chars counted in runes", strings.Repeat("é", 101) + " " + strings.Repeat("a", 50), append([]string{"[UNK]", "a"}, slices.Repeat([]string{"##a"}, 49)...)},
	}
	// Unassigned code points: transformers drops them, the tokenizers
	// library's BertNormalizer keeps them.
	unassigned := map[string][]string{"vocab.txt": {"hello"}, "tokenizer.json": {"[UNK]"}}
	for name, tok := range testTokenizers(t) {
		if got, want := tok.Tokenize("hello\u0378"), unassigned[name]; !slices.Equal(got, want) {
			t.Errorf("%s: unassigned code point: %q, want %q", name, got, want)
		}
		for _, c := range cases {
			if got := tok.Tokenize(c.text); !slices.Equal(got, c.want) {
				t.Errorf("%s: %s: Tokenize(%q) = %q, want %q", name, c.name, c.text, got, c.want)
			}
		}
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		text string
		want []string
	}{
		{"cased keeps case", Options{}, "Hello hello", []string{"Hello", "hello"}},
		{"cased keeps accents", Options{}, "é", []string{"é"}},
		{"cased strips when asked", Options{StripAccents: boolPtr(true)}, "é", []string{"[UNK]"}},
		{"lowercase without stripping", Options{Lowercase: true, StripAccents: boolPtr(false)}, "HÉLLO", []string{"h", "##é", "##llo"}},
		{"no chinese chars", Options{Lowercase: true, NoChineseChars: true}, "中文", []string{"[UNK]"}},
		{"max chars per word", Options{Lowercase: true, MaxInputCharsPerWord: 4}, "hello the", []string{"[UNK]", "the"}},
		{"custom special token", Options{Lowercase: true, ClsToken: "hello"}, "hello", []string{"hello"}},
	}
	for _, c := range cases {
		tok := testTokenizer(t, c.opts)
		if got := tok.Tokenize(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: Tokenize(%q) = %q, want %q", c.name, c.text, got, c.want)
		}
	}
	// A custom [CLS] starts every encoding.
	tok := testTokenizer(t, Options{Lowercase: true, ClsToken: "world"})
	if got := tok.Encode("hello").InputIDs; !slices.Equal(got, []int64{idWorld, idHello, idSEP}) {
		t.Errorf("custom [CLS]: %v", got)
	}
}

func TestEncode(t *testing.T) {
	for name, tok := range testTokenizers(t) {
		e := tok.Encode("Hello, [MASK] world!")
		want := Encoding{
			InputIDs:      []int64{idCLS, idHello, 24, idMask, idWorld, 25, idSEP},
			AttentionMask: []int64{1, 1, 1, 1, 1, 1, 1},
			TokenTypeIDs:  []int64{0, 0, 0, 0, 0, 0, 0},
		}
		checkEqual(t, name+" Encode", e, want)
		checkEqual(t, name+" Encode empty", tok.Encode(""), Encoding{[]int64{idCLS, idSEP}, []int64{1, 1}, []int64{0, 0}, nil, nil, nil})
	}
}

func TestEncodePair(t *testing.T) {
	for name, tok := range testTokenizers(t) {
		e := tok.EncodePair("hello world", "the hello")
		want := Encoding{
			InputIDs:      []int64{idCLS, idHello, idWorld, idSEP, 13, idHello, idSEP},
			AttentionMask: []int64{1, 1, 1, 1, 1, 1, 1},
			TokenTypeIDs:  []int64{0, 0, 0, 0, 1, 1, 1},
		}
		checkEqual(t, name+" EncodePair", e, want)
		checkEqual(t, name+" EncodePair empty", tok.EncodePair("", ""),
			Encoding{[]int64{idCLS, idSEP, idSEP}, []int64{1, 1, 1}, []int64{0, 0, 1}, nil, nil, nil})
	}
}

func TestTruncation(t *testing.T) {
	tok, err := testTokenizer(t, Options{Lowercase: true}).WithMaxLength(5)
	if err != nil {
		t.Fatal(err)
	}
	if tok.MaxLength() != 5 {
		t.Fatalf("MaxLength() = %d", tok.MaxLength())
	}
	// The final [SEP] survives; pieces before it go.
	got := tok.Encode("hello world hello world").InputIDs
	if want := []int64{idCLS, idHello, idWorld, idHello, idSEP}; !slices.Equal(got, want) {
		t.Errorf("Encode truncated = %v, want %v", got, want)
	}
	// Pieces of one word are cut too, as transformers cuts them.
	got = tok.Encode("hello unaffable").InputIDs
	if want := []int64{idCLS, idHello, 7, 8, idSEP}; !slices.Equal(got, want) {
		t.Errorf("Encode truncated mid-word = %v, want %v", got, want)
	}
	// Pair, longest first: A has 4 tokens and B 1, with room for 2, so A
	// alone loses 3.
	e := tok.EncodePair("hello world hello world", "the")
	if want := []int64{idCLS, idHello, idSEP, 13, idSEP}; !slices.Equal(e.InputIDs, want) {
		t.Errorf("EncodePair truncated = %v, want %v", e.InputIDs, want)
	}
	if want := []int64{0, 0, 0, 1, 1}; !slices.Equal(e.TokenTypeIDs, want) {
		t.Errorf("EncodePair truncated types = %v, want %v", e.TokenTypeIDs, want)
	}
	// Equal lengths lose from B first: 2 and 2 with room for 3 -> 2 and 1.
	tok6, err := tok.WithMaxLength(6)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok6.EncodePair("hello world", "the hello").InputIDs, []int64{idCLS, idHello, idWorld, idSEP, 13, idSEP}; !slices.Equal(got, want) {
		t.Errorf("EncodePair tie = %v, want %v", got, want)
	}
	if _, err := tok.WithMaxLength(2); err == nil {
		t.Error("WithMaxLength(2) accepted a length with no room for a pair's special tokens")
	}
	if _, err := FromVocabFile("testdata/vocab.txt", Options{MaxLength: -1}); err == nil {
		t.Error("MaxLength -1 accepted")
	}
}

// TestTruncateLongestFirst checks the closed form against transformers'
// loop, which removes one token at a time from the longer sequence (the
// second one on a tie).
func TestTruncateLongestFirst(t *testing.T) {
	seq := func(n int) []int32 { return make([]int32, n) }
	for la := 0; la <= 12; la++ {
		for lb := 0; lb <= 12; lb++ {
			for budget := 0; budget <= 26; budget++ {
				wa, wb := la, lb
				for wa+wb > budget {
					if wa > wb {
						wa--
					} else {
						wb--
					}
				}
				a, b := truncate(seq(la), seq(lb), budget)
				if len(a) != wa || len(b) != wb {
					t.Fatalf("truncate(%d, %d, budget %d) = %d, %d; want %d, %d", la, lb, budget, len(a), len(b), wa, wb)
				}
			}
		}
	}
}

func TestEncodeBatchPadding(t *testing.T) {
	tok := testTokenizer(t, Options{Lowercase: true})
	batch := tok.EncodeBatch([]string{"hello", "hello world the", ""}, 0)
	want := []Encoding{
		{[]int64{idCLS, idHello, idSEP, idPad, idPad}, []int64{1, 1, 1, 0, 0}, []int64{0, 0, 0, 0, 0}, nil, nil, nil},
		{[]int64{idCLS, idHello, idWorld, 13, idSEP}, []int64{1, 1, 1, 1, 1}, []int64{0, 0, 0, 0, 0}, nil, nil, nil},
		{[]int64{idCLS, idSEP, idPad, idPad, idPad}, []int64{1, 1, 0, 0, 0}, []int64{0, 0, 0, 0, 0}, nil, nil, nil},
	}
	if len(batch) != len(want) {
		t.Fatalf("%d encodings, want %d", len(batch), len(want))
	}
	for i := range want {
		checkEqual(t, "EncodeBatch", batch[i], want[i])
	}
	// Appending to one row must not write into the next.
	_ = append(batch[0].InputIDs, 99)
	checkEqual(t, "EncodeBatch after append", batch[1], want[1])

	fixed := tok.EncodeBatch([]string{"hello"}, 8)
	checkEqual(t, "EncodeBatch padTo", fixed[0], Encoding{
		[]int64{idCLS, idHello, idSEP, 0, 0, 0, 0, 0}, []int64{1, 1, 1, 0, 0, 0, 0, 0}, make([]int64, 8), nil, nil, nil})
	if tok.PadID() != idPad {
		t.Errorf("PadID() = %d", tok.PadID())
	}
	if got := tok.EncodeBatch(nil, 4); len(got) != 0 {
		t.Errorf("EncodeBatch(nil) = %v", got)
	}
	// padTo below the longest row pads to the longest row.
	if got := tok.EncodeBatch([]string{"hello world the"}, 3); got[0].Len() != 5 {
		t.Errorf("EncodeBatch padTo 3: length %d, want 5", got[0].Len())
	}
}

func TestVocabQueries(t *testing.T) {
	for name, tok := range testTokenizers(t) {
		if tok.VocabSize() != 54 {
			t.Errorf("%s: VocabSize() = %d, want 54", name, tok.VocabSize())
		}
		for tokStr, want := range map[string]int{"[CLS]": idCLS, "hello": idHello, "##ing": 11} {
			if id, ok := tok.ID(tokStr); !ok || id != want {
				t.Errorf("%s: ID(%q) = %d, %v; want %d", name, tokStr, id, ok, want)
			}
		}
		if _, ok := tok.ID("ing"); ok {
			t.Errorf("%s: ID(\"ing\") found a token the vocabulary lacks", name)
		}
		if s, ok := tok.Token(idWorld); !ok || s != "world" {
			t.Errorf("%s: Token(%d) = %q, %v", name, idWorld, s, ok)
		}
		if _, ok := tok.Token(54); ok {
			t.Errorf("%s: Token(54) found a token past the vocabulary", name)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	tok := testTokenizer(t, Options{Lowercase: true})
	texts := []string{"hello world", "Héllo, 中文!", "unaffable playing", strings.Repeat("hello ", 200)}
	want := make([]Encoding, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 50; n++ {
				for i, s := range texts {
					if got := tok.Encode(s); !slices.Equal(got.InputIDs, want[i].InputIDs) {
						t.Errorf("concurrent Encode(%q) = %v, want %v", s, got.InputIDs, want[i].InputIDs)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func checkEqual(t *testing.T, what string, got, want Encoding) {
	t.Helper()
	if !slices.Equal(got.InputIDs, want.InputIDs) || !slices.Equal(got.AttentionMask, want.AttentionMask) ||
		!slices.Equal(got.TokenTypeIDs, want.TokenTypeIDs) {
		t.Errorf("%s:\n got  %v %v %v\n want %v %v %v", what, got.InputIDs, got.AttentionMask, got.TokenTypeIDs,
			want.InputIDs, want.AttentionMask, want.TokenTypeIDs)
	}
}
