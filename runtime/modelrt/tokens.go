package modelrt

import (
	"strings"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// TokenPrediction is a token classifier's answer for one token of a text.
type TokenPrediction struct {
	Position   int     // the token's index in the encoded sequence (template tokens counted)
	Label      string  // the most probable class's name (config.json id2label)
	Class      int     // its index
	Score      float32 // its softmax probability
	Start, End int     // the token's byte span in the text (the tokenizer's offsets)
}

// TagTokens tags the tokens of one encoded text. logits holds one row of
// numLabels logits per position of the sequence, row-major (a token
// classifier's output for it); offsets are the encoding's
// (tokenizer.EncodeWithOffsets). Positions [first, last) are the text's
// own tokens: the template's special tokens before and after them are not
// tagged, as transformers' pipeline skips its special_tokens_mask tokens.
// Each row is classified by Predict (labels[i] names class i; a class
// without a name gets Label ""). Positions that have no full row of
// logits or no offset are not tagged either, so a short logits slice
// gives fewer predictions rather than a panic; numLabels < 1 gives none.
func TagTokens(logits []float32, numLabels int, labels []string, offsets []tokenizer.Offset, first, last int) []TokenPrediction {
	if numLabels < 1 {
		return nil
	}
	first = max(first, 0)
	last = min(last, len(logits)/numLabels, len(offsets))
	if first >= last {
		return nil
	}
	out := make([]TokenPrediction, 0, last-first)
	for pos := first; pos < last; pos++ {
		p := Predict(logits[pos*numLabels:(pos+1)*numLabels], labels)
		o := offsets[pos]
		out = append(out, TokenPrediction{Position: pos, Label: p.Label, Class: p.Index, Score: p.Score, Start: o.Start, End: o.End})
	}
	return out
}

// Entity is a run of tokens grouped as transformers' TokenClassificationPipeline
// groups them with aggregation_strategy="simple".
type Entity struct {
	Group      string  // the label without its B-/I- prefix: "PER"
	Score      float32 // the mean of its tokens' scores (computed in float64)
	Start, End int     // byte span: the first token's Start to the last token's End
}

// GroupEntities groups tagged tokens into entities as transformers'
// group_entities does: a token continues the previous token's entity when
// their tags are equal and it does not begin one ("B-"); a label without a
// B- or I- prefix is its own tag and always continues. Entities of the
// group "O" are then dropped, as the pipeline's default ignore_labels
// drops them.
func GroupEntities(tokens []TokenPrediction) []Entity {
	var out []Entity
	for lo := 0; lo < len(tokens); {
		hi := lo + 1
		for ; hi < len(tokens); hi++ {
			bi, tag := bioTag(tokens[hi].Label)
			_, prevTag := bioTag(tokens[hi-1].Label)
			if tag != prevTag || bi == "B" {
				break
			}
		}
		if e := entityOf(tokens[lo:hi]); e.Group != "O" {
			out = append(out, e)
		}
		lo = hi
	}
	return out
}

// bioTag splits a label as transformers' get_tag does: "B-X" and "I-X"
// into their prefix and X; any other label is a continuation ("I") of
// itself.
func bioTag(label string) (bi, tag string) {
	if rest, ok := strings.CutPrefix(label, "B-"); ok {
		return "B", rest
	}
	if rest, ok := strings.CutPrefix(label, "I-"); ok {
		return "I", rest
	}
	return "I", label
}

// entityOf is transformers' group_sub_entities for a non-empty run: the
// group is the first label's part after its first "-" (Python's
// split("-", 1)[-1], the whole label if it has none), which is not always
// bioTag's tag ("LABEL-1" gives "1").
func entityOf(run []TokenPrediction) Entity {
	group := run[0].Label
	if _, after, ok := strings.Cut(group, "-"); ok {
		group = after
	}
	var sum float64
	for _, t := range run {
		sum += float64(t.Score)
	}
	return Entity{Group: group, Score: float32(sum / float64(len(run))), Start: run[0].Start, End: run[len(run)-1].End}
}

// TemplateTokens is how many tokens tok's single-text template adds
// before and after the text ([CLS] and [SEP]: 1 and 1): the positions a
// token classifier's tags skip.
func TemplateTokens(tok *tokenizer.Tokenizer) (prefix, suffix int) {
	// A short MaxLength would truncate the probe text away; any length
	// with room for it measures the same template.
	if wide, err := tok.WithMaxLength(1 << 16); err == nil {
		tok = wide
	}
	// An empty text encodes to the template's tokens alone; a one-word
	// text shares their prefix.
	empty, word := tok.Encode("").InputIDs, tok.Encode("a").InputIDs
	for prefix < len(empty) && prefix < len(word) && empty[prefix] == word[prefix] {
		prefix++
	}
	return prefix, len(empty) - prefix
}
