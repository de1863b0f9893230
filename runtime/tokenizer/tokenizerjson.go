package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// FromTokenizerJSON builds a tokenizer from a HuggingFace tokenizer.json
// (the tokenizers library's format). See the package documentation for
// the pipeline components it reads; any other component is an error that
// names it. MaxLength is the file's truncation.max_length, else
// DefaultMaxLength.
func FromTokenizerJSON(path string) (*Tokenizer, error) {
	t, _, err := fromTokenizerJSON(path)
	return t, err
}

// The parts of tokenizer.json this package reads. Polymorphic parts stay
// raw until their "type" is known.
type tokenizerFile struct {
	Truncation *struct {
		MaxLength int    `json:"max_length"`
		Strategy  string `json:"strategy"`
		Direction string `json:"direction"`
		Stride    int    `json:"stride"`
	} `json:"truncation"`
	Padding *struct {
		PadID *int `json:"pad_id"`
	} `json:"padding"`
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Model         json.RawMessage  `json:"model"`
}

type typed struct {
	Type string `json:"type"`
}

// fromTokenizerJSON also reports whether the file sets a truncation length.
func fromTokenizerJSON(path string) (*Tokenizer, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, badInput(path, "", err)
	}
	t, truncated, err := parseTokenizerJSON(data)
	if err != nil {
		return nil, false, inFile(path, err)
	}
	return t, truncated, nil
}

func malformed(object string, format string, args ...any) error {
	return badInput("", object, fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...))
}

func unsupported(object string, format string, args ...any) error {
	return badInput("", object, fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...))
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

func parseTokenizerJSON(data []byte) (*Tokenizer, bool, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, false, malformed("", "%v", err)
	}
	t := &Tokenizer{added: map[string]int32{}, pipe: &pipeline{}, hfTruncation: true}

	// Model first: it fixes the vocabulary everything else refers to.
	if isNull(f.Model) {
		return nil, false, malformed("model", "missing")
	}
	for _, at := range f.AddedTokens {
		if at.ID < 0 || at.ID >= math.MaxInt32 {
			return nil, false, malformed("added_tokens", "token %q has id %d", at.Content, at.ID)
		}
	}
	modelSize, err := t.parseModel(f.Model)
	if err != nil {
		return nil, false, err
	}
	if t.pipe.norm, err = parseNormalizer("normalizer", f.Normalizer); err != nil {
		return nil, false, err
	}
	if t.pipe.pre, err = parsePreTokenizer("pre_tokenizer", f.PreTokenizer); err != nil {
		return nil, false, err
	}

	// Added tokens: normalized=false ones are matched in the raw text,
	// normalized=true ones in the normalised text, by normalised content.
	// Their ids are the library's, not the file's "id" fields: the model's
	// id of the content, else the next one after the model's vocabulary.
	var raw, normed []addedToken
	next := int32(modelSize)
	for i, at := range f.AddedTokens {
		obj := fmt.Sprintf("added_tokens[%d] %q", i, at.Content)
		if at.Content == "" {
			return nil, false, malformed(obj, "empty content")
		}
		id, ok := t.added[at.Content]
		if !ok {
			if id, ok = t.vocab[at.Content]; !ok {
				id, next = next, next+1
			}
		}
		for int(id) >= len(t.tokens) {
			t.tokens = append(t.tokens, "")
		}
		if t.tokens[id] == "" {
			t.tokens[id] = at.Content
		}
		t.added[at.Content] = id
		tok := addedToken{content: at.Content, id: id, singleWord: at.SingleWord, lstrip: at.LStrip, rstrip: at.RStrip}
		if !at.Normalized {
			raw = append(raw, tok)
			continue
		}
		if t.pipe.norm != nil {
			tok.content = t.pipe.norm.normalize(at.Content)
		}
		if tok.content == "" {
			return nil, false, malformed(obj, "content is empty after normalisation")
		}
		normed = append(normed, tok)
	}
	t.raw, t.normed = newMatcher(raw), newMatcher(normed)

	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, false, err
	}

	t.pad = 0
	if id, ok := t.ID("[PAD]"); ok {
		t.pad = int32(id)
	} else if id, ok := t.ID("<pad>"); ok {
		t.pad = int32(id)
	}
	if f.Padding != nil && f.Padding.PadID != nil {
		if *f.Padding.PadID < 0 || *f.Padding.PadID >= len(t.tokens) {
			return nil, false, malformed("padding.pad_id", "%d is not a token id", *f.Padding.PadID)
		}
		t.pad = int32(*f.Padding.PadID)
	}

	maxLen := 0
	if tr := f.Truncation; tr != nil {
		switch tr.Strategy {
		case "", "LongestFirst":
			t.strategy = longestFirst
		case "OnlyFirst":
			t.strategy = onlyFirst
		case "OnlySecond":
			t.strategy = onlySecond
		default:
			return nil, false, unsupported("truncation.strategy", "%q: want LongestFirst, OnlyFirst or OnlySecond", tr.Strategy)
		}
		switch tr.Direction {
		case "", "Right":
		case "Left":
			t.truncateLeft = true
		default:
			return nil, false, unsupported("truncation.direction", "%q: want Right or Left", tr.Direction)
		}
		if tr.MaxLength <= 0 {
			return nil, false, malformed("truncation.max_length", "%d is not positive", tr.MaxLength)
		}
		// stride only shapes the overflowing windows, which Encode drops.
		maxLen = tr.MaxLength
	}
	if err := t.setMaxLength(maxLen); err != nil {
		return nil, false, err
	}
	return t, maxLen > 0, nil
}

