package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// FromTokenizerJSON builds a tokenizer from a HuggingFace tokenizer.json
// (the tokenizers library's format) with a BertNormalizer (or none), the
// BertPreTokenizer, a WordPiece model, and a TemplateProcessing or
// BertProcessing post-processor. Other models (BPE, Unigram, ...) and
// other pipeline pieces are rejected with an error that names them.
// MaxLength is the file's truncation.max_length, else DefaultMaxLength.
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
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Normalized bool   `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         json.RawMessage `json:"model"`
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

func parseTokenizerJSON(data []byte) (*Tokenizer, bool, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, false, malformed("", "%v", err)
	}
	t := &Tokenizer{added: map[string]int32{}}

	// Model first: it fixes the vocabulary everything else refers to.
	if len(f.Model) == 0 || string(f.Model) == "null" {
		return nil, false, malformed("model", "missing")
	}
	var model struct {
		Type         string         `json:"type"`
		UnkToken     string         `json:"unk_token"`
		Prefix       *string        `json:"continuing_subword_prefix"`
		MaxInputChar *int           `json:"max_input_chars_per_word"`
		Vocab        map[string]int `json:"vocab"`
	}
	if err := json.Unmarshal(f.Model, &model); err != nil {
		return nil, false, malformed("model", "%v", err)
	}
	if model.Type != "WordPiece" {
		return nil, false, unsupported("model.type", "%q: only WordPiece (BERT-style) tokenizers are supported", model.Type)
	}
	if len(model.Vocab) == 0 {
		return nil, false, badInput("", "model.vocab", ErrEmptyVocab)
	}
	vocab := make(map[string]int32, len(model.Vocab))
	size := 0
	for tok, id := range model.Vocab {
		if id < 0 || id >= math.MaxInt32 {
			return nil, false, malformed("model.vocab", "token %q has id %d", tok, id)
		}
		vocab[tok] = int32(id)
		size = max(size, id+1)
	}
	for _, at := range f.AddedTokens {
		if at.ID < 0 || at.ID >= math.MaxInt32 {
			return nil, false, malformed("added_tokens", "token %q has id %d", at.Content, at.ID)
		}
		size = max(size, at.ID+1)
	}
	t.tokens = make([]string, size)
	seen := make([]bool, size)
	for tok, id := range vocab {
		if seen[id] {
			return nil, false, malformed("model.vocab", "tokens %q and %q share id %d", t.tokens[id], tok, id)
		}
		seen[id] = true
		t.tokens[id] = tok
	}
	unk, ok := vocab[model.UnkToken]
	if !ok {
		return nil, false, badInput("", "model.unk_token "+fmt.Sprintf("%q", model.UnkToken), ErrMissingToken)
	}
	prefix := DefaultContinuingPrefix
	if model.Prefix != nil {
		prefix = *model.Prefix
	}
	maxChars := DefaultMaxInputCharsPerWord
	if model.MaxInputChar != nil {
		if *model.MaxInputChar < 0 {
			return nil, false, malformed("model.max_input_chars_per_word", "%d is negative", *model.MaxInputChar)
		}
		maxChars = *model.MaxInputChar
	}
	t.wp = newWordPiece(vocab, prefix, unk, maxChars)

	if err := t.parseNormalizer(f.Normalizer); err != nil {
		return nil, false, err
	}
	var pre typed
	if len(f.PreTokenizer) == 0 || string(f.PreTokenizer) == "null" {
		return nil, false, unsupported("pre_tokenizer", "missing: only BertPreTokenizer is supported")
	}
	if err := json.Unmarshal(f.PreTokenizer, &pre); err != nil {
		return nil, false, malformed("pre_tokenizer", "%v", err)
	}
	if pre.Type != "BertPreTokenizer" {
		return nil, false, unsupported("pre_tokenizer.type", "%q: only BertPreTokenizer is supported", pre.Type)
	}

	// Added tokens: normalized=false ones are matched in the raw text,
	// normalized=true ones in the normalised text, by normalised content.
	var raw, normed []addedToken
	for i, at := range f.AddedTokens {
		obj := fmt.Sprintf("added_tokens[%d] %q", i, at.Content)
		if at.Content == "" {
			return nil, false, malformed(obj, "empty content")
		}
		if at.SingleWord {
			return nil, false, unsupported(obj, "single_word tokens are not supported")
		}
		if t.tokens[at.ID] == "" {
			t.tokens[at.ID] = at.Content
		}
		t.added[at.Content] = int32(at.ID)
		if !at.Normalized {
			raw = append(raw, addedToken{at.Content, int32(at.ID)})
			continue
		}
		content := string(t.norm.appendNormalized(nil, at.Content))
		if content == "" {
			return nil, false, malformed(obj, "content is empty after normalisation")
		}
		normed = append(normed, addedToken{content, int32(at.ID)})
	}
	t.raw, t.normed = newMatcher(raw), newMatcher(normed)

	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, false, err
	}

	t.pad = 0
	if id, ok := t.ID("[PAD]"); ok {
		t.pad = int32(id)
	}
	if f.Padding != nil && f.Padding.PadID != nil {
		if *f.Padding.PadID < 0 || *f.Padding.PadID >= size {
			return nil, false, malformed("padding.pad_id", "%d is not a token id", *f.Padding.PadID)
		}
		t.pad = int32(*f.Padding.PadID)
	}

	maxLen := 0
	if tr := f.Truncation; tr != nil {
		if tr.Strategy != "" && tr.Strategy != "LongestFirst" {
			return nil, false, unsupported("truncation.strategy", "%q: only LongestFirst is supported", tr.Strategy)
		}
		if tr.Direction != "" && tr.Direction != "Right" {
			return nil, false, unsupported("truncation.direction", "%q: only Right is supported", tr.Direction)
		}
		if tr.Stride != 0 {
			return nil, false, unsupported("truncation.stride", "%d: overflowing windows are not supported", tr.Stride)
		}
		if tr.MaxLength <= 0 {
			return nil, false, malformed("truncation.max_length", "%d is not positive", tr.MaxLength)
		}
		maxLen = tr.MaxLength
	}
	if err := t.setMaxLength(maxLen); err != nil {
		return nil, false, err
	}
	return t, maxLen > 0, nil
}

// parseNormalizer reads a BertNormalizer, with the tokenizers defaults for
// missing fields; null means no normalisation at all.
func (t *Tokenizer) parseNormalizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		t.norm = normalizer{}
		return nil
	}
	var n struct {
		Type         string `json:"type"`
		CleanText    *bool  `json:"clean_text"`
		ChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents *bool  `json:"strip_accents"`
		Lowercase    *bool  `json:"lowercase"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return malformed("normalizer", "%v", err)
	}
	if n.Type != "BertNormalizer" {
		return unsupported("normalizer.type", "%q: only BertNormalizer is supported", n.Type)
	}
	or := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	lower := or(n.Lowercase, true)
	t.norm = normalizer{
		clean:   or(n.CleanText, true),
		chinese: or(n.ChineseChars, true),
		lower:   lower,
		strip:   or(n.StripAccents, lower),
	}
	return nil
}

