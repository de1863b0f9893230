package tokenizer

import "sort"

// addedToken is a token matched verbatim in the text before WordPiece: the
// special tokens, and the added_tokens of a tokenizer.json.
type addedToken struct {
	content string
	id      int32
	// tokenizer.json options: match only as a whole word, take the
	// whitespace on the left or right along.
	singleWord, lstrip, rstrip bool
}

// matcher finds added tokens leftmost-longest, as the transformers Trie and
// the tokenizers AddedVocabulary do.
type matcher struct {
	tokens []addedToken // longest first
	first  [256]bool    // first bytes of the tokens, to skip most positions
}

func newMatcher(tokens []addedToken) matcher {
	var m matcher
	m.tokens = append([]addedToken(nil), tokens...)
	sort.SliceStable(m.tokens, func(i, j int) bool { return len(m.tokens[i].content) > len(m.tokens[j].content) })
	for _, t := range m.tokens {
		m.first[t.content[0]] = true
	}
	return m
}

// find returns the byte offset and the token of the leftmost-longest match
// in s, or -1. Token contents are valid UTF-8 and start with a rune's first
// byte, so a match never starts inside a rune (invalid bytes decode one at
// a time, so they never hide one either).
func (m *matcher) find(s string) (int, *addedToken) {
	if len(m.tokens) == 0 {
		return -1, nil
	}
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for k := range m.tokens {
			t := &m.tokens[k]
			if len(s)-i >= len(t.content) && s[i:i+len(t.content)] == t.content {
				return i, t
			}
		}
	}
	return -1, nil
}

// findBytes is find on a byte slice, without converting it.
func (m *matcher) findBytes(s []byte) (int, addedToken) {
	if len(m.tokens) == 0 {
		return -1, addedToken{}
	}
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for _, t := range m.tokens {
			if len(s)-i >= len(t.content) && string(s[i:i+len(t.content)]) == t.content {
				return i, t
			}
		}
	}
	return -1, addedToken{}
}