// vocabTable checks a token -> id map and lays it out by id.
func (t *Tokenizer) vocabTable(object string, vocab map[string]int) (map[string]int32, error) {
	if len(vocab) == 0 {
		return nil, badInput("", object, ErrEmptyVocab)
	}
	out := make(map[string]int32, len(vocab))
	size := 0
	for tok, id := range vocab {
		if id < 0 || id >= math.MaxInt32 {
			return nil, malformed(object, "token %q has id %d", tok, id)
		}
		out[tok] = int32(id)
		size = max(size, id+1)
	}
	t.tokens = make([]string, size)
	seen := make([]bool, size)
	for tok, id := range out {
		if seen[id] {
			return nil, malformed(object, "tokens %q and %q share id %d", t.tokens[id], tok, id)
		}
		seen[id] = true
		t.tokens[id] = tok
	}
	t.vocab = out
	return out, nil
}

// parseModel reads model: WordPiece, BPE, Unigram or WordLevel. It
// returns the model's vocabulary size as the library counts it (entries).
func (t *Tokenizer) parseModel(raw json.RawMessage) (int, error) {
	if err := t.parseModelType(raw); err != nil {
		return 0, err
	}
	if u, ok := t.pipe.model.(*unigram); ok {
		return len(u.scores), nil
	}
	return len(t.vocab), nil
}

