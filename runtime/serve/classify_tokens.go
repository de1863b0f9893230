package serve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// entityGroup is one entity of transformers' TokenClassificationPipeline
// with aggregation_strategy "simple". Start and End count characters
// (code points), as Python does; Word is the text they span.
type entityGroup struct {
	EntityGroup string  `json:"entity_group"`
	Score       float32 `json:"score"`
	Word        string  `json:"word"`
	Start       int     `json:"start"`
	End         int     `json:"end"`
}

// taggedToken is one token of the pipeline's answer with
// aggregation_strategy "none"; Index is its position in the encoded
// sequence, the template's leading special tokens counted.
type taggedToken struct {
	Entity string  `json:"entity"`
	Score  float32 `json:"score"`
	Index  int     `json:"index"`
	Word   string  `json:"word"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
}

func (s *Server) classifyTokens(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != TokenClassifier {
		return nil, s.wrongKind("a token classifier")
	}
	req, e := decodeClassifyTokens(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	// The encodings, offsets included, are the ones the batcher runs, so
	// each row of logits belongs to the token whose offset it is given.
	trunc := s.truncates(req.Truncate)
	encs := make([]tokenizer.Encoding, len(req.Inputs))
	logits, e := s.inferEach(ctx, len(req.Inputs), func(i int) (tokenizer.Encoding, *apiError) {
		var e *apiError
		encs[i], e = s.enc.encodeOffsets(req.Inputs[i], trunc)
		return encs[i], e
	}, t)
	if e != nil {
		return nil, e
	}
	if e := finite(logits); e != nil {
		return nil, e
	}
	labels := make([]string, len(s.info.Labels))
	for i := range labels {
		labels[i] = s.label(i)
	}
	out := make([]any, len(req.Inputs))
	for i, text := range req.Inputs {
		n := encs[i].Len()
		if len(logits[i]) != n*len(labels) {
			return nil, &apiError{http.StatusInternalServerError, fmt.Sprintf("the model returned %d logits for a sequence of %d tokens: want %d labels per token", len(logits[i]), n, len(labels)), errBackend}
		}
		tags := modelrt.TagTokens(logits[i], len(labels), labels, encs[i].Offsets, s.enc.prefix, n-s.enc.suffix)
		if req.Group {
			out[i] = entityGroups(text, modelrt.GroupEntities(tags))
		} else {
			out[i] = taggedTokens(text, tags)
		}
	}
	if req.Single {
		return out[0], nil
	}
	return out, nil
}

// entityGroups renders entities of text as the pipeline does.
func entityGroups(text string, ents []modelrt.Entity) []entityGroup {
	spans := make([]tokenizer.Offset, len(ents))
	for i, e := range ents {
		spans[i] = tokenizer.Offset{Start: e.Start, End: e.End}
	}
	chars := tokenizer.CharOffsets(text, spans)
	out := make([]entityGroup, len(ents))
	for i, e := range ents {
		out[i] = entityGroup{EntityGroup: e.Group, Score: e.Score, Word: spanText(text, e.Start, e.End), Start: chars[i].Start, End: chars[i].End}
	}
	return out
}

// taggedTokens renders the tokens of text as the pipeline does without
// aggregation: those tagged "O" are dropped (its default ignore_labels).
func taggedTokens(text string, tags []modelrt.TokenPrediction) []taggedToken {
	var kept []modelrt.TokenPrediction
	var spans []tokenizer.Offset
	for _, tg := range tags {
		if tg.Label != "O" {
			kept = append(kept, tg)
			spans = append(spans, tokenizer.Offset{Start: tg.Start, End: tg.End})
		}
	}
	chars := tokenizer.CharOffsets(text, spans)
	out := make([]taggedToken, len(kept))
	for i, tg := range kept {
		out[i] = taggedToken{Entity: tg.Label, Score: tg.Score, Index: tg.Position, Word: spanText(text, tg.Start, tg.End), Start: chars[i].Start, End: chars[i].End}
	}
	return out
}

// spanText is text[start:end], clamped to text: offsets come from the
// tokenizer, and a bad one must not take the request down.
func spanText(text string, start, end int) string {
	start = min(max(start, 0), len(text))
	return text[start:min(max(end, start), len(text))]
}
