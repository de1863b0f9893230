package tokenizer

import (
	"fmt"
)

// Default values of Options fields left zero.
const (
	DefaultMaxLength            = 512 // BERT's position table
	DefaultMaxInputCharsPerWord = 100 // longer words become [UNK]
	DefaultContinuingPrefix     = "##"
)

// Options configure a Tokenizer built from a plain vocabulary (vocab.txt).
// The zero value is a cased BERT tokenizer with the standard special tokens.
type Options struct {
	// Lowercase lowercases the text (transformers' do_lower_case); set it
	// for uncased vocabularies such as bert-base-uncased.
	Lowercase bool
	// StripAccents removes accents (NFD, then drop category Mn). nil
	// follows Lowercase, as transformers' strip_accents=None does.
	StripAccents *bool
	// NoChineseChars turns off the spaces put around CJK ideographs
	// (tokenize_chinese_chars=False).
	NoChineseChars bool
	// MaxLength is the longest encoding, special tokens included; 0 means
	// DefaultMaxLength. It must leave room for the pair template (3).
	MaxLength int
	// MaxInputCharsPerWord: longer words become [UNK]; 0 means 100.
	MaxInputCharsPerWord int
	// Special tokens; empty means [UNK], [CLS], [SEP], [PAD], [MASK].
	// UNK, CLS and SEP must be in the vocabulary; PAD and MASK are used
	// when present (padding then uses id 0 under a zero attention mask).
	UnkToken, ClsToken, SepToken, PadToken, MaskToken string
}

// Tokenizer turns text into BERT encoder inputs. It is immutable and safe
// for concurrent use.
type Tokenizer struct {
	norm   normalizer
	wp     wordPiece
	tokens []string // id -> token; "" where an id has no token

	// raw holds the added tokens matched in the text as given (special
	// tokens; tokenizers' normalized=false), normed those matched after
	// normalisation (normalized=true, contents normalised).
	raw, normed matcher
	added       map[string]int32 // every added token by content, for ID

	single, pair template
	pad          int32
	maxLen       int

	// vocab is the model's token -> id map, for ID.
	vocab map[string]int32
	// pipe is the tokenizer.json pipeline; nil for a vocab.txt tokenizer,
	// which runs norm and wp.
	pipe *pipeline
	// hfTruncation: truncate as the tokenizers library does (tokenizer.json),
	// with strategy and direction; otherwise as transformers' BertTokenizer.
	hfTruncation bool
	// trimOffsets: offsets lose a token's leading and trailing spaces
	// (RobertaProcessing, ByteLevel post-processor); trimPrefixSpace keeps
	// the one space add_prefix_space put before the first token.
	trimOffsets, trimPrefixSpace bool
	strategy                     truncationStrategy
	truncateLeft                 bool
}

// template is a post-processing template: special tokens and the
// sequences A and B, each with a token type.
type template []templateItem

type templateItem struct {
	seq    int8    // seqSpecial, or 0 for A and 1 for B
	ids    []int32 // the special token's ids when seq == seqSpecial
	typeID int64
}

const seqSpecial = -1

// numSpecial is how many tokens the template adds around the sequences.
func (tp template) numSpecial() int {
	n := 0
	for _, it := range tp {
		n += len(it.ids)
	}
	return n
}

// newFromVocab builds a BERT tokenizer from a vocabulary (id = index).
// Errors name no file; the callers add it.
func newFromVocab(tokens []string, opts Options) (*Tokenizer, error) {
	if len(tokens) == 0 {
		return nil, badInput("", "", ErrEmptyVocab)
	}
	vocab := make(map[string]int32, len(tokens))
	for id, tok := range tokens {
		// A duplicate keeps its last id, as transformers' load_vocab does.
		vocab[tok] = int32(id)
	}
	name := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	unkTok, clsTok, sepTok := name(opts.UnkToken, "[UNK]"), name(opts.ClsToken, "[CLS]"), name(opts.SepToken, "[SEP]")
	padTok, maskTok := name(opts.PadToken, "[PAD]"), name(opts.MaskToken, "[MASK]")
	lookup := func(tok string) (int32, error) {
		id, ok := vocab[tok]
		if !ok {
			return 0, badInput("", tok, ErrMissingToken)
		}
		return id, nil
	}
	unk, err := lookup(unkTok)
	if err != nil {
		return nil, err
	}
	cls, err := lookup(clsTok)
	if err != nil {
		return nil, err
	}
	sep, err := lookup(sepTok)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{tokens: tokens, added: map[string]int32{}, vocab: vocab}
	var specials []addedToken
	for _, tok := range []string{unkTok, clsTok, sepTok, padTok, maskTok} {
		if id, ok := vocab[tok]; ok {
			if _, dup := t.added[tok]; !dup {
				specials = append(specials, addedToken{content: tok, id: id})
				t.added[tok] = id
			}
		}
	}
	t.raw = newMatcher(specials)
	if id, ok := vocab[padTok]; ok {
		t.pad = id
	}
	strip := opts.Lowercase
	if opts.StripAccents != nil {
		strip = *opts.StripAccents
	}
	t.norm = normalizer{clean: true, chinese: !opts.NoChineseChars, lower: opts.Lowercase, strip: strip}
	maxChars := opts.MaxInputCharsPerWord
	if maxChars < 0 {
		return nil, badInput("", "max_input_chars_per_word", fmt.Errorf("%w: %d is negative", ErrBadOption, maxChars))
	}
	if maxChars == 0 {
		maxChars = DefaultMaxInputCharsPerWord
	}
	t.wp = newWordPiece(vocab, DefaultContinuingPrefix, unk, maxChars)
	t.single = template{{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}}}
	t.pair = template{
		{seq: seqSpecial, ids: []int32{cls}}, {seq: 0}, {seq: seqSpecial, ids: []int32{sep}},
		{seq: 1, typeID: 1}, {seq: seqSpecial, ids: []int32{sep}, typeID: 1},
	}
	if err := t.setMaxLength(opts.MaxLength); err != nil {
		return nil, err
	}
	return t, nil
}

