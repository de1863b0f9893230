package passes

import (
	"errors"
	"fmt"
)

// passOrder is every dependency between passes that the pipelines
// (Pipeline, QuantPipeline) must respect, each with its reason, after the table of the
// same name in Go's SSA backend (cmd/compile/internal/ssa/compile.go).
// TestPipelinesRespectPassOrder checks every pipeline against it; add a
// rule when a pass starts to depend on another, and a pass order that
// merely reads well (FuseLayerNorm before FuseGelu, FuseAttention before
// FuseLinear, FuseQLinearEpilogues before FuseQKV: their patterns are
// disjoint, and swapping them changes no graph of the test models) is no
// rule.
//
// Passes run more than once (FoldConstants, EliminateDeadNodes) make the
// kind of a rule matter: see orderKind.
var passOrder = []orderRule{
	// Canonicalisation (Pipeline).
	{"FoldConstants", []string{"FuseLayerNorm", "FuseGelu", "CanonicalizeAttentionMask", "FuseAttention", "FuseEmbeddings"}, needs,
		"the matchers see constants (epsilons, 0.5, sqrt(2), mask fills, axes, attention scales, embedding tables) only as initializers or Constant nodes (index.constant); " +
			"one an exporter computes (a Sqrt or Cast of a constant, arithmetic on static dims of Shape) is one only once folded"},
	{"FoldConstants", []string{"FuseLinear"}, needs,
		"FuseLinear takes weights from the initializers alone (the quantiser rewrites them there): a weight computed from one (Transpose, Identity, Constant) must be folded first"},
	{"EliminateDeadNodes", []string{"FuseLayerNorm", "FuseGelu", "FuseSilu", "CanonicalizeAttentionMask", "FuseAttention", "FuseLinear", "FuseEmbeddings"}, needs,
		"patterns are followed producer to consumer through their exact ops and most links must have one reader (index.onlyConsumer): " +
			"an Identity inside a chain, or a dead reader of one of its values, hides the pattern"},
	{"FoldConstants", []string{"DequantizeIntegerOps"}, needs,
		"scales, zero points and quantised weights are read as initializers (index.constant), which an exporter's Constant nodes are only once folded"},
	{"DequantizeIntegerOps", []string{"FuseLinear", "FuseEmbeddings", "FuseAttention"}, needs,
		"a quantised file has the MatMuls FuseLinear and FuseAttention match, and the Gathers of tables FuseEmbeddings matches, only once its integer ops are dequantised"},
	{"DequantizeIntegerOps", []string{"EliminateDeadNodes"}, sweeps,
		"DequantizeIntegerOps leaves the DynamicQuantizeLinear, MatMulInteger, Cast and scale Mul nodes it replaced unused"},
	{"FoldConstants", []string{"SimplifyShapeOps"}, needs,
		"a Slice's steps are read as constants (index.ints), and the inferred shapes it proves with come from folded reshape targets"},
	{"SimplifyShapeOps", []string{"CanonicalizeAttentionMask", "FuseAttention"}, needs,
		"FuseAttention matches Kᵀ as a Transpose, which the dynamo exporter writes as Reshape-Transpose-Reshape, and the mask as the scores' addend, which transformers 4.57 slices to the key length first"},
	{"SimplifyShapeOps", []string{"EliminateDeadNodes"}, sweeps,
		"SimplifyShapeOps leaves the Identity nodes it makes of full Slices and the shape chains that fed the reshapes it replaced"},
	{"DropNoOpCasts", []string{"EliminateDeadNodes"}, sweeps,
		"DropNoOpCasts leaves the Identity nodes it makes of Casts to their input's own dtype"},
	{"DropNoOpCasts", []string{"FuseLayerNorm", "FuseGelu", "CanonicalizeAttentionMask", "FuseAttention", "FuseLinear", "FuseEmbeddings"}, needs,
		"a widened float16 model's Casts around the ops its converter kept in float32 sit inside the chains the matchers follow, as no-op Casts until dropped"},
	{"FuseAttention", []string{"MarkPositionOnlyBias"}, needs,
		"MarkPositionOnlyBias marks the bias input of the sqc.Attention nodes FuseAttention makes"},
	{"FoldConstants", []string{"MarkPositionOnlyBias"}, needs,
		"the proof takes Range's start and step, Unsqueeze's axes and Gather's table as constants only once folded into initializers"},
	{"UnmergeBatchHeads", []string{"FuseAttention", "FuseDisentangledBias"}, needs,
		"FuseAttention and FuseDisentangledBias match [batch, heads, seq, d] operands: DeBERTa's export computes on batch and heads merged into one axis until UnmergeBatchHeads splits it"},
	{"CanonicalizeAttentionMask", []string{"FuseAttention"}, needs,
		"FuseAttention matches softmax(scores + mask) only: DistilBERT's masked_fill is a Where until CanonicalizeAttentionMask rewrites it as that Add"},
	{"FuseLayerNorm", []string{"FuseEmbeddings"}, needs,
		"FuseEmbeddings recognises the embedding sum by the LayerNormalization it feeds, which decomposed exports (opset < 17) have only after FuseLayerNorm"},
	{"FuseEmbeddings", []string{"EliminateDeadNodes"}, sweeps,
		"FuseEmbeddings leaves the position-id plumbing (Shape, Slice, Gather of the position buffer) unused but in the graph"},
	{"FoldConstants", []string{"UnpackQKVHeads", "FuseRotary", "SplitSlidingWindowMask", "SplitLinearColumns", "NegateTrailingAxes"}, needs,
		"they read reshape targets, slice bounds, Unsqueeze axes, window fills and weights as constants (index.ints, index.scalar, initializers), which an exporter's Constant nodes are only once folded"},
	{"UnpackQKVHeads", []string{"FuseRotary", "FuseAttention"}, needs,
		"FuseRotary and FuseAttention read Q, K and V through the standard head split Transpose<0,2,1,3>(Reshape(x)), which a fused QKV projection split per head (ModernBERT) has only once unpacked"},
	{"UnpackQKVHeads", []string{"SplitLinearColumns"}, needs,
		"SplitLinearColumns splits a projection read only in column slices, which the fused QKV projection is only once UnpackQKVHeads has turned its head split into them"},
	{"FuseRotary", []string{"FuseAttention"}, needs,
		"FuseAttention matches Q and K as head splits of [batch, seq, hidden] values, which rotary-embedded ones are only once the rotation is an sqc.Rotary on unsplit heads"},
	{"FuseRotary", []string{"MarkPositionOnlyBias"}, needs,
		"MarkPositionOnlyBias marks the tables of the sqc.Rotary nodes FuseRotary makes"},
	{"CanonicalizeAttentionMask", []string{"SplitSlidingWindowMask"}, needs,
		"SplitSlidingWindowMask separates a window from an sqc.AttentionMask, which the exported mask arithmetic is only once canonical"},
	{"SplitSlidingWindowMask", []string{"FuseAttention"}, needs,
		"FuseAttention takes a bias beside the padding mask as (scores + bias) + mask, the form SplitSlidingWindowMask gives a window folded into the mask"},
	{"FoldConstants", []string{"FuseMaskedSum"}, needs,
		"FuseMaskedSum reads the ReduceSum's and Unsqueeze's axes as constants (index.axes), which an exporter's Constant nodes are only once folded"},
	{"FuseLinear", []string{"SplitLinearColumns"}, needs,
		"SplitLinearColumns splits sqc.Linear nodes, which FuseLinear makes"},
	{"SplitLinearColumns", []string{"SmoothQuant", "Quantize"}, needs,
		"the projections of each column slice must be Linears of their own before SmoothQuant groups them and Quantize replaces them"},
	// Quantisation (QuantPipeline).
	{"FuseAttention", []string{"QuantizeAttention"}, needs,
		"QuantizeAttention marks the sqc.Attention nodes FuseAttention makes; an unfused attention stays FP32 MatMuls"},
	{"FuseLinear", []string{"SmoothQuant", "Quantize"}, needs,
		"SmoothQuant groups and Quantize replaces sqc.Linear nodes; a MatMul/Gemm not yet fused stays FP32 and unsmoothed"},
	{"FuseLayerNorm", []string{"SmoothQuant"}, needs,
		"SmoothQuant folds 1/s into the gamma and beta of a LayerNormalization; a decomposed LayerNorm absorbs nothing and its group stays unsmoothed"},
	{"FuseAttention", []string{"SmoothQuant"}, needs,
		"the attention output projection is smoothed through sqc.Attention (its V projection absorbs 1/s), which unfused attention is not"},
	{"SmoothQuant", []string{"Quantize"}, needs,
		"SmoothQuant rescales FP32 weights and records the smoothed activations' ranges in the statistics Quantize reads; " +
			"after Quantize no group has a quantised sqc.Linear left, so smoothing would do nothing"},
	{"Quantize", []string{"FuseQLinearEpilogues", "FuseQKV", "MergeSmoothedLayerNorms"}, needs,
		"they rewrite sqc.QLinear nodes (MergeSmoothedLayerNorms tells the twin by its sqc.QLinear readers), which Quantize makes"},
	{"FuseGelu", []string{"FuseQLinearEpilogues"}, needs,
		"the epilogue absorbs sqc.Gelu (compiler.EpilogueAct), not the erf chain FuseGelu replaces"},
	{"FuseSilu", []string{"FuseQLinearEpilogues"}, needs,
		"the epilogue absorbs sqc.Silu (compiler.EpilogueAct), not the Sigmoid and Mul FuseSilu replaces"},
	{"FuseAttention", []string{"FuseQKV"}, needs,
		"FuseQKV merges the projections read by one sqc.Attention and packs that Attention's operands"},
	{"SmoothQuant", []string{"MergeSmoothedLayerNorms"}, needs,
		"MergeSmoothedLayerNorms merges each LayerNorm with the smoothed twin SmoothQuant makes beside it"},
	{"FuseQKV", []string{"MaterializeQuantize"}, needs,
		"FuseQKV merges QLinears that read one f32 input with one quantisation; once each reads its own sqc.Quantize output they share no input"},
	{"FuseQLinearEpilogues", []string{"WriteU8Directly"}, needs,
		"a QLinear writes u8 only when its final output, after the epilogue's GELU and residual Add, is read only quantised; before the fusion its reader is the Gelu or Add"},
	{"MergeSmoothedLayerNorms", []string{"MaterializeQuantize"}, needs,
		"MergeSmoothedLayerNorms tells the twin by its sqc.QLinear readers, which read an sqc.Quantize's output once it runs"},
	{"WriteU8Directly", []string{"ShortenGeluForU8"}, needs,
		"ShortenGeluForU8 shortens the GELU of a QLinear writing u8, and the code step it needs is the out_scale WriteU8Directly gives"},
	{"FuseQLinearEpilogues", []string{"ShortenGeluForU8"}, needs,
		"ShortenGeluForU8 rewrites the act a QLinear's epilogue applies, which FuseQLinearEpilogues moves there from the sqc.Gelu"},
	{"WriteU8Directly", []string{"FuseLayerNormIntoQLinear"}, needs,
		"FuseLayerNormIntoQLinear fuses the one-step LayerNorm forms (sqc.LayerNorm, a LayerNormDual writing y_q in u8), which WriteU8Directly makes"},
	{"FuseQLinearEpilogues", []string{"FuseLayerNormIntoQLinear"}, needs,
		"a LayerNorm's input is a QLinear's output only once the residual Add between them is in the QLinear's epilogue"},
	{"MaterializeQuantize", []string{"DeduplicateQuantize", "WriteU8Directly"}, needs,
		"they rewrite the sqc.Quantize nodes MaterializeQuantize makes; before it the quantisation is inside each QLinear"},
	{"QuantizeAttention", []string{"WriteU8Directly"}, needs,
		"an sqc.Attention writes u8 only with int8 = 1 (its P·V epilogue quantises), which QuantizeAttention sets"},
	{"DeduplicateQuantize", []string{"WriteU8Directly"}, needs,
		"a producer writes u8 when one static sqc.Quantize is its output's only reader, which a value read by several GEMMs of one quantisation has only after de-duplication"},
}

