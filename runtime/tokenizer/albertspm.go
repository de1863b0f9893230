package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"unicode"
	"unicode/utf8"
)

// ALBERT checkpoints saved by older transformers (textattack's
// classifiers among them) ship spiece.model and no tokenizer.json.
// AutoTokenizer reads it with AlbertTokenizerFast, made by
// convert_slow_tokenizer's AlbertConverter; albertSentencePieceJSON
// writes the tokenizer.json that conversion makes, so the tokenizer.json
// pipeline runs it and a generated package embeds it.

// albertRoleDefaults are AlbertTokenizer's special tokens, in bpeRoles'
// order (bos, eos, unk, sep, pad, cls, mask).
var albertRoleDefaults = []string{"[CLS]", "[SEP]", "<unk>", "[SEP]", "<pad>", "[CLS]", "[MASK]"}

// isAlbert reports whether dir's tokenizer_config.json names
// AlbertTokenizer (or its Fast twin) or, without a tokenizer_class, its
// config.json says model_type albert; the file and key that say so name
// where the answer came from.
func isAlbert(dir string) (bool, error) {
	config, err := readJSONObject(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return false, err
	}
	if raw := config["tokenizer_class"]; !isNull(raw) {
		var class string
		if json.Unmarshal(raw, &class) != nil {
			return false, badInput(filepath.Join(dir, "tokenizer_config.json"), "tokenizer_class", fmt.Errorf("%w: not a string", ErrMalformed))
		}
		return class == "AlbertTokenizer" || class == "AlbertTokenizerFast", nil
	}
	model, err := readJSONObject(filepath.Join(dir, "config.json"))
	if err != nil {
		return false, err
	}
	var modelType string
	return json.Unmarshal(model["model_type"], &modelType) == nil && modelType == "albert", nil
}

// albertSentencePieceJSON converts an ALBERT spiece.model (data, at path)
// with the settings of dir's tokenizer_config.json (do_lower_case, default
// true; keep_accents, default false), special_tokens_map.json and
// added_tokens.json as AlbertConverter does:
//
//   - normalizer: “ and ” to ", NFKD and accents stripped (unless
//     keep_accents), lowercase (if do_lower_case), the model's precompiled
//     charsmap, runs of spaces to one;
//   - pre-tokenizer: Metaspace, ▁ prepended always;
//   - model: unigram over the pieces and scores, a piece of two or more
//     characters ending in a digit and a comma 100 lower (the slow
//     tokenizer splits those off again), no byte fallback;
//   - [CLS] A [SEP] and [CLS] A [SEP] B [SEP], B and its [SEP] of type 1;
//   - added tokens: the special tokens ([MASK] taking the space before
//     it), then the model's control and user-defined pieces.
func albertSentencePieceJSON(dir, path string, data []byte) ([]byte, error) {
	m, err := parseSentencePiece(data)
	if err != nil {
		return nil, badInput(path, "", fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	if m.modelType != 1 {
		return nil, badInput(path, "trainer_spec.model_type", fmt.Errorf("%w: %d: only unigram SentencePiece models are supported", ErrUnsupported, m.modelType))
	}
	if m.unkID < 0 {
		return nil, badInput(path, "pieces", fmt.Errorf("%w: no piece of type UNKNOWN", ErrMalformed))
	}
	settings, err := readSlowSettings(dir)
	if err != nil {
		return nil, err
	}
	lower, err := settings.bool("do_lower_case", true)
	if err != nil {
		return nil, err
	}
	keepAccents, err := settings.bool("keep_accents", false)
	if err != nil {
		return nil, err
	}

	vocab := make(map[string]int, len(m.pieces))
	byID := make(map[int]string, len(m.pieces))
	pieces := make([][2]any, len(m.pieces))
	for i, p := range m.pieces {
		if _, dup := vocab[p]; !dup {
			vocab[p] = i
		}
		byID[i] = p
		score := m.scores[i]
		if !numberComma(p) {
			score -= 100
		}
		pieces[i] = [2]any{p, score}
	}
	added, _, err := specialAddedTokens(albertRoleDefaults, vocab, byID, settings)
	if err != nil {
		return nil, err
	}
	// The control and user-defined pieces, after the special tokens, whose
	// options (the mask's lstrip) they keep.
	have := map[string]bool{}
	for _, a := range added {
		have[a.Content] = true
	}
	for i, t := range m.types {
		if (t == spControl || t == spUserDefined) && !have[m.pieces[i]] {
			added = append(added, &addedTokenJSON{ID: i, Content: m.pieces[i], Special: t == spControl})
			have[m.pieces[i]] = true
		}
	}

	slices.SortStableFunc(added, func(a, b *addedTokenJSON) int { return a.ID - b.ID })

	post, err := clsSepTemplate(vocab, path, "AlbertTokenizer")
	if err != nil {
		return nil, err
	}
	replace := func(pattern map[string]string, content string) any {
		return map[string]any{"type": "Replace", "pattern": pattern, "content": content}
	}
	norms := []any{replace(map[string]string{"String": "``"}, `"`), replace(map[string]string{"String": "''"}, `"`)}
	if !keepAccents {
		norms = append(norms, map[string]any{"type": "NFKD"}, map[string]any{"type": "StripAccents"})
	}
	if lower {
		norms = append(norms, map[string]any{"type": "Lowercase"})
	}
	if len(m.charsmap) > 0 {
		norms = append(norms, map[string]any{"type": "Precompiled", "precompiled_charsmap": base64.StdEncoding.EncodeToString(m.charsmap)})
	}
	norms = append(norms, replace(map[string]string{"Regex": " {2,}"}, " "))
	file := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer":     map[string]any{"type": "Sequence", "normalizers": norms},
		"pre_tokenizer":  map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"post_processor": post,
		"decoder":        map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"model":          map[string]any{"type": "Unigram", "unk_id": m.unkID, "vocab": pieces, "byte_fallback": false},
	}
	return json.Marshal(file)
}

// numberComma is transformers' check_number_comma: false for a piece of
// two or more characters ending in a digit and a comma ("9,").
func numberComma(piece string) bool {
	last, n := utf8.DecodeLastRuneInString(piece)
	if utf8.RuneCountInString(piece) < 2 || last != ',' {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(piece[:len(piece)-n])
	return !unicode.IsDigit(prev)
}
