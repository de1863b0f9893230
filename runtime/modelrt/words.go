package modelrt

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Aggregation is an aggregation_strategy of transformers'
// TokenClassificationPipeline: how tagged tokens become its answer.
type Aggregation int

const (
	// AggregateSimple groups the tokens' own tags into entities
	// (GroupEntities).
	AggregateSimple Aggregation = iota
	// AggregateNone reports every token (PipelineTokens).
	AggregateNone
	// AggregateFirst, AggregateAverage and AggregateMax tag whole words
	// first (AggregateWords), then group the words as AggregateSimple
	// groups tokens: a word takes its first token's tag, the tag of its
	// tokens' mean probabilities, or the tag of its most confident token.
	AggregateFirst
	AggregateAverage
	AggregateMax
)

var aggregationNames = [...]string{"simple", "none", "first", "average", "max"}

// String is the strategy's name as the pipeline spells it.
func (a Aggregation) String() string {
	if a >= 0 && int(a) < len(aggregationNames) {
		return aggregationNames[a]
	}
	return fmt.Sprintf("Aggregation(%d)", int(a))
}

// WordLevel reports whether a tags words (first, average, max) rather
// than tokens.
func (a Aggregation) WordLevel() bool {
	return a == AggregateFirst || a == AggregateAverage || a == AggregateMax
}

// ParseAggregation reads a strategy's name in any case, as the pipeline
// does: "simple", "none", "first", "average" or "max".
func ParseAggregation(name string) (Aggregation, error) {
	for i, n := range aggregationNames {
		if strings.EqualFold(name, n) {
			return Aggregation(i), nil
		}
	}
	return 0, fmt.Errorf("aggregation strategy %q: want %s", name, AggregationNames)
}

// AggregationNames lists the strategies' names for messages.
const AggregationNames = `"simple", "none", "first", "average" or "max"`

// AggregateWords tags the words of one encoded text as transformers'
// TokenClassificationPipeline does for a word-level strategy
// (AggregateFirst, AggregateAverage, AggregateMax) before it groups them:
// GroupEntities of the result is its answer. tags are TagTokens' for the
// text (the template's tokens left out), tagged from logits (numLabels a
// row, labels naming them, as TagTokens was given); ids are the
// encoding's token ids, by position; tok is the tokenizer that encoded
// text.
//
// Each token starts a new word unless it is a subword: with a continuing
// subword prefix (tok.ContinuingSubwordPrefix: WordPiece's "##"), a token
// whose string (tok.Token) and whose span of text differ in length, in
// code points; without one, a token that neither starts the text nor has
// a space just before it or at its start (the pipeline's fallback
// heuristic, which takes "Zürich," as one word). An unknown token
// (tok.UnknownID) always starts a word. Every word becomes one
// TokenPrediction: its Position and Start are its first token's, its End
// its last token's; its class is that of the first token's probabilities
// (first), of the tokens' mean probabilities (average) or of the token
// whose top probability is the highest, the first of equals (max), with
// that probability as its Score.
//
// The token-level strategies return tags as they are, so GroupEntities
// of AggregateWords' result is the pipeline's answer for AggregateSimple
// too. A tag whose position has no full row of logits is left out.
func AggregateWords(tags []TokenPrediction, logits []float32, numLabels int, labels []string, text string, ids []int64, tok *tokenizer.Tokenizer, strategy Aggregation) []TokenPrediction {
	if !strategy.WordLevel() {
		return tags
	}
	if numLabels < 1 {
		return nil
	}
	// The pipeline's offsets, and so word_ref and its slicing, count
	// code points.
	chars := charSpans(text, tags, func(tg TokenPrediction) (int, int) { return tg.Start, tg.End })
	prefix := tok.ContinuingSubwordPrefix()
	unk, hasUnk := tok.UnknownID()
	var runes []rune // text's code points, for the heuristic
	if prefix == "" {
		runes = []rune(text)
	}
	subword := func(i int) bool {
		pos := tags[i].Position
		id := int64(-1)
		if pos >= 0 && pos < len(ids) {
			id = ids[pos]
		}
		if hasUnk && id == int64(unk) {
			return false
		}
		start, end := chars[i].Start, chars[i].End
		if prefix != "" {
			word, _ := tok.Token(int(id))
			return utf8.RuneCountInString(word) != max(end-start, 0)
		}
		// start > 0 and " " not in sentence[start-1:start+1]
		return start > 0 && runes[start-1] != ' ' && (start >= len(runes) || runes[start] != ' ')
	}

	var out []TokenPrediction
	var group []TokenPrediction
	var probs [][]float64
	flush := func() {
		if len(group) > 0 {
			out = append(out, aggregateWord(group, probs, labels, strategy))
		}
		group, probs = group[:0], probs[:0]
	}
	for i, tg := range tags {
		pos := tg.Position
		if pos < 0 || (pos+1)*numLabels > len(logits) {
			continue
		}
		if !subword(i) {
			flush()
		}
		group = append(group, tg)
		probs = append(probs, softmax64(logits[pos*numLabels:(pos+1)*numLabels]))
	}
	flush()
	return out
}

// aggregateWord is the pipeline's aggregate_word for one word's tokens
// and their probabilities.
func aggregateWord(group []TokenPrediction, probs [][]float64, labels []string, strategy Aggregation) TokenPrediction {
	var row []float64
	switch strategy {
	case AggregateMax:
		// max(entities, key=scores.max()): the first of equals.
		best := math.Inf(-1)
		for _, p := range probs {
			if top := p[argmax(p)]; top > best {
				best, row = top, p
			}
		}
	case AggregateAverage:
		row = make([]float64, len(probs[0]))
		for _, p := range probs {
			for j, x := range p {
				row[j] += x
			}
		}
		for j := range row {
			row[j] /= float64(len(probs))
		}
	default: // AggregateFirst
		row = probs[0]
	}
	class := argmax(row)
	w := TokenPrediction{Position: group[0].Position, Class: class, Score: float32(row[class]), Start: group[0].Start, End: group[len(group)-1].End}
	if class < len(labels) {
		w.Label = labels[class]
	}
	return w
}

// argmax is numpy's: the first of equals.
func argmax(p []float64) int {
	best := 0
	for i, x := range p {
		if x > p[best] {
			best = i
		}
	}
	return best
}
