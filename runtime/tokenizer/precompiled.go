package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

// precompiledNorm is SentencePiece's precompiled_charsmap normalizer (the
// "Precompiled" normalizer of tokenizer.json): a darts-clone double-array
// trie over UTF-8 bytes whose values index a pool of NUL-terminated
// replacements. As the tokenizers library does, it rewrites text one
// grapheme cluster at a time: a cluster shorter than 6 bytes whose first
// trie match exists is replaced by that match's replacement (the rest of
// the cluster goes with it), and otherwise each character is looked up on
// its own.
type precompiledNorm struct {
	units []uint32
	pool  []byte
}

func parsePrecompiled(b64 string) (*precompiledNorm, error) {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap is not base64: %v", err)
	}
	return parsePrecompiledBytes(blob)
}

// parsePrecompiledBytes reads a charsmap blob: a little-endian uint32 trie
// size, the trie's units, then the replacement pool.
func parsePrecompiledBytes(blob []byte) (*precompiledNorm, error) {
	if len(blob) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap: %d bytes, too short", len(blob))
	}
	size := int(binary.LittleEndian.Uint32(blob))
	if size%4 != 0 || size > len(blob)-4 || size == 0 {
		return nil, fmt.Errorf("precompiled_charsmap: trie size %d does not fit in %d bytes", size, len(blob)-4)
	}
	p := &precompiledNorm{units: make([]uint32, size/4), pool: blob[4+size:]}
	for i := range p.units {
		p.units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	return p, nil
}

// firstMatch returns the replacement of the shortest key of the trie that
// prefixes s, as spm_precompiled's transform takes the first result of a
// common-prefix search.
func (p *precompiledNorm) firstMatch(s string) (string, bool) {
	rep, _, ok := p.search(s, true)
	return rep, ok
}

// longestMatch returns the replacement of the longest key prefixing s and
// the key's length, as SentencePiece's normaliser takes it.
func (p *precompiledNorm) longestMatch(s string) (string, int, bool) {
	return p.search(s, false)
}

// search walks the double-array trie along s; it stops at the first key
// when first is set, else returns the last (longest) one.
func (p *precompiledNorm) search(s string, first bool) (string, int, bool) {
	at := func(i uint32) (uint32, bool) {
		if int(i) >= len(p.units) {
			return 0, false
		}
		return p.units[i], true
	}
	offset := func(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
	unit, ok := at(0)
	if !ok {
		return "", 0, false
	}
	value, length := -1, 0
	pos := offset(unit)
	for i := 0; i < len(s); i++ {
		c := uint32(s[i])
		pos ^= c
		if unit, ok = at(pos); !ok || unit&((1<<31)|0xFF) != c {
			break
		}
		pos ^= offset(unit)
		if (unit>>8)&1 == 1 {
			leaf, ok := at(pos)
			if !ok {
				break
			}
			value, length = int(leaf&((1<<31)-1)), i+1
			if first {
				break
			}
		}
	}
	if value < 0 || value >= len(p.pool) {
		return "", 0, false
	}
	end := value
	for end < len(p.pool) && p.pool[end] != 0 {
		end++
	}
	return string(p.pool[value:end]), length, true
}

func (p *precompiledNorm) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		g := s[:graphemeLen(s)]
		s = s[len(g):]
		if len(g) < 6 {
			if rep, ok := p.firstMatch(g); ok {
				b.WriteString(rep)
				continue
			}
		}
		for i, r := range g {
			ch := g[i : i+len(string(r))]
			if rep, ok := p.firstMatch(ch); ok {
				b.WriteString(rep)
			} else {
				b.WriteString(ch)
			}
		}
	}
	return b.String()
}
