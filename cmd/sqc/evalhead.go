package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/sentence"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// `sqc eval` of models with a head (compiler/sentence) or of data in
// sentence pairs:
//
//   - a sentence-embedding model on pairs with gold scores (STS): the
//     Spearman correlation with the gold scores of the cosine of the two
//     embeddings, FP32 and INT8, and of the two cosines with each other;
//   - a sentence-embedding model on texts: the cosine of every text's
//     INT8 embedding with its FP32 embedding;
//   - a single-logit classifier (cross-encoder) on pairs: Spearman of its
//     scores with the gold scores and FP32 with INT8, and how often the
//     documents of each query rank in the same order.

// usesHeadEval reports whether `sqc eval` goes to evalHead.
func usesHeadEval(model, data string, g *compiler.Graph) bool {
	return sentence.IsFolder(model) || dataio.IsPairFile(data) || compiler.IsMaskedLM(g)
}

// headEvalResult is what evalHead reports; the JSON names are stable.
// Correlations are null when undefined (constant scores).
type headEvalResult struct {
	Model        string `json:"model"`
	Data         string `json:"data"`
	Kind         string `json:"kind"` // "sts", "embedding" or "cross-encoder"
	Inputs       int    `json:"inputs"`
	Calibration  string `json:"calibration,omitempty"`
	CalibSamples int    `json:"calibration_samples,omitempty"`
	Config       string `json:"config"`

	SpearmanFP32     *float64 `json:"spearman_fp32_gold,omitempty"`
	SpearmanINT8     *float64 `json:"spearman_int8_gold,omitempty"`
	SpearmanFP32INT8 *float64 `json:"spearman_fp32_int8,omitempty"`

	// Embedding models: cosine of each text's INT8 and FP32 embeddings.
	EmbeddingCosineMean float64 `json:"embedding_cosine_mean,omitempty"`
	EmbeddingCosineMin  float64 `json:"embedding_cosine_min,omitempty"`

	// Cross-encoders: scores, and rank order within each query's group.
	ScoreMaxAbsDiff   float64  `json:"score_max_abs_diff,omitempty"`
	RerankQueries     int      `json:"rerank_queries,omitempty"`
	RerankSameOrder   float64  `json:"rerank_same_order,omitempty"`
	RerankSameTop1    float64  `json:"rerank_same_top1,omitempty"`
	RerankSpearmanMin *float64 `json:"rerank_spearman_min,omitempty"`
}