// orderRule says that pass First must run before each pass of Then, in
// the sense Kind gives.
type orderRule struct {
	First string
	Then  []string
	Kind  orderKind
	Why   string
}

// orderKind is how a rule counts passes that run more than once.
type orderKind int

const (
	// needs: Then consumes what First makes, so its first run comes after
	// First's first run.
	needs orderKind = iota
	// sweeps: Then cleans up what First leaves, so it runs again after
	// First's last run.
	sweeps
)

// CheckOrder returns an error for every rule of passOrder that list breaks
// (joined), or nil. A rule binds only passes that are in the list, so a
// part of a pipeline (QuantPipeline alone, one pass in a test) is checked
// as far as it goes.
func CheckOrder(list []Pass) error {
	firstAt, lastAt := map[string]int{}, map[string]int{}
	for i, p := range list {
		if _, seen := firstAt[p.Name]; !seen {
			firstAt[p.Name] = i
		}
		lastAt[p.Name] = i
	}
	var errs []error
	for _, r := range passOrder {
		for _, then := range r.Then {
			tFirst, ok := firstAt[then]
			if !ok {
				continue
			}
			fFirst, ok := firstAt[r.First]
			if !ok {
				continue
			}
			switch {
			case r.Kind == needs && fFirst > tFirst:
				errs = append(errs, fmt.Errorf("pass %s must run before %s: %s", r.First, then, r.Why))
			case r.Kind == sweeps && lastAt[r.First] > lastAt[then]:
				errs = append(errs, fmt.Errorf("pass %s must run again after %s: %s", then, r.First, r.Why))
			}
		}
	}
	return errors.Join(errs...)
}
