package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// vocab.json and merges.txt are GPT-2's byte-level BPE as transformers'
// RobertaTokenizer and DebertaTokenizer (DeBERTa v1) save it: many RoBERTa
// fine-tunes and nearly every DeBERTa v1 checkpoint ship these two files
// and no tokenizer.json. transformers' AutoTokenizer turns them into a fast
// tokenizer with convert_slow_tokenizer's RobertaConverter or
// DebertaConverter; byteLevelBPEJSON writes the tokenizer.json that
// conversion makes, so the pipeline built from it is the one transformers
// runs, and a generated package embeds it as it embeds any tokenizer.json.

// bpeForm is how a tokenizer class adds special tokens to byte-level BPE.
type bpeForm int

const (
	// bpeRoberta: <s> A </s> </s> B </s>, every token type 0
	// (RobertaProcessing with the class's cls and sep tokens).
	bpeRoberta bpeForm = iota
	// bpeDeberta: [CLS] A [SEP] B [SEP], B and its [SEP] of type 1
	// (DebertaConverter's TemplateProcessing, whose tokens are literally
	// [CLS] and [SEP]).
	bpeDeberta
)

// bpeClassForms are the tokenizer_config.json tokenizer_class values
// (without a Fast suffix) whose vocab.json and merges.txt are read, after
// transformers' SLOW_TO_FAST_CONVERTERS (BART's, Longformer's, LED's and
// MVP's tokenizers are RoBERTa's).
var bpeClassForms = map[string]bpeForm{
	"RobertaTokenizer": bpeRoberta, "BartTokenizer": bpeRoberta, "LongformerTokenizer": bpeRoberta,
	"LEDTokenizer": bpeRoberta, "MvpTokenizer": bpeRoberta, "DebertaTokenizer": bpeDeberta,
}

// bpeModelTypeForms stand in for tokenizer_class where tokenizer_config.json
// does not say it: config.json's model_type picks the class, as
// AutoTokenizer's mapping does.
var bpeModelTypeForms = map[string]bpeForm{
	"roberta": bpeRoberta, "roberta-prelayernorm": bpeRoberta, "data2vec-text": bpeRoberta, "bart": bpeRoberta,
	"longformer": bpeRoberta, "led": bpeRoberta, "mvp": bpeRoberta, "deberta": bpeDeberta,
}

// bpeRoles are the special-token attributes in transformers'
// SPECIAL_TOKENS_ATTRIBUTES order, and bpeRoleDefaults each form's class
// defaults for them. Both classes wrap a mask token given as a string in
// AddedToken(lstrip=True): it takes the space before it.
var (
	bpeRoles        = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}
	bpeRoleDefaults = map[bpeForm][]string{
		bpeRoberta: {"<s>", "</s>", "<unk>", "</s>", "<pad>", "<s>", "<mask>"},
		bpeDeberta: {"[CLS]", "[SEP]", "[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"},
	}
)

// addedTokenJSON is an added token as tokenizer.json lists it, which is
// also how transformers serialises an AddedToken in tokenizer_config.json
// and special_tokens_map.json.
type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// byteLevelBPEJSON converts dir's vocab.json (vocabData) and merges.txt,
// with the settings of tokenizer_config.json, special_tokens_map.json and
// added_tokens.json beside them, to the tokenizer.json transformers makes
// of them. Errors name the file and what is wrong in it.
func byteLevelBPEJSON(dir string, vocabData []byte) ([]byte, error) {
	vocabPath := filepath.Join(dir, "vocab.json")
	settings, err := readSlowSettings(dir)
	if err != nil {
		return nil, err
	}
	form, err := bpeFormOf(dir, settings.config)
	if err != nil {
		return nil, err
	}
	var vocab map[string]int
	if err := json.Unmarshal(vocabData, &vocab); err != nil {
		return nil, badInput(vocabPath, "", fmt.Errorf("%w: want an object of token ids: %v", ErrMalformed, err))
	}
	if len(vocab) == 0 {
		return nil, badInput(vocabPath, "", ErrEmptyVocab)
	}
	byID := make(map[int]string, len(vocab))
	for _, tok := range slices.Sorted(maps.Keys(vocab)) { // sorted: errors name the same token every time
		id := vocab[tok]
		if id < 0 || id >= math.MaxInt32 {
			return nil, badInput(vocabPath, strconv.Quote(tok), fmt.Errorf("%w: id %d", ErrMalformed, id))
		}
		if other, dup := byID[id]; dup {
			return nil, badInput(vocabPath, strconv.Quote(tok), fmt.Errorf("%w: id %d is %q's too", ErrMalformed, id, other))
		}
		byID[id] = tok
	}
	merges, err := readMerges(filepath.Join(dir, "merges.txt"), vocab)
	if err != nil {
		return nil, err
	}
	added, roles, err := specialAddedTokens(bpeRoleDefaults[form], vocab, byID, settings)
	if err != nil {
		return nil, err
	}
	// Added tokens outside vocab.json join the model's vocabulary with
	// their own ids, which is where the tokenizers library looks them up
	// (merges cannot make them: every merge's parts and result were
	// checked against vocab.json alone).
	for _, a := range added {
		if _, ok := vocab[a.Content]; !ok {
			vocab[a.Content] = a.ID
		}
	}

	addPrefixSpace, err := settings.bool("add_prefix_space", false)
	if err != nil {
		return nil, err
	}
	var post map[string]any
	switch form {
	case bpeRoberta:
		trim, err := settings.bool("trim_offsets", true)
		if err != nil {
			return nil, err
		}
		cls, sep := roles["cls_token"], roles["sep_token"]
		if cls == nil || sep == nil {
			return nil, badInput(settings.configPath, "cls_token", fmt.Errorf("%w: RobertaTokenizer needs a cls_token and a sep_token", ErrMissingToken))
		}
		post = map[string]any{"type": "RobertaProcessing", "cls": []any{cls.Content, cls.ID}, "sep": []any{sep.Content, sep.ID},
			"trim_offsets": trim, "add_prefix_space": addPrefixSpace}
	case bpeDeberta:
		if post, err = clsSepTemplate(vocab, vocabPath, "DebertaTokenizer"); err != nil {
			return nil, err
		}
	}
	file := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": addPrefixSpace, "trim_offsets": true, "use_regex": true},
		"post_processor": post,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": merges},
	}
	return json.Marshal(file)
}

