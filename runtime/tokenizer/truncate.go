package tokenizer

// truncationStrategy is the tokenizers library's TruncationStrategy.
type truncationStrategy uint8

const (
	longestFirst truncationStrategy = iota
	onlyFirst
	onlySecond
)

// cut keeps n tokens of ids, from the end when left is set.
func cut(ids []int32, n int, left bool) []int32 {
	if n >= len(ids) {
		return ids
	}
	if left {
		return ids[len(ids)-n:]
	}
	return ids[:n]
}

// truncateSingle keeps at most budget tokens. Under OnlySecond the library
// fails on a single text; truncating it is the useful reading.
func (t *Tokenizer) truncateSingle(a []int32, budget int) []int32 {
	return cut(a, max(budget, 0), t.truncateLeft)
}

// truncatePair shortens a and b to at most budget tokens together.
func (t *Tokenizer) truncatePair(a, b []int32, budget int) ([]int32, []int32) {
	if !t.hfTruncation {
		return truncate(a, b, budget)
	}
	budget = max(budget, 0)
	excess := len(a) + len(b) - budget
	if excess <= 0 {
		return a, b
	}
	switch t.strategy {
	case onlyFirst:
		if len(a) > excess {
			return cut(a, len(a)-excess, t.truncateLeft), b
		}
	case onlySecond:
		if len(b) > excess {
			return a, cut(b, len(b)-excess, t.truncateLeft)
		}
	}
	// LongestFirst; also where OnlyFirst/OnlySecond cannot fit the budget
	// (the library returns an error there).
	n1, n2 := hfLongestFirst(len(a), len(b), budget)
	return cut(a, n1, t.truncateLeft), cut(b, n2, t.truncateLeft)
}

// hfLongestFirst is the tokenizers library's closed form of LongestFirst
// for a pair of lengths la, lb over max: the shorter keeps its length if
// the longer can take the rest; otherwise both get half, the odd token
// going to the longer one (to the second on a tie).
func hfLongestFirst(la, lb, maxLen int) (int, int) {
	n1, n2 := la, lb
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > maxLen {
		n2 = n1
	} else {
		n2 = max(n1, maxLen-n1)
	}
	if n1+n2 > maxLen {
		n1 = maxLen / 2
		n2 = n1 + maxLen%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	return n1, n2
}
