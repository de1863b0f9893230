package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// bpe is the BPE model: a word starts as its characters (with the
// continuing prefix and end-of-word suffix where configured), then the
// adjacent pair of lowest merge rank is merged, leftmost first, until no
// pair has a merge.
type bpe struct {
	vocab        map[string]int32
	merges       map[[2]int32]bpeMerge
	unk          int32 // -1 without an unknown token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string     // continuing_subword_prefix
	suffix       string     // end_of_word_suffix
	byteIDs      [256]int32 // <0xXX> tokens, -1 where absent
}

type bpeMerge struct {
	rank  int32
	newID int32
}

// newBPE builds the merge table; merges are pairs of tokens in rank order.
func newBPE(vocab map[string]int32, merges [][2]string, prefix string) (*bpe, error) {
	m := &bpe{vocab: vocab, merges: make(map[[2]int32]bpeMerge, len(merges)), unk: -1, prefix: prefix}
	for i, mg := range merges {
		a, ok := vocab[mg[0]]
		if !ok {
			return nil, fmt.Errorf("merge %d %q: token %q is not in the vocabulary", i, mg[0]+" "+mg[1], mg[0])
		}
		b, ok := vocab[mg[1]]
		if !ok {
			return nil, fmt.Errorf("merge %d %q: token %q is not in the vocabulary", i, mg[0]+" "+mg[1], mg[1])
		}
		if len(mg[1]) < len(prefix) || mg[1][:len(prefix)] != prefix {
			return nil, fmt.Errorf("merge %d: %q does not start with the continuing prefix %q", i, mg[1], prefix)
		}
		merged := mg[0] + mg[1][len(prefix):]
		id, ok := vocab[merged]
		if !ok {
			return nil, fmt.Errorf("merge %d: the merged token %q is not in the vocabulary", i, merged)
		}
		m.merges[[2]int32{a, b}] = bpeMerge{rank: int32(i), newID: id}
	}
	m.byteIDs = byteTokenIDs(vocab)
	return m, nil
}

// byteTokenIDs finds the byte-fallback tokens <0x00>..<0xFF>.
func byteTokenIDs(vocab map[string]int32) (ids [256]int32) {
	for b := range 256 {
		ids[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			ids[b] = id
		}
	}
	return ids
}

// haveBytes reports whether every byte of s has a byte-fallback token.
func (m *bpe) haveBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if m.byteIDs[s[i]] < 0 {
			return false
		}
	}
	return true
}

// bpeSymbol is one symbol of a word being merged: a doubly linked list
// over the initial characters, len 0 once merged away.
type bpeSymbol struct {
	id         int32
	prev, next int
	len        int
}

type bpeCandidate struct {
	pos   int
	rank  int32
	newID int32
}

// bpeQueue is a binary min-heap of merge candidates by (rank, position),
// typed so that pushing and popping do not allocate.
type bpeQueue []bpeCandidate

func (q bpeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}

func (q *bpeQueue) push(c bpeCandidate) {
	*q = append(*q, c)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *bpeQueue) pop() bpeCandidate {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

func (m *bpe) appendIDs(dst []int32, word string) []int32 {
	return m.appendSpans(dst, nil, word)
}

func (m *bpe) appendTokens(dst []int32, spans []Offset, word string) ([]int32, []Offset) {
	dst = m.appendSpans(dst, &spans, word)
	return dst, spans
}

// appendSpans is appendIDs that also appends, when spans is not nil, each
// token's byte span in word.
func (m *bpe) appendSpans(dst []int32, spans *[]Offset, word string) []int32 {
	if word == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			if spans != nil {
				*spans = append(*spans, Offset{0, len(word)})
			}
			return append(dst, id)
		}
	}
	syms := make([]bpeSymbol, 0, len(word))
	add := func(id int32, n int) {
		syms = append(syms, bpeSymbol{id: id, prev: len(syms) - 1, next: len(syms) + 1, len: n})
	}
	unkLen := 0 // pending unknown bytes (fused)
	flushUnk := func() {
		if unkLen > 0 {
			add(m.unk, unkLen)
			unkLen = 0
		}
	}
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		s := word[i : i+size]
		if i > 0 && m.prefix != "" {
			s = m.prefix + s
		}
		if i+size == len(word) && m.suffix != "" {
			s += m.suffix
		}
		i += size
		if id, ok := m.vocab[s]; ok {
			flushUnk()
			add(id, size)
			continue
		}
		if m.byteFallback && m.haveBytes(s) {
			// As the library does, a pending unknown is not flushed here:
			// it lands after these bytes.
			for k := 0; k < len(s); k++ {
				add(m.byteIDs[s[k]], 1)
			}
			continue
		}
		if m.unk >= 0 {
			if !m.fuseUnk {
				flushUnk()
			}
			unkLen += size
		}
	}
	flushUnk()
	if len(syms) == 0 {
		return dst
	}
	syms[len(syms)-1].next = -1

	q := make(bpeQueue, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[[2]int32{syms[i].id, syms[i+1].id}]; ok {
			q.push(bpeCandidate{pos: i, rank: mg.rank, newID: mg.newID})
		}
	}
	for len(q) > 0 {
		top := q.pop()
		cur := &syms[top.pos]
		if cur.len == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		if mg, ok := m.merges[[2]int32{cur.id, right.id}]; !ok || mg.newID != top.newID {
			continue
		}
		rpos := cur.next
		cur.id = top.newID
		cur.len += right.len
		cur.next = right.next
		syms[rpos].len = 0
		if cur.next >= 0 {
			syms[cur.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mg, ok := m.merges[[2]int32{syms[cur.prev].id, cur.id}]; ok {
				q.push(bpeCandidate{pos: cur.prev, rank: mg.rank, newID: mg.newID})
			}
		}
		if cur.next >= 0 {
			if mg, ok := m.merges[[2]int32{cur.id, syms[cur.next].id}]; ok {
				q.push(bpeCandidate{pos: top.pos, rank: mg.rank, newID: mg.newID})
			}
		}
	}
	pos := 0
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		dst = append(dst, syms[i].id)
		if spans != nil {
			*spans = append(*spans, Offset{pos, pos + syms[i].len})
		}
		pos += syms[i].len
	}
	return dst
}