func number(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// evalHead is `sqc eval` for usesHeadEval.
// g is the model, loaded.
func evalHead(c *cli.Context, cfg *int8Config, g *compiler.Graph) error {
	model, data := c.String("model"), c.String("data")
	if c.Bool("layers") {
		return usageError{"--layers is for classifiers evaluated on labelled texts, not for sentence embeddings or pairs"}
	}
	head, err := loadModelHead(model, c.String("prompt-name"), g)
	if err != nil {
		return err
	}
	ids := strings.EqualFold(filepath.Ext(data), ".jsonl")
	var tok *tokenizer.Tokenizer
	if !ids || cfg.needsTokenizer() {
		if tok, err = loadTokenizer(model, c.String("vocab")); err != nil {
			return err
		}
		if tok, err = head.tokenizer(tok); err != nil {
			return err
		}
	}
	res := &headEvalResult{Model: model, Data: data}
	var pairs []dataio.Pair
	var exs []dataio.Example
	switch {
	case dataio.IsPairFile(data):
		if pairs, err = dataio.ReadPairs(data); err != nil {
			return err
		}
		if head.embeds() {
			res.Kind = "sts"
			for _, p := range pairs {
				exs = append(exs, dataio.Example{Text: p.A, Line: p.Line, Label: -1}, dataio.Example{Text: p.B, Line: p.Line, Label: -1})
			}
			exs = head.withPrompt(exs)
		} else {
			if head.scoring.Activation == "" || head.width != 1 {
				return compiler.BadInput(data, "", fmt.Errorf("%w: sentence pairs evaluate a sentence-embedding model or a single-logit cross-encoder; this model has %d outputs (%s)", compiler.ErrInvalidRequest, head.width, g.Outputs[0].Name))
			}
			res.Kind = "cross-encoder"
			exs = pairExamples(tok, pairs)
		}
		if res.Kind == "sts" || !rerankOnly(pairs) {
			for _, p := range pairs {
				if !p.HasScore {
					return compiler.BadInput(data, "", fmt.Errorf("%w: line %d has no gold score (a `score` or `label` column)", compiler.ErrMalformed, p.Line))
				}
			}
		}
	case ids: // an embedding model on token ids
		if exs, err = dataio.ReadIDs(data); err != nil {
			return err
		}
		res.Kind = "embedding"
	default: // an embedding model on texts
		if exs, err = dataio.ReadTexts(data); err != nil {
			return err
		}
		res.Kind = "embedding"
		exs = head.withPrompt(exs)
	}
	fp32, int8, enc, err := runBoth(context.Background(), g, tok, exs, cfg, c.Int("batch"), c.App.ErrWriter)
	if err != nil {
		return err
	}
	res.Inputs = len(exs)
	if pairs != nil {
		res.Inputs = len(pairs)
	}
	res.Config = cfg.describe()
	if cfg.needsCalibration() {
		res.Calibration, res.CalibSamples = cfg.calibPath, cfg.calibSamples
	}
	switch res.Kind {
	case "sts", "embedding":
		a, b := head.embeddings(fp32, enc), head.embeddings(int8, enc)
		res.EmbeddingCosineMin = 1
		for i := range a {
			cos := modelrt.Cosine(a[i], b[i])
			res.EmbeddingCosineMean += cos / float64(len(a))
			res.EmbeddingCosineMin = math.Min(res.EmbeddingCosineMin, cos)
		}
		if res.Kind == "sts" {
			gold, sa, sb := make([]float64, len(pairs)), make([]float64, len(pairs)), make([]float64, len(pairs))
			for i, p := range pairs {
				gold[i], sa[i], sb[i] = p.Score, modelrt.Cosine(a[2*i], a[2*i+1]), modelrt.Cosine(b[2*i], b[2*i+1])
			}
			res.SpearmanFP32, res.SpearmanINT8, res.SpearmanFP32INT8 = number(spearman(sa, gold)), number(spearman(sb, gold)), number(spearman(sa, sb))
		}
	case "cross-encoder":
		sa, sb := make([]float64, len(pairs)), make([]float64, len(pairs))
		for i := range pairs {
			sa[i], sb[i] = float64(head.scores(fp32[i])[0]), float64(head.scores(int8[i])[0])
			res.ScoreMaxAbsDiff = math.Max(res.ScoreMaxAbsDiff, math.Abs(sa[i]-sb[i]))
		}
		if !rerankOnly(pairs) {
			gold := make([]float64, len(pairs))
			for i, p := range pairs {
				gold[i] = p.Score
			}
			res.SpearmanFP32, res.SpearmanINT8 = number(spearman(sa, gold)), number(spearman(sb, gold))
		}
		res.SpearmanFP32INT8 = number(spearman(sa, sb))
		rerankAgreement(res, pairs, sa, sb)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.print(c.App.Writer)
}

// rerankOnly: no pair has a gold score (a file of queries and documents
// to rank).
func rerankOnly(pairs []dataio.Pair) bool {
	return !slices.ContainsFunc(pairs, func(p dataio.Pair) bool { return p.HasScore })
}

// rerankAgreement groups the pairs by their first text (the query) and
// compares the order FP32 and INT8 scores put each group's documents in.
func rerankAgreement(res *headEvalResult, pairs []dataio.Pair, a, b []float64) {
	groups := map[string][]int{}
	var queries []string
	for i, p := range pairs {
		if groups[p.A] == nil {
			queries = append(queries, p.A)
		}
		groups[p.A] = append(groups[p.A], i)
	}
	minRho := math.NaN()
	same, top1, n := 0, 0, 0
	for _, q := range queries {
		idx := groups[q]
		if len(idx) < 2 {
			continue
		}
		n++
		ga, gb := make([]float64, len(idx)), make([]float64, len(idx))
		for j, i := range idx {
			ga[j], gb[j] = a[i], b[i]
		}
		if slices.Equal(order(ga), order(gb)) {
			same++
		}
		if order(ga)[0] == order(gb)[0] {
			top1++
		}
		if rho := spearman(ga, gb); !math.IsNaN(rho) && (math.IsNaN(minRho) || rho < minRho) {
			minRho = rho
		}
	}
	if n == 0 {
		return
	}
	res.RerankQueries = n
	res.RerankSameOrder, res.RerankSameTop1 = float64(same)/float64(n), float64(top1)/float64(n)
	res.RerankSpearmanMin = number(minRho)
}

// order is the indices of v by decreasing value (stable).
func order(v []float64) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		switch {
		case v[x] > v[y]:
			return -1
		case v[x] < v[y]:
			return 1
		}
		return 0
	})
	return idx
}