// parsePostProcessor reads a TemplateProcessing or BertProcessing.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return unsupported("post_processor", "missing: want TemplateProcessing or BertProcessing")
	}
	var kind typed
	if err := json.Unmarshal(raw, &kind); err != nil {
		return malformed("post_processor", "%v", err)
	}
	switch kind.Type {
	case "BertProcessing":
		var p struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed("post_processor", "%v", err)
		}
		cls, err := t.processorToken("post_processor.cls", p.Cls)
		if err != nil {
			return err
		}
		sep, err := t.processorToken("post_processor.sep", p.Sep)
		if err != nil {
			return err
		}
		t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
		t.pair = template{
			{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}},
			{seq: 1, typeID: 1}, {seq: seqSpecial, ids: []int32{sep}, typeID: 1},
		}
		return nil
	case "TemplateProcessing":
		var p struct {
			Single   []json.RawMessage `json:"single"`
			Pair     []json.RawMessage `json:"pair"`
			Specials map[string]struct {
				IDs []int `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return malformed("post_processor", "%v", err)
		}
		specials := make(map[string][]int32, len(p.Specials))
		for name, s := range p.Specials {
			ids := make([]int32, len(s.IDs))
			for i, id := range s.IDs {
				if id < 0 || id >= len(t.tokens) {
					return malformed("post_processor.special_tokens."+name, "id %d is not a token id", id)
				}
				ids[i] = int32(id)
			}
			specials[name] = ids
		}
		var err error
		if t.single, err = parseTemplate("post_processor.single", p.Single, specials, 1); err != nil {
			return err
		}
		t.pair, err = parseTemplate("post_processor.pair", p.Pair, specials, 2)
		return err
	default:
		return unsupported("post_processor.type", "%q: only TemplateProcessing and BertProcessing are supported", kind.Type)
	}
}

// processorToken reads a BertProcessing ["[CLS]", 101] pair.
func (t *Tokenizer) processorToken(object string, raw []json.RawMessage) (int32, error) {
	var id int
	if len(raw) != 2 || json.Unmarshal(raw[1], &id) != nil {
		return 0, malformed(object, "want [token, id]")
	}
	if id < 0 || id >= len(t.tokens) {
		return 0, malformed(object, "id %d is not a token id", id)
	}
	return int32(id), nil
}

// parseTemplate reads TemplateProcessing items: {"SpecialToken": {"id",
// "type_id"}} or {"Sequence": {"id": "A"|"B", "type_id"}}. A template for
// seqs sequences must hold A (and B when seqs is 2) exactly once.
func parseTemplate(object string, items []json.RawMessage, specials map[string][]int32, seqs int) (template, error) {
	var tp template
	count := [2]int{}
	for i, raw := range items {
		var it struct {
			Special *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int64  `json:"type_id"`
			} `json:"Sequence"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "%v", err)
		}
		switch {
		case it.Special != nil && it.Sequence == nil:
			ids, ok := specials[it.Special.ID]
			if !ok {
				return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "special token %q is not in special_tokens", it.Special.ID)
			}
			tp = append(tp, templateItem{seq: seqSpecial, ids: ids, typeID: it.Special.TypeID})
		case it.Sequence != nil && it.Special == nil:
			seq := map[string]int8{"A": 0, "B": 1}[it.Sequence.ID]
			if it.Sequence.ID != "A" && it.Sequence.ID != "B" || int(seq) >= seqs {
				return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "sequence %q", it.Sequence.ID)
			}
			count[seq]++
			tp = append(tp, templateItem{seq: seq, typeID: it.Sequence.TypeID})
		default:
			return nil, malformed(fmt.Sprintf("%s[%d]", object, i), "want one of SpecialToken or Sequence")
		}
	}
	if count[0] != 1 || (seqs == 2 && count[1] != 1) {
		return nil, malformed(object, "want each sequence exactly once")
	}
	return tp, nil
}