// setMaxLength sets maxLen, 0 meaning the default.
func (t *Tokenizer) setMaxLength(n int) error {
	if n == 0 {
		n = DefaultMaxLength
	}
	if need := max(t.single.numSpecial(), t.pair.numSpecial()); n < need {
		return badInput("", "max_length", fmt.Errorf("%w: %d leaves no room for the %d special tokens of a pair", ErrBadOption, n, need))
	}
	t.maxLen = n
	return nil
}

// WithMaxLength returns a copy of t that truncates encodings to n tokens
// (special tokens included); 0 means DefaultMaxLength. The copy shares the
// vocabulary with t.
func (t *Tokenizer) WithMaxLength(n int) (*Tokenizer, error) {
	c := *t
	if err := c.setMaxLength(n); err != nil {
		return nil, err
	}
	return &c, nil
}

// MaxLength is the longest encoding t produces, special tokens included.
func (t *Tokenizer) MaxLength() int { return t.maxLen }

// VocabSize is one more than the largest token id: every id t produces is
// below it, so it is the number of rows an embedding table needs.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// ID returns the id of a token (a vocabulary entry such as "##ing", or an
// added token such as "[CLS]").
func (t *Tokenizer) ID(token string) (int, bool) {
	if id, ok := t.added[token]; ok {
		return int(id), true
	}
	id, ok := t.vocab[token]
	return int(id), ok
}

// Token returns the token with the given id.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) {
		return "", false
	}
	return t.tokens[id], true
}

// PadID is the id padding uses: [PAD]'s, or 0 without one.
func (t *Tokenizer) PadID() int { return int(t.pad) }

// ContinuingSubwordPrefix is the prefix the model spells the tokens that
// continue a word with: WordPiece's ("##" for vocab.txt; tokenizer.json's
// continuing_subword_prefix, "##" when absent), a BPE model's
// continuing_subword_prefix ("" when unset, as in byte-level BPE), and ""
// for the models that have none (Unigram, SentencePiece files,
// WordLevel). It is the tokenizers library's model.continuing_subword_prefix,
// which transformers' token classification pipeline reads to tell a
// word's continuation from a new word.
func (t *Tokenizer) ContinuingSubwordPrefix() string {
	if t.pipe == nil {
		return t.wp.prefix
	}
	switch m := t.pipe.model.(type) {
	case wordPieceModel:
		return m.wp.prefix
	case *bpe:
		return m.prefix
	}
	return ""
}

// UnknownID is the id of the model's unknown token, which it gives what its
// vocabulary cannot spell: WordPiece's and WordLevel's unk_token ([UNK] for
// vocab.txt), a BPE model's unk_token, a Unigram model's unk_id. ok is
// false for a BPE model without one (byte-level BPE, whose bytes spell
// everything). transformers' pipeline compares ids with the tokenizer's
// unk_token_id, which names the same token in the checkpoints it ships.
func (t *Tokenizer) UnknownID() (id int, ok bool) {
	if t.pipe == nil {
		return int(t.wp.unk), true
	}
	switch m := t.pipe.model.(type) {
	case wordPieceModel:
		return int(m.wp.unk), true
	case *bpe:
		if m.unk < 0 {
			return 0, false
		}
		return int(m.unk), true
	case *unigram:
		return int(m.unk), true
	case wordLevel:
		return int(m.unk), true
	}
	return 0, false
}
