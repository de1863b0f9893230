package realbatch

import (
	"fmt"

	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Lengths reads the texts of path (a .tsv with a sentence column or a
// text file, see dataio.ReadTexts) and returns each one's token count,
// special tokens included, as tok encodes it (truncated to its
// MaxLength).
func Lengths(path string, tok *tokenizer.Tokenizer) ([]int, error) {
	exs, err := dataio.ReadTexts(path)
	if err != nil {
		return nil, err
	}
	if len(exs) == 0 {
		return nil, fmt.Errorf("%s: no sentences", path)
	}
	lengths := make([]int, len(exs))
	for i, ex := range exs {
		lengths[i] = tok.Encode(ex.Text).Len()
	}
	return lengths, nil
}

// Batches cuts lengths into consecutive batches of size (the last one
// shorter), in arrival order: the order a server receives requests in,
// with no sorting by length.
func Batches(lengths []int, size int) ([][]int, error) {
	if size < 1 {
		return nil, fmt.Errorf("batch size %d: want at least 1", size)
	}
	var out [][]int
	for lo := 0; lo < len(lengths); lo += size {
		out = append(out, lengths[lo:min(lo+size, len(lengths))])
	}
	return out, nil
}

// Tokens returns the real tokens of a batch and the positions it fills
// when padded to its longest.
func Tokens(batch []int) (real, padded int) {
	longest := 0
	for _, l := range batch {
		real += l
		longest = max(longest, l)
	}
	return real, longest * len(batch)
}
