package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// pattern is a Replace or Split pattern: {"String": s} or {"Regex": re}.
type pattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// compile returns the pattern as a regular expression (a string pattern
// quoted). The library uses Oniguruma; Go's RE2 syntax covers the patterns
// without look-around or backreferences, and the others are refused.
func (p pattern) compile(object string) (*regexp.Regexp, string, error) {
	switch {
	case p.String != nil && p.Regex == nil:
		return regexp.MustCompile(regexp.QuoteMeta(*p.String)), *p.String, nil
	case p.Regex != nil && p.String == nil:
		re, err := regexp.Compile(*p.Regex)
		if err != nil {
			return nil, "", unsupported(object, "regular expression %q: %v (Go's RE2 has no look-around or backreferences)", *p.Regex, err)
		}
		return re, "", nil
	}
	return nil, "", malformed(object, "want {\"String\": ...} or {\"Regex\": ...}")
}

// parseNormalizer reads a normalizer; null means none.
func parseNormalizer(object string, raw json.RawMessage) (textNormalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n struct {
		Type         string            `json:"type"`
		CleanText    *bool             `json:"clean_text"`
		ChineseChars *bool             `json:"handle_chinese_chars"`
		StripAccents *bool             `json:"strip_accents"`
		Lowercase    *bool             `json:"lowercase"`
		Normalizers  []json.RawMessage `json:"normalizers"`
		Pattern      pattern           `json:"pattern"`
		Content      string            `json:"content"`
		StripLeft    bool              `json:"strip_left"`
		StripRight   bool              `json:"strip_right"`
		Prepend      string            `json:"prepend"`
		Charsmap     *string           `json:"precompiled_charsmap"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, malformed(object, "%v", err)
	}
	or := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	switch n.Type {
	case "BertNormalizer":
		lower := or(n.Lowercase, true)
		return bertNorm{normalizer{
			clean:   or(n.CleanText, true),
			chinese: or(n.ChineseChars, true),
			lower:   lower,
			strip:   or(n.StripAccents, lower),

			keepUnassigned: true,
		}}, nil
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "StripAccents":
		return stripAccentsNorm{}, nil
	case "Strip":
		return stripNorm{left: n.StripLeft, right: n.StripRight}, nil
	case "Prepend":
		return prependNorm{n.Prepend}, nil
	case "ByteLevel":
		return byteLevelNorm{}, nil
	case "Replace":
		re, lit, err := n.Pattern.compile(object + ".pattern")
		if err != nil {
			return nil, err
		}
		if n.Pattern.String != nil {
			return replaceNorm{pattern: lit, content: n.Content}, nil
		}
		return replaceNorm{re: re, content: n.Content}, nil
	case "Precompiled":
		if n.Charsmap == nil || *n.Charsmap == "" {
			return nil, malformed(object+".precompiled_charsmap", "missing or empty")
		}
		p, err := parsePrecompiled(*n.Charsmap)
		if err != nil {
			return nil, malformed(object, "%v", err)
		}
		return p, nil
	case "Sequence":
		var seq seqNorm
		for i, r := range n.Normalizers {
			c, err := parseNormalizer(fmt.Sprintf("%s.normalizers[%d]", object, i), r)
			if err != nil {
				return nil, err
			}
			if c != nil {
				seq = append(seq, c)
			}
		}
		return seq, nil
	}
	return nil, unsupported(object+".type", "%q: not a supported normalizer", n.Type)
}

func parseBehavior(object, s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return splitRemoved, nil
	case "Isolated":
		return splitIsolated, nil
	case "MergedWithPrevious":
		return splitMergedWithPrevious, nil
	case "MergedWithNext":
		return splitMergedWithNext, nil
	case "Contiguous":
		return splitContiguous, nil
	}
	return 0, malformed(object, "split behavior %q", s)
}

// parsePreTokenizer reads a pre-tokenizer; null means none.
func parsePreTokenizer(object string, raw json.RawMessage) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var p struct {
		Type           string            `json:"type"`
		AddPrefixSpace *bool             `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
		Replacement    string            `json:"replacement"`
		PrependScheme  *string           `json:"prepend_scheme"`
		Split          *bool             `json:"split"`
		Pattern        pattern           `json:"pattern"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		Individual     bool              `json:"individual_digits"`
		Delimiter      string            `json:"delimiter"`
		PreTokenizers  []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, malformed(object, "%v", err)
	}
	or := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	switch p.Type {
	case "BertPreTokenizer":
		return bertPreTok{}, nil
	case "Whitespace":
		return whitespacePreTok{}, nil
	case "WhitespaceSplit":
		return whitespaceSplitPreTok{}, nil
	case "ByteLevel":
		return byteLevelPreTok{addPrefixSpace: or(p.AddPrefixSpace, true), useRegex: or(p.UseRegex, true)}, nil
	case "Metaspace":
		if utf8.RuneCountInString(p.Replacement) != 1 {
			return nil, malformed(object+".replacement", "%q is not one character", p.Replacement)
		}
		scheme := "always"
		if p.PrependScheme != nil {
			scheme = *p.PrependScheme
		}
		switch scheme {
		case "always", "first", "never":
		default:
			return nil, malformed(object+".prepend_scheme", "%q: want always, first or never", scheme)
		}
		if p.AddPrefixSpace != nil && !*p.AddPrefixSpace {
			if p.PrependScheme != nil && scheme != "never" {
				return nil, malformed(object, "add_prefix_space false contradicts prepend_scheme %q", scheme)
			}
			scheme = "never"
		}
		return metaspacePreTok{replacement: p.Replacement, prepend: scheme, doSplit: or(p.Split, true)}, nil
	case "Split":
		re, _, err := p.Pattern.compile(object + ".pattern")
		if err != nil {
			return nil, err
		}
		b, err := parseBehavior(object+".behavior", p.Behavior)
		if err != nil {
			return nil, err
		}
		return splitPreTok{re: re, behavior: b, invert: p.Invert}, nil
	case "Punctuation":
		b := splitIsolated
		if p.Behavior != "" {
			var err error
			if b, err = parseBehavior(object+".behavior", p.Behavior); err != nil {
				return nil, err
			}
		}
		return punctuationPreTok{b}, nil
	case "Digits":
		return digitsPreTok{p.Individual}, nil
	case "CharDelimiterSplit":
		if utf8.RuneCountInString(p.Delimiter) != 1 {
			return nil, malformed(object+".delimiter", "%q is not one character", p.Delimiter)
		}
		r, _ := utf8.DecodeRuneInString(p.Delimiter)
		return charDelimiterPreTok{r}, nil
	case "Sequence":
		var seq seqPreTok
		for i, r := range p.PreTokenizers {
			c, err := parsePreTokenizer(fmt.Sprintf("%s.pretokenizers[%d]", object, i), r)
			if err != nil {
				return nil, err
			}
			if c != nil {
				seq = append(seq, c)
			}
		}
		return seq, nil
	}
	return nil, unsupported(object+".type", "%q: not a supported pre-tokenizer", p.Type)
}
