package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Kinds of tokenizer file a Source holds.
const (
	SourceTokenizerJSON = "tokenizer.json"
	SourceVocab         = "vocab.txt"
	SourceSentencePiece = "sentencepiece" // sentencepiece.bpe.model or spiece.model
)

// Source is the one tokenizer file Load picks in a model directory, with
// the tokenizer_config.json settings Load applies to it, as data: what a
// generated package embeds so that FromSource rebuilds, in the package,
// exactly the tokenizer `sqc run` uses.
type Source struct {
	Kind string // SourceTokenizerJSON, SourceVocab or SourceSentencePiece
	// Name is the file's base name (sentencepiece.bpe.model selects the
	// XLM-R fairseq id layout), for errors and that choice.
	Name string
	Data []byte
	// Options are tokenizer_config.json's BertTokenizer settings (used
	// with vocab.txt), and MaxLength its model_max_length (0: none),
	// which applies unless tokenizer.json sets its own truncation.
	Options   Options
	MaxLength int
}

// ReadSource reads the tokenizer file of dir that Load would use.
func ReadSource(dir string) (*Source, error) {
	cfg, err := readTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	for _, c := range []struct{ name, kind string }{
		{"tokenizer.json", SourceTokenizerJSON}, {"vocab.txt", SourceVocab},
		{"sentencepiece.bpe.model", SourceSentencePiece}, {"spiece.model", SourceSentencePiece},
	} {
		path := filepath.Join(dir, c.name)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, badInput(path, "", err)
		}
		return &Source{Kind: c.kind, Name: c.name, Data: data, Options: cfg.opts, MaxLength: cfg.maxLength}, nil
	}
	return nil, badInput(dir, "", errors.New("no tokenizer.json, vocab.txt, sentencepiece.bpe.model or spiece.model in the directory"))
}

// FromSource builds the tokenizer of s as Load builds it from the files;
// errors name the file by s.Name.
func FromSource(s *Source) (*Tokenizer, error) { return fromSource(s, "") }

// fromSource is FromSource with errors naming the files of dir ("": their
// base names).
func fromSource(s *Source, dir string) (*Tokenizer, error) {
	file, config := filepath.Join(dir, s.Name), filepath.Join(dir, "tokenizer_config.json")
	var t *Tokenizer
	switch s.Kind {
	case SourceTokenizerJSON:
		tj, truncated, err := parseTokenizerJSON(s.Data)
		if err != nil {
			return nil, inFile(file, err)
		}
		if !truncated && s.MaxLength > 0 {
			if err := tj.setMaxLength(s.MaxLength); err != nil {
				return nil, inFile(config, err)
			}
		}
		return tj, nil
	case SourceVocab:
		t, err := FromVocab(bytes.NewReader(s.Data), s.Options)
		if err != nil {
			return nil, inFile(file, err)
		}
		return t, nil
	case SourceSentencePiece:
		m, err := parseSentencePiece(s.Data)
		if err != nil {
			return nil, inFile(file, malformed("", "%v", err))
		}
		if t, err = newSentencePiece(m, s.Name == "sentencepiece.bpe.model"); err != nil {
			return nil, inFile(file, err)
		}
		if s.MaxLength > 0 {
			if err := t.setMaxLength(s.MaxLength); err != nil {
				return nil, inFile(config, err)
			}
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w: tokenizer source kind %q", ErrUnsupported, s.Kind)
}
