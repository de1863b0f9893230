package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// tokenLogits names g's output when g is a token classifier (its one
// output [batch, sequence, labels], a name per label), else "".
func tokenLogits(g *compiler.Graph) string {
	names := labels(g)
	if len(g.Outputs) != 1 || len(names) == 0 {
		return ""
	}
	if o := g.Outputs[0]; len(o.Shape) == 3 && o.Shape[2].Size == int64(len(names)) {
		return o.Name
	}
	return ""
}

// printTokenResults prints, per text, the token classifier's logits (as
// printResults does) and its entities as transformers' pipeline reports
// them (aggregation "simple": modelrt.PipelineEntities, the answer of
// `sqc serve`'s /classify_tokens). Inputs given as ids have no text to
// point into, and get the logits alone.
func printTokenResults(w io.Writer, g *compiler.Graph, out string, res []infer.Result, exs []dataio.Example, tok *tokenizer.Tokenizer) error {
	names := labels(g)
	var prefix, suffix int
	if tok != nil {
		prefix, suffix = modelrt.TemplateTokens(tok)
	}
	enc := json.NewEncoder(w)
	for i, r := range res {
		logits := r[out]
		obj := map[string]any{out: nested(logits)}
		if ex := exs[i]; tok != nil && !ex.HasIDs {
			e := tok.EncodeWithOffsets(ex.Text)
			tags := modelrt.TagTokens(logits.F32, len(names), names, e.Offsets, prefix, len(e.InputIDs)-suffix)
			obj["entities"] = modelrt.PipelineEntities(ex.Text, modelrt.GroupEntities(tags))
		}
		if err := enc.Encode(obj); err != nil {
			return err
		}
	}
	return nil
}

// isQuestionAnswering reports whether g is an extractive question answering
// model: its outputs are start_logits and end_logits.
func isQuestionAnswering(g *compiler.Graph) bool {
	if len(g.Outputs) != 2 {
		return false
	}
	names := []string{g.Outputs[0].Name, g.Outputs[1].Name}
	return strings.Join(names, " ") == "start_logits end_logits" || strings.Join(names, " ") == "end_logits start_logits"
}

// qaWindows encodes each (question, context) pair in the question-answering
// pipeline's windows (modelrt.QAOptions' defaults for a model of maxSeq
// tokens) as examples to run, and returns which pair each window is of.
func qaWindows(path string, tok *tokenizer.Tokenizer, pairs []dataio.Pair, maxSeq int) ([]dataio.Example, [][]tokenizer.Encoding, error) {
	opts := modelrt.QAOptions{}.Defaults(maxSeq)
	var exs []dataio.Example
	windows := make([][]tokenizer.Encoding, len(pairs))
	for i, p := range pairs {
		ws, err := tok.EncodePairWindows(p.A, p.B, opts.MaxSeqLen, opts.DocStride)
		if err != nil {
			return nil, nil, compiler.BadInput(path, fmt.Sprintf("line %d", p.Line), fmt.Errorf("%w: %w", compiler.ErrInvalidRequest, err))
		}
		windows[i] = ws
		for _, w := range ws {
			exs = append(exs, dataio.Example{IDs: w.InputIDs, Mask: w.AttentionMask, TypeIDs: w.TokenTypeIDs, Line: p.Line, HasIDs: true, Label: -1})
		}
	}
	return exs, windows, nil
}

// printAnswers prints, per pair, the best answer to its question in its
// context (modelrt.Answers over its windows' results, in order).
func printAnswers(w io.Writer, res []infer.Result, pairs []dataio.Pair, windows [][]tokenizer.Encoding) error {
	enc := json.NewEncoder(w)
	next := 0
	for i, p := range pairs {
		var starts, ends [][]float32
		for range windows[i] {
			starts, ends = append(starts, res[next]["start_logits"].F32), append(ends, res[next]["end_logits"].F32)
			next++
		}
		out := modelrt.PipelineAnswer{}
		if a := modelrt.PipelineAnswers(p.B, modelrt.Answers(windows[i], starts, ends, modelrt.QAOptions{})); len(a) > 0 {
			out = a[0]
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}
