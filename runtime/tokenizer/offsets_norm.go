package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The normalizers' aligned forms: the same text as normalize, with the
// alignments the library's normalizers leave (each builds the list of
// changes the library's builds).

// aligned is the BertNormalizer in the library's order: clean text,
// Chinese characters, strip accents (NFD, drop Mn), lowercase.
func (n *normalizer) aligned(a aligned) aligned {
	if n.clean {
		a = a.filter(func(r rune) bool { return !n.cleanDrops(r) })
		a = a.mapRunes(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' || (r >= utf8.RuneSelf && unicode.Is(unicode.Zs, r)) {
				return ' '
			}
			return r
		})
	}
	if n.chinese {
		var cs []change
		for _, r := range a.s {
			if isCJK(r) {
				cs = append(cs, change{' ', 0}, change{r, 1}, change{' ', 1})
			} else {
				cs = append(cs, change{r, 0})
			}
		}
		a = a.transform(cs)
	}
	if n.strip {
		a = nfAligned(norm.NFD, a).filter(func(r rune) bool { return !unicode.Is(unicode.Mn, r) })
	}
	if n.lower {
		a = a.expand(appendLower)
	}
	return a
}

// cleanDrops reports whether clean text removes r (appendNormalized's test).
func (n *normalizer) cleanDrops(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIControl(byte(r))
	}
	return r == utf8.RuneError || (n.keepUnassigned && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)) || (!n.keepUnassigned && isOther(r))
}

// appendLower appends r lowercased with the full mapping (İ is "i̇").
func appendLower(dst []rune, r rune) []rune {
	if r == 'İ' {
		return append(dst, 'i', '\u0307')
	}
	return append(dst, unicode.ToLower(r))
}

func (b bertNorm) normalizeAligned(a aligned) aligned { return b.n.aligned(a) }

// nfAligned applies a Unicode normalization form segment by segment (a
// starter and the marks after it). Within a segment of m characters that
// becomes n: the first min(m, n) replace one for one and the rest are
// inserted (decomposition), or the first takes the m-n removed ones along
// (composition), which is how the library's normalization iterator reports
// them.
func nfAligned(f norm.Form, a aligned) aligned {
	if f.IsNormalString(a.s) {
		return a
	}
	var cs []change
	for s := a.s; s != ""; {
		n := f.NextBoundaryInString(s, true)
		if n <= 0 {
			n = len(s)
		}
		seg := s[:n]
		s = s[n:]
		out := seg
		if !f.IsNormalString(seg) {
			out = f.String(seg)
		}
		m := utf8.RuneCountInString(seg)
		k := 0
		for _, r := range out {
			c := change{r, 0}
			switch {
			case k >= m:
				c.n = 1
			case k == 0 && utf8.RuneCountInString(out) < m:
				c.n = utf8.RuneCountInString(out) - m
			}
			cs = append(cs, c)
			k++
		}
		if out == "" {
			cs = append(cs, skip(m))
		}
	}
	return a.transform(cs)
}

func (u unicodeNorm) normalizeAligned(a aligned) aligned { return nfAligned(u.form, a) }

func (lowercaseNorm) normalizeAligned(a aligned) aligned { return a.expand(appendLower) }

func (stripAccentsNorm) normalizeAligned(a aligned) aligned {
	return a.filter(func(r rune) bool { return !unicode.Is(unicode.M, r) })
}

// normalizeAligned trims as NormalizedString.lrstrip: the leading spaces
// are skipped, the trailing ones dropped.
func (n stripNorm) normalizeAligned(a aligned) aligned {
	s := a.s
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	lead := utf8.RuneCountInString(a.s[:len(a.s)-len(s)])
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	if len(s) == len(a.s) {
		return a
	}
	cs := []change{skip(lead)}
	for _, r := range s {
		cs = append(cs, change{r, 0})
	}
	return a.transform(cs)
}

func (n prependNorm) normalizeAligned(a aligned) aligned { return a.prepend(n.prefix) }

func (n replaceNorm) normalizeAligned(a aligned) aligned {
	var matches [][]int
	if n.re != nil {
		matches = n.re.FindAllStringIndex(a.s, -1)
	} else if n.pattern != "" {
		for from := 0; ; {
			i := strings.Index(a.s[from:], n.pattern)
			if i < 0 {
				break
			}
			matches = append(matches, []int{from + i, from + i + len(n.pattern)})
			from += i + len(n.pattern)
		}
	}
	if len(matches) == 0 {
		return a
	}
	return a.replace(matches, n.content)
}