// bpeFormOf is the class of dir's vocab.json and merges.txt: config's
// tokenizer_class, else config.json's model_type.
func bpeFormOf(dir string, config map[string]json.RawMessage) (bpeForm, error) {
	if raw := config["tokenizer_class"]; !isNull(raw) {
		path := filepath.Join(dir, "tokenizer_config.json")
		var class string
		if err := json.Unmarshal(raw, &class); err != nil {
			return 0, badInput(path, "tokenizer_class", fmt.Errorf("%w: %v", ErrMalformed, err))
		}
		if f, ok := bpeClassForms[strings.TrimSuffix(class, "Fast")]; ok {
			return f, nil
		}
		return 0, badInput(path, "tokenizer_class", fmt.Errorf("%w: %q with vocab.json and merges.txt (byte-level BPE is read for RobertaTokenizer, DebertaTokenizer and RoBERTa's kin: BART, Longformer, LED, MVP)", ErrUnsupported, class))
	}
	path := filepath.Join(dir, "config.json")
	model, err := readJSONObject(path)
	if err != nil {
		return 0, err
	}
	var modelType string
	if raw := model["model_type"]; !isNull(raw) {
		if err := json.Unmarshal(raw, &modelType); err != nil {
			return 0, badInput(path, "model_type", fmt.Errorf("%w: %v", ErrMalformed, err))
		}
	}
	if modelType == "" {
		return 0, badInput(filepath.Join(dir, "vocab.json"), "", fmt.Errorf("%w: nothing says whose byte-level BPE vocab.json and merges.txt are (RoBERTa's <s> A </s> or DeBERTa's [CLS] A [SEP]): tokenizer_config.json has no tokenizer_class and config.json no model_type", ErrUnsupported))
	}
	if f, ok := bpeModelTypeForms[modelType]; ok {
		return f, nil
	}
	return 0, badInput(path, "model_type", fmt.Errorf("%w: %q with vocab.json and merges.txt and no tokenizer_class in tokenizer_config.json (byte-level BPE is read for RoBERTa and DeBERTa v1 and RoBERTa's kin)", ErrUnsupported, modelType))
}

// readMerges reads merges.txt: "a b" per line in rank order after the
// "#version" line both transformers and the tokenizers library write
// (and skip). Each merge's parts and result must be in vocab, as the
// tokenizers library requires.
func readMerges(path string, vocab map[string]int) ([][2]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, badInput(path, "", fmt.Errorf("%w: missing: vocab.json (byte-level BPE) needs its merges.txt beside it", ErrMalformed))
	}
	if err != nil {
		return nil, badInput(path, "", err)
	}
	if !utf8.Valid(data) {
		return nil, badInput(path, "", fmt.Errorf("%w: not UTF-8", ErrMalformed))
	}
	var merges [][2]string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if (i == 0 && strings.HasPrefix(line, "#version")) || strings.TrimSpace(line) == "" {
			continue
		}
		where := fmt.Sprintf("line %d", i+1)
		parts := strings.Fields(line)
		if len(parts) != 2 {
			return nil, badInput(path, where, fmt.Errorf("%w: want two tokens, got %d", ErrMalformed, len(parts)))
		}
		for _, t := range []string{parts[0], parts[1], parts[0] + parts[1]} {
			if _, ok := vocab[t]; !ok {
				return nil, badInput(path, where, fmt.Errorf("%w: %q is not in vocab.json", ErrMalformed, t))
			}
		}
		merges = append(merges, [2]string{parts[0], parts[1]})
	}
	return merges, nil
}

