package hf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
)

// buildALBERT emits AlbertModel or AlbertForSequenceClassification,
// following transformers' modeling_albert.py (eager attention, eval
// mode): BERT's embeddings at embedding_size, always projected to the
// hidden size (encoder.embedding_hidden_mapping_in), then NumLayers
// passes of BERT's layer, pass i through the InnerGroupNum layers of
// group albertGroup(i), whose weights every pass through the group shares
// (albert-base-v2: one group of one layer, twelve passes), and BERT's
// pooler, whose output the classifier reads. Each pass is built as a
// layer of its own, encoder.layer.k (k counts every layer of every
// pass), whose parameters albertWeights serves from the shared ones.
func buildALBERT(b *builder, prefix string) {
	c := b.cfg
	h, inter := c.HiddenSize, c.IntermediateSize
	x := b.bertEmbeddings(prefix + "embeddings")
	x = b.linear(x, prefix+"encoder.embedding_hidden_mapping_in", c.EmbeddingWidth(), h)
	maskBias := b.bertMaskBias()
	for k := range c.NumLayers * c.InnerGroupNum {
		x = b.bertLayer(prefix+"encoder.layer."+strconv.Itoa(k), x, maskBias, h, inter)
	}
	if !c.IsClassifier() {
		x = b.Rename(x, outLastHidden)
		b.Rename(b.bertPooler(prefix+"pooler", x, h), outPooler)
		return
	}
	pooled := b.bertPooler(prefix+"pooler", x, h)
	b.Rename(b.gemm(pooled, "classifier", h, len(c.Labels)), outLogits)
}

// albertGroup is the layer group pass i of n runs through, of groups:
// AlbertTransformer's int(i / (n / groups)), in float64 as Python's
// true division computes it.
func albertGroup(i, n, groups int) int {
	return int(float64(i) / (float64(n) / float64(groups)))
}

// albertLayerNames maps the parameter names BERT's layer reads to
// AlbertLayer's.
var albertLayerNames = []struct{ bert, albert string }{
	{"attention.self.query.", "attention.query."},
	{"attention.self.key.", "attention.key."},
	{"attention.self.value.", "attention.value."},
	{"attention.output.dense.", "attention.dense."},
	{"attention.output.LayerNorm.", "attention.LayerNorm."},
	{"intermediate.dense.", "ffn."},
	{"output.dense.", "ffn_output."},
	{"output.LayerNorm.", "full_layer_layer_norm."},
}

// albertWeights serves an ALBERT checkpoint's parameters under the names
// buildALBERT reads: layer k of encoder.layer.k is layer k % InnerGroupNum
// of group albertGroup(k / InnerGroupNum), its parameters named as
// AlbertLayer names them; the pooler's dense is "pooler". Other names
// pass through.
type albertWeights struct {
	WeightSource
	layers, groups, inner int
}

// File names the checkpoint, for errors.
func (w albertWeights) File() string { return SourceFile(w.WeightSource) }

func (w albertWeights) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	return w.WeightSource.Weight(w.albertName(name), shape)
}

// albertName is the checkpoint's name of the parameter buildALBERT calls
// name.
func (w albertWeights) albertName(name string) string {
	if before, param, ok := strings.Cut(name, "pooler.dense."); ok {
		return before + "pooler." + param
	}
	before, rest, ok := strings.Cut(name, "encoder.layer.")
	if !ok {
		return name
	}
	index, param, ok := strings.Cut(rest, ".")
	k, err := strconv.Atoi(index)
	if !ok || err != nil {
		return name
	}
	for _, m := range albertLayerNames {
		if p, ok := strings.CutPrefix(param, m.bert); ok {
			group := albertGroup(k/w.inner, w.layers, w.groups)
			return fmt.Sprintf("%sencoder.albert_layer_groups.%d.albert_layers.%d.%s%s", before, group, k%w.inner, m.albert, p)
		}
	}
	return name
}
