package modelrt

import "github.com/sqc-dev/sqc/runtime/tokenizer"

// PipelineEntity is an Entity as transformers' TokenClassificationPipeline
// reports it with aggregation_strategy "simple": Start and End count
// characters (code points), as Python does, and Word is the text they
// span. Its JSON is the pipeline's.
type PipelineEntity struct {
	EntityGroup string  `json:"entity_group"`
	Score       float32 `json:"score"`
	Word        string  `json:"word"`
	Start       int     `json:"start"`
	End         int     `json:"end"`
}

// PipelineToken is a tagged token as the pipeline reports it with
// aggregation_strategy "none"; Index is its position in the encoded
// sequence, the template's leading special tokens counted.
type PipelineToken struct {
	Entity string  `json:"entity"`
	Score  float32 `json:"score"`
	Index  int     `json:"index"`
	Word   string  `json:"word"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
}

// PipelineEntities renders the entities of text (GroupEntities') as the
// pipeline does.
func PipelineEntities(text string, ents []Entity) []PipelineEntity {
	chars := charSpans(text, ents, func(e Entity) (int, int) { return e.Start, e.End })
	out := make([]PipelineEntity, len(ents))
	for i, e := range ents {
		out[i] = PipelineEntity{EntityGroup: e.Group, Score: e.Score, Word: spanText(text, e.Start, e.End), Start: chars[i].Start, End: chars[i].End}
	}
	return out
}

// PipelineTokens renders the tagged tokens of text (TagTokens') as the
// pipeline does without aggregation: those tagged "O" are dropped (its
// default ignore_labels).
func PipelineTokens(text string, tags []TokenPrediction) []PipelineToken {
	var kept []TokenPrediction
	for _, tg := range tags {
		if tg.Label != "O" {
			kept = append(kept, tg)
		}
	}
	chars := charSpans(text, kept, func(tg TokenPrediction) (int, int) { return tg.Start, tg.End })
	out := make([]PipelineToken, len(kept))
	for i, tg := range kept {
		out[i] = PipelineToken{Entity: tg.Label, Score: tg.Score, Index: tg.Position, Word: spanText(text, tg.Start, tg.End), Start: chars[i].Start, End: chars[i].End}
	}
	return out
}

// PipelineAnswer is an Answer as transformers' question-answering
// pipeline reports it: Start and End count characters (code points) of
// the context, as Python does, and Answer is the text they span. Its JSON
// is the pipeline's.
type PipelineAnswer struct {
	Score  float32 `json:"score"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
	Answer string  `json:"answer"`
}

// PipelineAnswers renders answers (Answers') of context as the pipeline
// does.
func PipelineAnswers(context string, answers []Answer) []PipelineAnswer {
	chars := charSpans(context, answers, func(a Answer) (int, int) { return a.Start, a.End })
	out := make([]PipelineAnswer, len(answers))
	for i, a := range answers {
		out[i] = PipelineAnswer{Score: a.Score, Start: chars[i].Start, End: max(chars[i].End, chars[i].Start), Answer: spanText(context, a.Start, a.End)}
	}
	return out
}

// charSpans is the byte span of each item of text (span's) in
// characters (code points), as Python counts: tokenizer.CharOffsets.
func charSpans[T any](text string, items []T, span func(T) (start, end int)) []tokenizer.Offset {
	spans := make([]tokenizer.Offset, len(items))
	for i, it := range items {
		spans[i].Start, spans[i].End = span(it)
	}
	return tokenizer.CharOffsets(text, spans)
}

// spanText is text[start:end], clamped to text: offsets come from the
// tokenizer, and a bad one must not panic.
func spanText(text string, start, end int) string {
	start = min(max(start, 0), len(text))
	return text[start:min(max(end, start), len(text))]
}
