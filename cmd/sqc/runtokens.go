package main

import (
	"encoding/json"
	"io"

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