// slowSettings are the files transformers' slow tokenizers keep their
// settings in beside the vocabulary: tokenizer_config.json and
// special_tokens_map.json (their keys; nil without the file) and
// added_tokens.json (token -> id; nil without it).
type slowSettings struct {
	config, specialMap             map[string]json.RawMessage
	extra                          map[string]int
	configPath, mapPath, extraPath string
}

// readSlowSettings reads dir's slow-tokenizer settings files.
func readSlowSettings(dir string) (*slowSettings, error) {
	s := &slowSettings{configPath: filepath.Join(dir, "tokenizer_config.json"),
		mapPath: filepath.Join(dir, "special_tokens_map.json"), extraPath: filepath.Join(dir, "added_tokens.json")}
	var err error
	if s.config, err = readJSONObject(s.configPath); err != nil {
		return nil, err
	}
	if s.specialMap, err = readJSONObject(s.mapPath); err != nil {
		return nil, err
	}
	if s.extra, err = readAddedTokensJSON(s.extraPath); err != nil {
		return nil, err
	}
	return s, nil
}

// bool reads a boolean setting of tokenizer_config.json, def when absent
// or null.
func (s *slowSettings) bool(key string, def bool) (bool, error) {
	return configBool(s.config, s.configPath, key, def)
}

// clsSepTemplate is DebertaConverter's and AlbertConverter's
// post-processor: [CLS] A [SEP] and [CLS] A [SEP] B [SEP], B and its
// [SEP] of type 1, with the two tokens' ids in vocab; a vocabulary
// without them is an error naming path and the tokenizer class.
func clsSepTemplate(vocab map[string]int, path, class string) (map[string]any, error) {
	ids := map[string]int{}
	for _, t := range []string{"[CLS]", "[SEP]"} {
		id, ok := vocab[t]
		if !ok {
			return nil, badInput(path, t, fmt.Errorf("%w: %s puts %s in every sequence", ErrMissingToken, class, t))
		}
		ids[t] = id
	}
	special := func(t string, typeID int) any {
		return map[string]any{"SpecialToken": map[string]any{"id": t, "type_id": typeID}}
	}
	seq := func(s string, typeID int) any {
		return map[string]any{"Sequence": map[string]any{"id": s, "type_id": typeID}}
	}
	return map[string]any{"type": "TemplateProcessing",
		"single": []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)},
		"pair":   []any{special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 1), special("[SEP]", 1)},
		"special_tokens": map[string]any{
			"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{ids["[CLS]"]}, "tokens": []string{"[CLS]"}},
			"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{ids["[SEP]"]}, "tokens": []string{"[SEP]"}},
		}}, nil
}

// readAddedTokensJSON reads added_tokens.json (token -> id; nil without
// the file).
func readAddedTokensJSON(path string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, badInput(path, "", err)
	}
	var m map[string]int
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, badInput(path, "", fmt.Errorf("%w: want an object of token ids: %v", ErrMalformed, err))
	}
	for tok, id := range m {
		if id < 0 || id >= math.MaxInt32 {
			return nil, badInput(path, strconv.Quote(tok), fmt.Errorf("%w: id %d", ErrMalformed, id))
		}
	}
	return m, nil
}

