package tokenizer

import (
	"slices"
	"testing"
)

func TestGraphemeLen(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"abc", []string{"a", "b", "c"}},
		{"\r\n\n\r", []string{"\r\n", "\n", "\r"}},
		{"e\u0301\u0302x", []string{"e\u0301\u0302", "x"}},
		{"🇫🇷🇺🇸🇯", []string{"🇫🇷", "🇺🇸", "🇯"}},
		{"👨\u200d👩\u200d👧!", []string{"👨\u200d👩\u200d👧", "!"}},
		{"👍🏽a", []string{"👍🏽", "a"}},
		{"\u1100\u1161\u11a8가", []string{"\u1100\u1161\u11a8", "가"}},
		{"\u0600١", []string{"\u0600١"}},
		{"a\u200db", []string{"a\u200d", "b"}},
		{"\x00\u0301", []string{"\x00", "\u0301"}},
	}
	for _, c := range cases {
		var got []string
		for s := c.text; s != ""; {
			n := graphemeLen(s)
			got, s = append(got, s[:n]), s[n:]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: clusters %q, want %q", c.text, got, c.want)
		}
	}
}
