package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kinds of tokenizer file a Source holds.
const (
	SourceTokenizerJSON = "tokenizer.json"
	SourceVocab         = "vocab.txt"
	SourceSentencePiece = "sentencepiece" // sentencepiece.bpe.model, spiece.model or spm.model
	// SourceByteLevelBPE is vocab.json and merges.txt (RobertaTokenizer's
	// and DebertaTokenizer's files); Data is the tokenizer.json
	// transformers converts them to (byteLevelBPEJSON), built as any.
	SourceByteLevelBPE = "vocab.json+merges.txt"
	// SourceAlbertSentencePiece is an ALBERT checkpoint's spiece.model;
	// Data is the tokenizer.json transformers' AlbertConverter makes of
	// it (albertSentencePieceJSON).
	SourceAlbertSentencePiece = "spiece.model (AlbertTokenizer)"
)

// Source is the one tokenizer file Load picks in a model directory, with
// the tokenizer_config.json settings Load applies to it, as data: what a
// generated package embeds so that FromSource rebuilds, in the package,
// exactly the tokenizer `sqc run` uses.
type Source struct {
	Kind string // SourceTokenizerJSON, SourceVocab, SourceSentencePiece, SourceByteLevelBPE or SourceAlbertSentencePiece
	// Name is the file's base name (sentencepiece.bpe.model selects the
	// XLM-R fairseq id layout, spm.model DeBERTa's), for errors and that
	// choice.
	Name string
	Data []byte
	// Options are tokenizer_config.json's BertTokenizer settings (used
	// with vocab.txt), and MaxLength its model_max_length (0: none),
	// which applies unless tokenizer.json sets its own truncation.
	Options   Options
	MaxLength int
}

// sourceFiles are the tokenizer files ReadSource looks for in a model
// directory, in its order of preference.
var sourceFiles = []struct{ name, kind string }{
	{"tokenizer.json", SourceTokenizerJSON}, {"vocab.txt", SourceVocab},
	{"sentencepiece.bpe.model", SourceSentencePiece}, {"spiece.model", SourceSentencePiece}, {"spm.model", SourceSentencePiece},
	{"vocab.json", SourceByteLevelBPE},
}

// HasSource reports whether dir holds a tokenizer file ReadSource (and
// Load) would use.
func HasSource(dir string) bool {
	for _, c := range sourceFiles {
		if _, err := os.Stat(filepath.Join(dir, c.name)); err == nil {
			return true
		}
	}
	return false
}

// ReadSource reads the tokenizer file of dir that Load would use.
func ReadSource(dir string) (*Source, error) {
	cfg, err := readTokenizerConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	for _, c := range sourceFiles {
		path := filepath.Join(dir, c.name)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, badInput(path, "", err)
		}
		if err := cfg.checkSentencePiece(c.kind, c.name); err != nil {
			return nil, err
		}
		kind, data, err := convertSource(dir, c.kind, c.name, data)
		if err != nil {
			return nil, err
		}
		return &Source{Kind: kind, Name: c.name, Data: data, Options: cfg.opts, MaxLength: cfg.maxLength}, nil
	}
	return nil, badInput(dir, "", errors.New("no tokenizer.json, vocab.txt, sentencepiece.bpe.model, spiece.model, spm.model or vocab.json with merges.txt in the directory"))
}

// checkSentencePiece refuses the tokenizer_config.json settings that
// change how a SentencePiece file of kind and base name tokenizes and
// that sqc does not compute: DebertaV2Tokenizer's do_lower_case true and
// split_by_punct true for spm.model (DeBERTa's defaults are false).
func (cfg *tokenizerConfig) checkSentencePiece(kind, name string) error {
	if kind != SourceSentencePiece || spLayoutOf(name) != spLayoutDeBERTa {
		return nil
	}
	switch {
	case cfg.lowerSet && cfg.opts.Lowercase:
		return badInput(cfg.path, "do_lower_case", fmt.Errorf("%w: true for %s: DebertaV2Tokenizer's lowercasing is not supported (its default, false, is)", ErrUnsupported, name))
	case cfg.splitByPunct:
		return badInput(cfg.path, "split_by_punct", fmt.Errorf("%w: true for %s: splitting on punctuation before SentencePiece is not supported", ErrUnsupported, name))
	}
	return nil
}

// convertSource turns the bytes of a tokenizer file of dir (name, kind)
// that transformers converts before use into the tokenizer.json it makes
// of them: vocab.json (with its merges.txt, byteLevelBPEJSON), and a
// SentencePiece file the directory says is ALBERT's (see isAlbert:
// AlbertTokenizer lowercases, strips accents and writes [CLS] A [SEP],
// which the SentencePiece layouts read here do not;
// albertSentencePieceJSON). Anything else is returned as it is.
func convertSource(dir, kind, name string, data []byte) (string, []byte, error) {
	if kind == SourceByteLevelBPE {
		data, err := byteLevelBPEJSON(dir, data)
		return kind, data, err
	}
	if kind != SourceSentencePiece || spLayoutOf(name) != spLayoutT5 {
		return kind, data, nil
	}
	albert, err := isAlbert(dir)
	if err != nil || !albert {
		return kind, data, err
	}
	data, err = albertSentencePieceJSON(dir, filepath.Join(dir, name), data)
	return SourceAlbertSentencePiece, data, err
}

// ReadSourceFile reads the tokenizer file at path, which may have any
// name (a --vocab flag's): byte-level BPE for a file named vocab.json
// (with the merges.txt beside it), tokenizer.json for any other .json
// file, a SentencePiece model for a .model file (named
// sentencepiece.bpe.model, it gets XLM-R's fairseq id layout, as in a
// model directory), else a WordPiece vocab.txt;
// with the settings of a tokenizer_config.json beside it, as ReadSource
// applies them (none: the defaults, lowercasing a vocab.txt).
func ReadSourceFile(path string) (*Source, error) {
	cfg, err := readTokenizerConfig(filepath.Join(filepath.Dir(path), "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput(path, "", err)
	}
	kind := SourceVocab
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		kind = SourceTokenizerJSON
	case ".model":
		kind = SourceSentencePiece
	}
	if filepath.Base(path) == "vocab.json" {
		kind = SourceByteLevelBPE
	}
	if err := cfg.checkSentencePiece(kind, filepath.Base(path)); err != nil {
		return nil, err
	}
	if kind, data, err = convertSource(filepath.Dir(path), kind, filepath.Base(path), data); err != nil {
		return nil, err
	}
	return &Source{Kind: kind, Name: filepath.Base(path), Data: data, Options: cfg.opts, MaxLength: cfg.maxLength}, nil
}

// LoadFile builds the tokenizer of the file at path as ReadSourceFile
// reads it; errors name the file.
func LoadFile(path string) (*Tokenizer, error) {
	src, err := ReadSourceFile(path)
	if err != nil {
		return nil, err
	}
	return fromSource(src, filepath.Dir(path))
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
	case SourceTokenizerJSON, SourceByteLevelBPE, SourceAlbertSentencePiece:
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
		if t, err = newSentencePiece(m, spLayoutOf(s.Name)); err != nil {
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