// runBoth builds the INT8 graph of g and runs exs through it and through
// the FP32 interpreter.
func runBoth(ctx context.Context, g *compiler.Graph, tok *tokenizer.Tokenizer, exs []dataio.Example, cfg *int8Config, batch int, stderr io.Writer) (fp32, int8 []infer.Result, enc []infer.Encoded, err error) {
	if enc, err = infer.Encode(tok, exs); err != nil {
		return nil, nil, nil, err
	}
	b, err := buildInt8(g, tok, cfg, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	it, err := interp.New(g)
	if err != nil {
		return nil, nil, nil, err
	}
	q, closeQ, err := newInt8Executor(b.int8)
	if err != nil {
		return nil, nil, nil, err
	}
	defer closeQ()
	opts := infer.Options{BatchSize: batch, SortByLength: true}
	if fp32, err = infer.Run(ctx, g, infer.Interpreter(it.Run), enc, opts); err != nil {
		return nil, nil, nil, err
	}
	if int8, err = infer.Run(ctx, b.int8, q, enc, opts); err != nil {
		return nil, nil, nil, err
	}
	return fp32, int8, enc, nil
}

func (r *headEvalResult) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s\n", r.Model)
	fmt.Fprintf(tw, "data\t%s (%d %s)\n", r.Data, r.Inputs, map[bool]string{true: "pairs", false: "texts"}[r.Kind != "embedding"])
	if r.CalibSamples > 0 {
		fmt.Fprintf(tw, "calibration\tfirst %d inputs of %s\n", r.CalibSamples, r.Calibration)
	}
	fmt.Fprintf(tw, "INT8\t%s\n", r.Config)
	f := func(v *float64) string {
		if v == nil {
			return "undefined (constant scores)"
		}
		return fmt.Sprintf("%.5f", *v)
	}
	what := "embedding cosine"
	if r.Kind == "cross-encoder" {
		what = "score"
	}
	if r.Kind == "sts" || r.SpearmanFP32 != nil || r.SpearmanINT8 != nil {
		fmt.Fprintf(tw, "Spearman FP32 %s vs gold\t%s\n", what, f(r.SpearmanFP32))
		fmt.Fprintf(tw, "Spearman INT8 %s vs gold\t%s\n", what, f(r.SpearmanINT8))
	}
	if r.Kind != "embedding" {
		fmt.Fprintf(tw, "Spearman FP32 vs INT8 %s\t%s\n", what, f(r.SpearmanFP32INT8))
	}
	if r.Kind != "cross-encoder" {
		fmt.Fprintf(tw, "INT8 vs FP32 embedding cosine\tmean %.6f\tmin %.6f\n", r.EmbeddingCosineMean, r.EmbeddingCosineMin)
	} else {
		fmt.Fprintf(tw, "INT8 vs FP32 score\tmax abs difference %.3g\n", r.ScoreMaxAbsDiff)
		if r.RerankQueries > 0 {
			fmt.Fprintf(tw, "rerank agreement\t%d queries: same order %.2f%%, same top document %.2f%%, min Spearman %s\n",
				r.RerankQueries, 100*r.RerankSameOrder, 100*r.RerankSameTop1, f(r.RerankSpearmanMin))
		}
	}
	return tw.Flush()
}