func (t *Tokenizer) parseModelType(raw json.RawMessage) error {
	var kind typed
	if err := json.Unmarshal(raw, &kind); err != nil {
		return malformed("model", "%v", err)
	}
	switch kind.Type {
	case "WordPiece":
		var m struct {
			UnkToken     string         `json:"unk_token"`
			Prefix       *string        `json:"continuing_subword_prefix"`
			MaxInputChar *int           `json:"max_input_chars_per_word"`
			Vocab        map[string]int `json:"vocab"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return malformed("model", "%v", err)
		}
		vocab, err := t.vocabTable("model.vocab", m.Vocab)
		if err != nil {
			return err
		}
		unk, ok := vocab[m.UnkToken]
		if !ok {
			return badInput("", fmt.Sprintf("model.unk_token %q", m.UnkToken), ErrMissingToken)
		}
		prefix := DefaultContinuingPrefix
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		maxChars := DefaultMaxInputCharsPerWord
		if m.MaxInputChar != nil {
			if *m.MaxInputChar < 0 {
				return malformed("model.max_input_chars_per_word", "%d is negative", *m.MaxInputChar)
			}
			maxChars = *m.MaxInputChar
		}
		wp := newWordPiece(vocab, prefix, unk, maxChars)
		t.pipe.model = wordPieceModel{&wp}
	case "BPE":
		var m struct {
			Vocab        map[string]int    `json:"vocab"`
			Merges       []json.RawMessage `json:"merges"`
			UnkToken     *string           `json:"unk_token"`
			Prefix       *string           `json:"continuing_subword_prefix"`
			Suffix       *string           `json:"end_of_word_suffix"`
			FuseUnk      bool              `json:"fuse_unk"`
			ByteFallback bool              `json:"byte_fallback"`
			IgnoreMerges bool              `json:"ignore_merges"`
			Dropout      *float64          `json:"dropout"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return malformed("model", "%v", err)
		}
		if m.Dropout != nil && *m.Dropout != 0 {
			return unsupported("model.dropout", "%v: BPE dropout is random, so no fixed ids exist", *m.Dropout)
		}
		if m.Merges == nil {
			return malformed("model.merges", "missing")
		}
		vocab, err := t.vocabTable("model.vocab", m.Vocab)
		if err != nil {
			return err
		}
		merges, err := parseMerges(m.Merges)
		if err != nil {
			return err
		}
		prefix := ""
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		b, err := newBPE(vocab, merges, prefix)
		if err != nil {
			return malformed("model.merges", "%v", err)
		}
		if m.Suffix != nil {
			b.suffix = *m.Suffix
		}
		if m.UnkToken != nil {
			unk, ok := vocab[*m.UnkToken]
			if !ok {
				return badInput("", fmt.Sprintf("model.unk_token %q", *m.UnkToken), ErrMissingToken)
			}
			b.unk = unk
		}
		b.fuseUnk, b.byteFallback, b.ignoreMerges = m.FuseUnk, m.ByteFallback, m.IgnoreMerges
		t.pipe.model = b
	case "Unigram":
		var m struct {
			Vocab        [][2]json.RawMessage `json:"vocab"`
			UnkID        *int                 `json:"unk_id"`
			ByteFallback bool                 `json:"byte_fallback"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return malformed("model", "%v", err)
		}
		if len(m.Vocab) == 0 {
			return badInput("", "model.vocab", ErrEmptyVocab)
		}
		pieces := make([]string, len(m.Vocab))
		scores := make([]float64, len(m.Vocab))
		for i, e := range m.Vocab {
			if json.Unmarshal(e[0], &pieces[i]) != nil || json.Unmarshal(e[1], &scores[i]) != nil {
				return malformed(fmt.Sprintf("model.vocab[%d]", i), "want [piece, score]")
			}
		}
		if m.UnkID == nil {
			return unsupported("model.unk_id", "a Unigram model without unk_id fails on unknown characters")
		}
		if *m.UnkID < 0 || *m.UnkID >= len(pieces) {
			return malformed("model.unk_id", "%d is not a piece id", *m.UnkID)
		}
		t.tokens = append([]string(nil), pieces...)
		u := newUnigram(pieces, scores, int32(*m.UnkID), m.ByteFallback)
		t.vocab = u.vocab
		t.pipe.model = u
	case "WordLevel":
		var m struct {
			Vocab    map[string]int `json:"vocab"`
			UnkToken string         `json:"unk_token"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return malformed("model", "%v", err)
		}
		vocab, err := t.vocabTable("model.vocab", m.Vocab)
		if err != nil {
			return err
		}
		unk, ok := vocab[m.UnkToken]
		if !ok {
			return badInput("", fmt.Sprintf("model.unk_token %q", m.UnkToken), ErrMissingToken)
		}
		t.pipe.model = wordLevel{vocab, unk}
	default:
		return unsupported("model.type", "%q: want WordPiece, BPE, Unigram or WordLevel", kind.Type)
	}
	return nil
}

// parseMerges reads BPE merges written as ["a", "b"] pairs or as the older
// "a b" strings.
func parseMerges(raw []json.RawMessage) ([][2]string, error) {
	out := make([][2]string, 0, len(raw))
	for i, r := range raw {
		var pair []string
		if err := json.Unmarshal(r, &pair); err == nil {
			if len(pair) != 2 {
				return nil, malformed(fmt.Sprintf("model.merges[%d]", i), "want 2 tokens, have %d", len(pair))
			}
			out = append(out, [2]string{pair[0], pair[1]})
			continue
		}
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, malformed(fmt.Sprintf("model.merges[%d]", i), "want [\"a\", \"b\"] or \"a b\"")
		}
		if strings.HasPrefix(s, "#version") {
			continue // a merges.txt header, skipped as the library does
		}
		a, b, ok := cutOnce(s, ' ')
		if !ok {
			return nil, malformed(fmt.Sprintf("model.merges[%d]", i), "%q is not two tokens separated by one space", s)
		}
		out = append(out, [2]string{a, b})
	}
	return out, nil
}

// cutOnce splits s at its only sep.
func cutOnce(s string, sep byte) (string, string, bool) {
	at := -1
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			if at >= 0 {
				return "", "", false
			}
			at = i
		}
	}
	if at < 0 {
		return "", "", false
	}
	return s[:at], s[at+1:], true
}