// byteLevelAligned maps each byte to its ByteLevel character; the bytes
// of one character all take its span.
func byteLevelAligned(a aligned) aligned {
	cs := make([]change, 0, len(a.s))
	for i := 0; i < len(a.s); i++ {
		r, _ := utf8.DecodeRuneInString(byteChars[a.s[i]])
		n := 1
		if utf8.RuneStart(a.s[i]) {
			n = 0
		}
		cs = append(cs, change{r, n})
	}
	return a.transform(cs)
}

func (byteLevelNorm) normalizeAligned(a aligned) aligned { return byteLevelAligned(a) }

func (q seqNorm) normalizeAligned(a aligned) aligned {
	for _, n := range q {
		a = n.normalizeAligned(a)
	}
	return a
}

// normalizeAligned follows the library's Precompiled normalizer: a
// replacement's characters replace one for one, extra ones are inserted,
// and when it is shorter the last character it produced (or, for an empty
// one, the last character before it) takes the rest along.
func (p *precompiledNorm) normalizeAligned(a aligned) aligned {
	var cs []change
	modified := false
	replace := func(old, rep string) {
		modified = true
		before := len(cs)
		for _, r := range rep {
			cs = append(cs, change{r, 0})
		}
		diff := utf8.RuneCountInString(rep) - utf8.RuneCountInString(old)
		switch {
		case diff > 0:
			for i := len(cs) - diff; i < len(cs); i++ {
				if i >= before {
					cs[i].n = 1
				}
			}
		case diff < 0 && len(cs) > 0:
			cs[len(cs)-1].n += diff
		}
	}
	for s := a.s; s != ""; {
		g := s[:graphemeLen(s)]
		s = s[len(g):]
		if len(g) < 6 {
			if rep, ok := p.firstMatch(g); ok {
				replace(g, rep)
				continue
			}
		}
		for i, r := range g {
			ch := g[i : i+utf8.RuneLen(r)]
			if rep, ok := p.firstMatch(ch); ok {
				replace(ch, rep)
			} else {
				cs = append(cs, change{r, 0})
			}
		}
	}
	if !modified {
		return a
	}
	return a.transform(cs)
}

// normalizeAligned is normalize with the SentencePiece library's alignment
// (Normalizer::Normalize's norm_to_orig), so that a piece's span is the
// begin and end the library gives it in its SentencePieceText. The library
// records, for output byte i, N[i]: how much input was consumed when it
// was written, i.e. where the character it came from starts; and N[len]:
// where the input ends, or, when trailing spaces are removed, where the
// first of them came from. Output bytes [b, e) span input [N[b], N[e]).
// So here al[i] = {N[i], N[i+1]}, and span(b, e) is {N[b], N[e]}: input the
// normaliser drops (extra spaces, characters mapped to nothing) belongs to
// the piece before the next kept character; a piece ending inside one
// character's replacement (½ -> "1⁄2") ends where that character starts,
// and the piece holding its end spans it; the dummy prefix spans nothing,
// at the first kept character. Unlike the other normalizers' alignments,
// the bytes of one output character may then have different ends.
func (n *spNormalizer) normalizeAligned(a aligned) aligned {
	s, pos := a.s, 0
	if n.removeExtraWS {
		for s != "" {
			rep, l := n.prefix(s)
			if rep != " " {
				break
			}
			s, pos = s[l:], pos+l
		}
	}
	if s == "" {
		return aligned{}
	}
	var b strings.Builder
	var starts []int // N[i]
	write := func(str string, consumed int) {
		b.WriteString(str)
		for range len(str) {
			starts = append(starts, consumed)
		}
	}
	space := " "
	if n.escapeSpaces {
		space = spSpace
	}
	if n.addDummyPrefix {
		write(space, a.al[pos].Start)
	}
	prevSpace := n.removeExtraWS
	for s != "" {
		rep, l := n.prefix(s)
		consumed := a.al[pos].Start
		s, pos = s[l:], pos+l
		if prevSpace {
			rep = strings.TrimLeft(rep, " ")
		}
		if rep == "" {
			continue
		}
		out := rep
		if n.escapeSpaces {
			out = strings.ReplaceAll(rep, " ", spSpace)
		}
		write(out, consumed)
		prevSpace = strings.HasSuffix(rep, " ")
	}
	out := b.String()
	end := a.al[len(a.al)-1].End
	if n.removeExtraWS {
		for strings.HasSuffix(out, space) {
			out = out[:len(out)-len(space)]
			end = starts[len(out)]
		}
	}
	al := make([]Offset, len(out))
	for i := range al {
		next := end
		if i+1 < len(out) {
			next = starts[i+1]
		}
		al[i] = Offset{starts[i], next}
	}
	return aligned{s: out, al: al}
}
