package compiler

import (
	"strconv"
	"strings"
)

// IsMaskedLM reports whether g is a masked language model's graph: its
// architecture (Meta "architecture", which the HuggingFace frontend sets
// and the ONNX frontend reads from the config.json beside an export) is
// a *ForMaskedLM, and its one output "logits" is [batch, sequence,
// vocabulary] (of Meta "vocab_size" entries, where that is set). Such a
// model is served and generated as a sparse encoder (SPLADE): its logits
// pooled over the tokens (runtime/modelrt.SparseHead). JinaBERT's
// checkpoints, published as JinaBertForMaskedLM, are read as their
// encoder and output hidden states, so they are not.
func IsMaskedLM(g *Graph) bool {
	if !strings.HasSuffix(g.Meta["architecture"], "ForMaskedLM") || len(g.Outputs) != 1 {
		return false
	}
	o := g.Outputs[0]
	if o.Name != "logits" || len(o.Shape) != 3 || !o.Shape[2].Known() {
		return false
	}
	if v, err := strconv.ParseInt(g.Meta["vocab_size"], 10, 64); err == nil && v != o.Shape[2].Size {
		return false
	}
	return true
}