// specialAddedTokens lists the added tokens the fast tokenizer gets, by id:
// tokenizer_config.json's added_tokens_decoder (transformers >= 4.34
// writes every added token there, with its options), then the special
// tokens (special_tokens_map.json's over tokenizer_config.json's over the
// class's defaults, in bpeRoles' order) and additional_special_tokens, then added_tokens.json's
// tokens. A token's id is vocab.json's, else added_tokens.json's, else
// added_tokens_decoder's; a token with none, or with two different ones,
// is an error. roles maps each set special-token role to its token.
func specialAddedTokens(defaults []string, vocab map[string]int, byID map[int]string, s *slowSettings) (added []*addedTokenJSON, roles map[string]*addedTokenJSON, err error) {
	config, specialMap, configPath, mapPath, extra := s.config, s.specialMap, s.configPath, s.mapPath, s.extra
	roles = map[string]*addedTokenJSON{}
	index := map[string]*addedTokenJSON{}
	add := func(t addedTokenJSON, file, object string) error {
		if t.Content == "" {
			return badInput(file, object, fmt.Errorf("%w: empty content", ErrMalformed))
		}
		if prev, ok := index[t.Content]; ok {
			prev.Special = prev.Special || t.Special
			return nil
		}
		id, inVocab := vocab[t.Content]
		if !inVocab {
			if x, ok := extra[t.Content]; ok {
				id = x
			} else if t.ID >= 0 {
				id = t.ID
			} else {
				return badInput(file, object, fmt.Errorf("%w: %q is in neither vocab.json nor added_tokens.json", ErrMissingToken, t.Content))
			}
			if other, taken := byID[id]; taken {
				return badInput(file, object, fmt.Errorf("%w: %q would take id %d, which vocab.json gives %q", ErrMalformed, t.Content, id, other))
			}
		}
		if t.ID >= 0 && t.ID != id {
			return badInput(file, object, fmt.Errorf("%w: %q has id %d here and %d in vocab.json or added_tokens.json", ErrMalformed, t.Content, t.ID, id))
		}
		t.ID = id
		index[t.Content] = &t
		added = append(added, &t)
		return nil
	}

	if raw := config["added_tokens_decoder"]; !isNull(raw) {
		var dec map[string]json.RawMessage
		if err := json.Unmarshal(raw, &dec); err != nil {
			return nil, nil, badInput(configPath, "added_tokens_decoder", fmt.Errorf("%w: %v", ErrMalformed, err))
		}
		keys := slices.Sorted(maps.Keys(dec))
		for _, k := range keys {
			object := "added_tokens_decoder." + k
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 || id >= math.MaxInt32 {
				return nil, nil, badInput(configPath, object, fmt.Errorf("%w: not a token id", ErrMalformed))
			}
			t, err := addedTokenSpec(dec[k], false)
			if err != nil {
				return nil, nil, badInput(configPath, object, err)
			}
			t.ID = id
			if err := add(t, configPath, object); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, role := range bpeRoles {
		file, raw := configPath, config[role]
		_, given := config[role]
		if r, ok := specialMap[role]; ok {
			file, raw, given = mapPath, r, true
		}
		if !given {
			raw, _ = json.Marshal(defaults[i])
		}
		if isNull(raw) {
			continue // the role is unset
		}
		t, err := addedTokenSpec(raw, role == "mask_token")
		if err != nil {
			return nil, nil, badInput(file, role, err)
		}
		t.Special, t.ID = true, -1
		if err := add(t, file, role); err != nil {
			return nil, nil, err
		}
		roles[role] = index[t.Content]
	}
	for _, src := range []struct {
		file string
		obj  map[string]json.RawMessage
	}{{mapPath, specialMap}, {configPath, config}} {
		raw := src.obj["additional_special_tokens"]
		if isNull(raw) {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, nil, badInput(src.file, "additional_special_tokens", fmt.Errorf("%w: want a list: %v", ErrMalformed, err))
		}
		for i, r := range list {
			object := fmt.Sprintf("additional_special_tokens[%d]", i)
			t, err := addedTokenSpec(r, false)
			if err != nil {
				return nil, nil, badInput(src.file, object, err)
			}
			t.Special, t.ID = true, -1
			if err := add(t, src.file, object); err != nil {
				return nil, nil, err
			}
		}
		break // special_tokens_map.json's list replaces tokenizer_config.json's
	}
	extraPath := s.extraPath
	for _, tok := range slices.Sorted(maps.Keys(extra)) {
		if err := add(addedTokenJSON{Content: tok, ID: -1, Normalized: true}, extraPath, strconv.Quote(tok)); err != nil {
			return nil, nil, err
		}
	}
	slices.SortStableFunc(added, func(a, b *addedTokenJSON) int { return a.ID - b.ID })
	return added, roles, nil
}

// addedTokenSpec reads a token given as a string or as a serialised
// AddedToken; a string mask token takes the space before it (lstrip), as
// RobertaTokenizer and DebertaTokenizer make it. Special tokens are never
// normalised.
func addedTokenSpec(raw json.RawMessage, mask bool) (addedTokenJSON, error) {
	t := addedTokenJSON{ID: -1}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		t.Content, t.LStrip = s, mask
		return t, nil
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("%w: want a string or {\"content\": string, ...}: %v", ErrMalformed, err)
	}
	t.ID = -1
	return t, nil
}

// configBool reads a boolean setting of tokenizer_config.json, def when
// absent or null.
func configBool(config map[string]json.RawMessage, path, key string, def bool) (bool, error) {
	raw := config[key]
	if isNull(raw) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, badInput(path, key, fmt.Errorf("%w: want true or false: %v", ErrMalformed, err))
	}
	return b, nil
}

// readJSONObject reads a JSON object file into its keys (nil without the
// file).
func readJSONObject(path string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, badInput(path, "", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, badInput(path, "", fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	return m, nil
}
