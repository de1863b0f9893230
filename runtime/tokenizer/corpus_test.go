package tokenizer

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusItem is one input of the oracle corpus: a text, or a pair.
type corpusItem struct {
	Text     string  `json:"text"`
	TextPair *string `json:"text_pair,omitempty"`
}

// Building blocks of the synthetic texts, one list per kind of trouble.
var (
	latinWords = []string{"café", "naïve", "résumé", "Straße", "über", "déjà", "vu", "niño", "façade", "coöperate",
		"ÉCOLE", "Ångström", "İstanbul", "ﬁnance", "Œuvre", "the", "movie", "was", "great", "bad", "film", "It's",
		"they're", "we've", "don't", "e\u0301te\u0301", "A\u030A", "ǅ", "ß", "Ⅻ", "½", "²³", "１２３", "ＡＢＣ"}
	cjkWords      = []string{"中文", "北京", "电影", "非常", "好看", "東京", "映画", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "한국어", "영화", "재미", "가", "ㄱㅏ", "\u1100\u1161", "，", "。", "「引用」"}
	cyrillicWords = []string{"Москва", "фильм", "хороший", "ёжик", "Україна", "їжак", "СССР", "привет", "й", "и\u0306"}
	arabicWords   = []string{"هذا", "الفيلم", "رائع", "جدا", "العربية", "مَرْحَبًا", "٣٤٥", "؟", "ﻻ", "\u0600\u0661"}
	otherWords    = []string{"यह", "फिल्म", "क्षत्रिय", "ภาษาไทย", "Ελληνικά", "עברית", "Việt", "phở", "ሰላም", "ᚠᚢᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠀀𠀁"}
	emojiWords    = []string{"😀", "👍🏽", "❤️", "🎉", "👨‍👩‍👧‍👦", "🇫🇷", "🇺🇸🇯🇵", "1️⃣", "🏳️‍🌈", "™", "©", "☕", "🤖", "\U0001FAE0"}
	punctWords    = []string{",", ".", "!", "?", "...", "—", "–", "«", "»", "„", "“", "”", "'", "\"", "(", ")", "[", "]", "{", "}", "@", "#", "$", "%", "&", "*", "+", "=", "<", ">", "/", "\\", "|", "~", "^", "`", "_", ";", ":", "¿", "¡", "§", "¶", "•", "…", "‰"}
	specialWords  = []string{"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "<s>", "</s>", "<mask>", "<pad>", "<unk>", "<0x41>", "▁", "Ġ", "##ing"}
	spaces        = []string{" ", " ", " ", " ", "  ", "\t", "\n", "\r\n", "\u00A0", "\u3000", "\u2009", "\u2028", " \u200B", "\u202F", "   "}
	controls      = []string{"\x00", "\x01", "\x07", "\x1b", "\x7f", "\u0085", "\u200B", "\u200D", "\uFEFF", "\u00AD", "\u200E", "\uE000", "\U000E0001", "\uFFFD", "\u0378", "\x0b", "\x0c"}
)

// syntheticText composes a text of n words drawn from the lists.
func syntheticText(r *rand.Rand, n int) string {
	lists := [][]string{latinWords, latinWords, cjkWords, cyrillicWords, arabicWords, otherWords, emojiWords, punctWords, specialWords, controls}
	var b strings.Builder
	for i := range n {
		if i > 0 || r.IntN(8) == 0 {
			b.WriteString(spaces[r.IntN(len(spaces))])
		}
		l := lists[r.IntN(len(lists))]
		b.WriteString(l[r.IntN(len(l))])
		if r.IntN(5) == 0 { // glue punctuation or a second word on
			l = lists[r.IntN(len(lists))]
			b.WriteString(l[r.IntN(len(l))])
		}
	}
	if r.IntN(8) == 0 {
		b.WriteString(spaces[r.IntN(len(spaces))])
	}
	return b.String()
}

// longWord is one word of many characters, some of a single script.
func longWord(r *rand.Rand) string {
	n := 50 + r.IntN(400)
	alphabet := []rune("abcdefghijklmnopqrstuvwxyzéàüø")
	switch r.IntN(4) {
	case 1:
		alphabet = []rune("中文北京电影非常好看東京映画")
	case 2:
		alphabet = []rune("абвгдеёжзийклмнопрст")
	case 3:
		alphabet = []rune("0123456789")
	}
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// oracleCorpus is the deterministic corpus the oracle tests compare on:
// the SST-2 dev set and the first training sentences (when ../shared is
// present), synthetic texts across scripts, emoji, controls and odd
// whitespace, very long words and texts, empty and blank strings, and
// pairs of all of these, some long enough to be truncated.
func oracleCorpus(t testing.TB) []corpusItem {
	t.Helper()
	var texts []string
	if dir, err := findShared(); err == nil {
		glue := filepath.Join(dir, "data", "glue-sst2")
		texts = append(texts, readTSVColumn(t, filepath.Join(glue, "dev.tsv"), "sentence")...)
		train := readTSVColumn(t, filepath.Join(glue, "train.tsv"), "sentence")
		texts = append(texts, train[:min(len(train), 3000)]...)
	} else {
		t.Logf("oracle corpus without SST-2: %v", err)
	}
	r := rand.New(rand.NewPCG(13, 2026))
	texts = append(texts, "", " ", "  ", "\t\n", "\u3000", "\x00", "\u200B")
	for i := range 6000 {
		switch {
		case i%50 == 0:
			texts = append(texts, longWord(r))
		case i%97 == 0:
			texts = append(texts, syntheticText(r, 300+r.IntN(400))) // beyond 512 tokens
		case i%11 == 0 && len(texts) > 10:
			// Mix a real sentence with synthetic trouble.
			texts = append(texts, texts[r.IntN(len(texts))]+spaces[r.IntN(len(spaces))]+syntheticText(r, 1+r.IntN(6)))
		default:
			texts = append(texts, syntheticText(r, 1+r.IntN(25)))
		}
	}
	items := make([]corpusItem, 0, len(texts)+3000)
	for _, s := range texts {
		items = append(items, corpusItem{Text: s})
	}
	for i := range 3000 {
		a, b := texts[r.IntN(len(texts))], texts[r.IntN(len(texts))]
		if i%20 == 0 {
			b = strings.Repeat(b+" ", 1+r.IntN(60)) // truncation of the second, or both
		}
		if i%30 == 0 {
			a = strings.Repeat(a+" ", 1+r.IntN(60))
		}
		if i%40 == 0 {
			b = ""
		}
		items = append(items, corpusItem{Text: a, TextPair: &b})
	}
	return items
}

// writeFile writes data under dir and returns the path.
func writeTemp(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
