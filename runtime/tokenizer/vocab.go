package tokenizer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// FromVocabFile builds a tokenizer from a vocab.txt: one token per line,
// the id of a token being its line number from 0.
func FromVocabFile(path string, opts Options) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, badInput(path, "", err)
	}
	defer f.Close()
	t, err := FromVocab(f, opts)
	if err != nil {
		return nil, inFile(path, err)
	}
	return t, nil
}

// FromVocab builds a tokenizer from a vocab.txt read from r.
func FromVocab(r io.Reader, opts Options) (*Tokenizer, error) {
	tokens, err := readVocab(r)
	if err != nil {
		return nil, err
	}
	return newFromVocab(tokens, opts)
}

// readVocab reads one token per line. As transformers' load_vocab does, it
// strips only the line ending ("\n", and "\r" before it) and keeps empty
// lines as tokens.
func readVocab(r io.Reader) ([]string, error) {
	br := bufio.NewReader(r)
	var tokens []string
	for line := 1; ; line++ {
		s, err := br.ReadString('\n')
		if s == "" && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, badInput("", "", err)
		}
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
		if !utf8.ValidString(s) {
			return nil, badInput("", fmt.Sprintf("line %d", line), fmt.Errorf("%w: token is not valid UTF-8", ErrMalformed))
		}
		tokens = append(tokens, s)
		if err == io.EOF {
			break
		}
	}
	if len(tokens) == 0 {
		return nil, badInput("", "", ErrEmptyVocab)
	}
	return tokens, nil
}

// Load reads the tokenizer saved in a HuggingFace model directory:
// tokenizer.json when present, else vocab.txt with the settings of
// tokenizer_config.json (do_lower_case, strip_accents,
// tokenize_chinese_chars, the special tokens; do_lower_case defaults to
// true, as in BertTokenizer), else a SentencePiece sentencepiece.bpe.model,
// spiece.model or spm.model (see FromSentencePieceFile), else vocab.json
// and merges.txt (byte-level BPE, RoBERTa's or DeBERTa v1's). Either way
// model_max_length from tokenizer_config.json sets MaxLength when
// tokenizer.json does not.
func Load(dir string) (*Tokenizer, error) {
	src, err := ReadSource(dir)
	if err != nil {
		return nil, err
	}
	return fromSource(src, dir)
}

// tokenizerConfig is what Load takes from tokenizer_config.json.
type tokenizerConfig struct {
	opts      Options
	maxLength int // 0 when absent or unbounded
	// path is the file read ("" where there was none); lowerSet says
	// whether it sets do_lower_case, and splitByPunct is its
	// split_by_punct (DebertaV2Tokenizer's), which spm.model's layout
	// checks (checkSentencePiece).
	path         string
	lowerSet     bool
	splitByPunct bool
}

// maxSaneLength bounds model_max_length: transformers writes int(1e30)
// when a model has no limit, which means "use the default" here.
const maxSaneLength = 1 << 20

// ReadConfig reads the BertTokenizer settings of a tokenizer_config.json
// (do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length,
// the special tokens) as Load uses them with vocab.txt; do_lower_case
// defaults to true and a missing file means the defaults. Errors name the
// file and match ErrBadInput.
func ReadConfig(path string) (Options, error) {
	cfg, err := readTokenizerConfig(path)
	return cfg.opts, err
}

func readTokenizerConfig(path string) (tokenizerConfig, error) {
	cfg := tokenizerConfig{opts: Options{Lowercase: true}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, badInput(path, "", err)
	}
	var raw struct {
		DoLowerCase          *bool           `json:"do_lower_case"`
		StripAccents         *bool           `json:"strip_accents"`
		TokenizeChineseChars *bool           `json:"tokenize_chinese_chars"`
		ModelMaxLength       *float64        `json:"model_max_length"`
		UnkToken             json.RawMessage `json:"unk_token"`
		ClsToken             json.RawMessage `json:"cls_token"`
		SepToken             json.RawMessage `json:"sep_token"`
		PadToken             json.RawMessage `json:"pad_token"`
		MaskToken            json.RawMessage `json:"mask_token"`
		SplitByPunct         bool            `json:"split_by_punct"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return cfg, badInput(path, "", fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	cfg.path, cfg.lowerSet, cfg.splitByPunct = path, raw.DoLowerCase != nil, raw.SplitByPunct
	if raw.DoLowerCase != nil {
		cfg.opts.Lowercase = *raw.DoLowerCase
	}
	cfg.opts.StripAccents = raw.StripAccents
	if raw.TokenizeChineseChars != nil {
		cfg.opts.NoChineseChars = !*raw.TokenizeChineseChars
	}
	if m := raw.ModelMaxLength; m != nil && *m >= 1 && *m <= maxSaneLength {
		cfg.maxLength = int(*m)
		cfg.opts.MaxLength = cfg.maxLength
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"unk_token", raw.UnkToken, &cfg.opts.UnkToken},
		{"cls_token", raw.ClsToken, &cfg.opts.ClsToken},
		{"sep_token", raw.SepToken, &cfg.opts.SepToken},
		{"pad_token", raw.PadToken, &cfg.opts.PadToken},
		{"mask_token", raw.MaskToken, &cfg.opts.MaskToken},
	} {
		s, err := tokenContent(f.raw)
		if err != nil {
			return cfg, badInput(path, f.name, err)
		}
		*f.dst = s
	}
	return cfg, nil
}

// tokenContent reads a special token written either as a string or as a
// serialised AddedToken {"content": ...} (addedTokenSpec); "" when absent
// or null.
func tokenContent(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	t, err := addedTokenSpec(raw, false)
	return t.Content, err
}
