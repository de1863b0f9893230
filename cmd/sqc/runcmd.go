package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/infer"
	"github.com/sqc-dev/sqc/passes"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a model on texts or token ids and print one JSON object per input",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "an .onnx file or a HuggingFace directory"},
			&cli.BoolFlag{Name: "fp32", Usage: "run the FP32 reference interpreter"},
			&cli.BoolFlag{Name: "int8", Usage: "calibrate, SmoothQuant and quantise, then run the INT8 engine"},
			&cli.StringFlag{Name: "texts", Usage: "one text per line, a .tsv with a `sentence` column, or a .tsv of pairs (`sentence1` and `sentence2`, or `query` and `document`, columns) for a classifier of pairs, or of `question` and `context` columns for a question answering model"},
			&cli.StringFlag{Name: "ids", Usage: "pre-tokenized inputs, one JSON object per line"},
			vocabFlag(),
			&cli.IntFlag{Name: "batch", Value: 32, Usage: "inputs per forward pass"},
			&cli.BoolFlag{Name: "check-ir", Usage: "canonicalise first, verifying the graph after every pass and naming the pass that broke it"},
			promptFlag(),
		}, int8Flags()...),
		Action: func(c *cli.Context) error {
			fp32, int8 := c.Bool("fp32"), c.Bool("int8")
			switch {
			case fp32 && int8:
				return usageError{"give one precision: --fp32 or --int8"}
			case !fp32 && !int8:
				return usageError{"run needs a precision: --fp32 or --int8"}
			}
			var cfg *int8Config
			if int8 {
				var err error
				if cfg, err = parseInt8Flags(c, c.String("texts")+c.String("ids"), c.App.ErrWriter); err != nil {
					return err
				}
			}
			pairs, err := readPairInputs(c.String("texts"))
			if err != nil {
				return err
			}
			var exs []dataio.Example
			if pairs == nil {
				if exs, err = readInputs(c.String("texts"), c.String("ids")); err != nil {
					return err
				}
			}
			model := c.String("model")
			g, err := frontend.Load(model)
			if err != nil {
				return err
			}
			tokenOut := tokenLogits(g)
			head, err := loadModelHead(model, c.String("prompt-name"), g)
			if err != nil {
				return err
			}
			var tok *tokenizer.Tokenizer
			if pairs != nil || !exs[0].HasIDs || (int8 && cfg.needsTokenizer()) {
				if tok, err = loadTokenizer(model, c.String("vocab")); err != nil {
					return err
				}
				if tok, err = head.tokenizer(tok); err != nil {
					return err
				}
			}
			var qaWins [][]tokenizer.Encoding // a question answering model's windows, per pair
			if pairs != nil {
				if err := head.acceptsPairs(c.String("texts")); err != nil {
					return err
				}
				if isQuestionAnswering(g) {
					maxSeq := tok.MaxLength()
					if p := modelLimits(g).positions.rows; p > 0 {
						maxSeq = min(maxSeq, int(p))
					}
					if exs, qaWins, err = qaWindows(c.String("texts"), tok, pairs, maxSeq); err != nil {
						return err
					}
				} else {
					exs = pairExamples(tok, pairs)
				}
			}
			exs = head.withPrompt(exs)
			enc, err := infer.Encode(tok, exs)
			if err != nil {
				return err
			}
			// Both precisions check every input against the model's
			// tables before calibrating or running anything.
			if err := checkInputs(c.String("texts")+c.String("ids"), exs, enc, modelLimits(g)); err != nil {
				return err
			}
			if c.Bool("check-ir") {
				// The INT8 build's own passes always run verified; this
				// verifies canonicalisation too (and runs the FP32
				// interpreter on the canonical graph, the same function).
				if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
					return err
				}
			}
			var ex infer.Executor
			if int8 {
				b, err := buildInt8(g, tok, cfg, c.App.ErrWriter)
				if err != nil {
					return err
				}
				g = b.int8
				prog, closeProg, err := newInt8Executor(g)
				if err != nil {
					return err
				}
				defer closeProg()
				ex = prog
			} else {
				it, err := interp.New(g)
				if err != nil {
					return err
				}
				ex = infer.Interpreter(it.Run)
			}
			res, err := infer.Run(context.Background(), g, ex, enc, infer.Options{BatchSize: c.Int("batch"), SortByLength: true})
			if err != nil {
				return err
			}
			if head.active() {
				return head.print(c.App.Writer, res, enc)
			}
			if qaWins != nil {
				return printAnswers(c.App.Writer, res, pairs, qaWins)
			}
			if tokenOut != "" && pairs == nil {
				return printTokenResults(c.App.Writer, g, tokenOut, res, exs, tok)
			}
			return printResults(c.App.Writer, g, res)
		},
	}
}

func readInputs(texts, ids string) ([]dataio.Example, error) {
	switch {
	case texts != "" && ids != "":
		return nil, usageError{"give --texts or --ids, not both"}
	case texts != "":
		return dataio.ReadTexts(texts)
	case ids != "":
		return dataio.ReadIDs(ids)
	}
	return nil, usageError{"give inputs with --texts FILE or --ids FILE.jsonl"}
}

// vocabFlag is --vocab, the tokenizer of every command that reads texts
// (tokenizer.ReadSourceFile says how the file is read).
func vocabFlag() cli.Flag {
	return &cli.StringFlag{Name: "vocab", Usage: "tokenizer file: vocab.txt, tokenizer.json or a SentencePiece .model, with the tokenizer_config.json beside it (default: the model's, beside it)"}
}

// loadTokenizer finds the tokenizer: --vocab, else the one in the model
// directory that tokenizer.Load picks.
func loadTokenizer(model, vocab string) (*tokenizer.Tokenizer, error) {
	if vocab != "" {
		return tokenizer.LoadFile(vocab)
	}
	dir := frontend.Dir(model)
	if !tokenizer.HasSource(dir) {
		return nil, compiler.BadInput(dir, "", errNoTokenizer)
	}
	return tokenizer.Load(dir)
}

// errNoTokenizer: texts to tokenize, and no tokenizer file given or beside
// the model.
var errNoTokenizer = errors.New("no tokenizer.json, vocab.txt, SentencePiece model or vocab.json with merges.txt beside the model: give --vocab FILE, or token ids instead of texts")

func printResults(w interface{ Write([]byte) (int, error) }, g *compiler.Graph, res []infer.Result) error {
	enc := json.NewEncoder(w)
	for _, r := range res {
		obj := map[string]any{}
		for _, o := range g.Outputs {
			t := r[o.Name]
			obj[o.Name] = nested(t)
		}
		if err := enc.Encode(obj); err != nil {
			return err
		}
	}
	return nil
}

// nested renders a tensor as nested JSON arrays (a flat list for rank 1).
func nested(t *compiler.Tensor) any {
	var flat []any
	switch t.DType {
	case compiler.Float32:
		for _, v := range t.F32 {
			flat = append(flat, v)
		}
	case compiler.Int64:
		for _, v := range t.I64 {
			flat = append(flat, v)
		}
	}
	if len(t.Shape) <= 1 {
		return flat
	}
	var build func(dims []int64, data []any) any
	build = func(dims []int64, data []any) any {
		if len(dims) == 1 {
			return data
		}
		n := len(data) / int(dims[0])
		rows := make([]any, dims[0])
		for i := range rows {
			rows[i] = build(dims[1:], data[i*n:(i+1)*n])
		}
		return rows
	}
	return build(t.Shape, flat)
}

// modelInputLimits is what a graph accepts of the token inputs: the rows
// of the table each input indexes, and the positions it embeds.
type modelInputLimits struct {
	tables    map[string]tableRows // graph input name -> table
	positions tableRows            // rows 0: not found
}

// tableRows is an embedding table's name and its number of rows.
type tableRows struct {
	name string
	rows int64
}

// modelLimits reads the limits from g's embedding tables, as the HF
// frontend and torch.onnx export them (Gather(table, input) for token and
// type ids; a Slice of the position table, or of the position-id buffer
// [1, max_positions], ending at the sequence length) or as FuseEmbeddings
// fuses them (sqc.Embeddings). What it cannot find goes unchecked here
// and is left to the run's own checks.
func modelLimits(g *compiler.Graph) modelInputLimits {
	lim := modelInputLimits{tables: map[string]tableRows{}}
	isInput := map[string]bool{}
	for _, v := range g.Inputs {
		isInput[v.Name] = true
	}
	producer := map[string]*compiler.Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			producer[o] = n
		}
	}
	constant := func(name string) *compiler.Tensor { // an initializer or a Constant's value
		if t := g.Initializers[name]; t != nil {
			return t
		}
		if n := producer[name]; n != nil && n.Op == "Constant" {
			return n.AttrTensor("value")
		}
		return nil
	}
	rows := func(name string, axis int64) (tableRows, bool) {
		t := constant(name)
		if t == nil || axis < 0 || int(axis) >= len(t.Shape) {
			return tableRows{}, false
		}
		return tableRows{name, t.Shape[axis]}, true
	}
	indexes := func(input, table string) {
		if r, ok := rows(table, 0); ok && isInput[input] {
			if prev, seen := lim.tables[input]; !seen || r.rows < prev.rows {
				lim.tables[input] = r
			}
		}
	}
	positions := func(r tableRows, ok bool) {
		if ok && (lim.positions.rows == 0 || r.rows < lim.positions.rows) {
			lim.positions = r
		}
	}
	for _, n := range g.Nodes {
		switch n.Op {
		case "Gather":
			if len(n.Inputs) == 2 && n.AttrInt("axis", 0) == 0 {
				indexes(n.Inputs[1], n.Inputs[0])
				if pad, ok := paddingOffsetPositions(producer, constant, n.Inputs[1]); ok {
					// Real tokens take positions pad+1 .. pad+seq.
					if r, ok := rows(n.Inputs[0], 0); ok && r.rows-pad-1 > 0 {
						positions(tableRows{r.name, r.rows - pad - 1}, true)
					}
				}
			}
		case "sqc.Embeddings":
			indexes(n.Inputs[0], n.Inputs[1])
			r, ok := rows(n.Inputs[2], 0)
			if pad, padded := compiler.EmbeddingsPaddingIdx(n); padded {
				// Real tokens take positions pad+1 .. pad+seq.
				r.rows, ok = r.rows-pad-1, ok && r.rows-pad-1 > 0
			}
			positions(r, ok)
			if len(n.Inputs) >= 5 {
				indexes(n.Inputs[3], n.Inputs[4])
			}
		case "Slice":
			if len(n.Inputs) < 3 || !fromInputShape(producer, isInput, n.Inputs[2]) {
				continue
			}
			axis := int64(0)
			if len(n.Inputs) >= 4 {
				axes := constant(n.Inputs[3])
				if axes == nil || len(axes.I64) != 1 {
					continue
				}
				axis = axes.I64[0]
			}
			positions(rows(n.Inputs[0], axis))
		}
	}
	return lim
}

// paddingOffsetPositions recognises RoBERTa-family position ids,
// cumsum(ids != pad) · mask + pad (the HF frontend's and torch.onnx's
// form: an Add of the constant pad to a Mul, possibly behind a Cast, of a
// CumSum), and returns pad.
func paddingOffsetPositions(producer map[string]*compiler.Node, constant func(string) *compiler.Tensor, value string) (int64, bool) {
	add := producer[value]
	if add == nil || add.Op != "Add" || len(add.Inputs) != 2 {
		return 0, false
	}
	for k := range 2 {
		c := constant(add.Inputs[k])
		if c == nil || c.Len() != 1 || (c.DType != compiler.Int64 && c.DType != compiler.Int32) {
			continue
		}
		pad := int64(0)
		if c.DType == compiler.Int64 {
			pad = c.I64[0]
		} else {
			pad = int64(c.I32[0])
		}
		m := producer[add.Inputs[1-k]]
		if m != nil && m.Op == "Cast" {
			m = producer[m.Inputs[0]]
		}
		if m == nil || m.Op != "Mul" {
			continue
		}
		for _, in := range m.Inputs {
			if cs := producer[in]; cs != nil && cs.Op == "CumSum" && pad >= 0 {
				return pad, true
			}
		}
	}
	return 0, false
}

// fromInputShape reports whether value is computed from the Shape of a
// graph input (the sequence length a position Slice ends at).
func fromInputShape(producer map[string]*compiler.Node, isInput map[string]bool, value string) bool {
	seen := map[string]bool{}
	var walk func(v string, depth int) bool
	walk = func(v string, depth int) bool {
		n := producer[v]
		if n == nil || depth > 8 || seen[v] {
			return false
		}
		seen[v] = true
		if n.Op == "Shape" {
			return len(n.Inputs) > 0 && isInput[n.Inputs[0]]
		}
		for _, in := range n.Inputs {
			if in != "" && walk(in, depth+1) {
				return true
			}
		}
		return false
	}
	return walk(value, 0)
}

// checkInputs checks every input against the model's limits before
// anything runs: token and type ids must index their tables, and no
// sequence may be longer than the positions the model embeds. Errors name
// path (the --ids or --texts file) and the input's line.
func checkInputs(path string, exs []dataio.Example, enc []infer.Encoded, lim modelInputLimits) error {
	bad := func(ex dataio.Example, format string, args ...any) error {
		return compiler.BadInput(path, "", fmt.Errorf("%w: line %d: "+format, append([]any{compiler.ErrInvalidRequest, ex.Line}, args...)...))
	}
	for i, e := range enc {
		ex := exs[i]
		if lim.positions.rows > 0 && int64(len(e.IDs)) > lim.positions.rows {
			return bad(ex, "%d tokens, more than the %d positions the model embeds (%s)", len(e.IDs), lim.positions.rows, lim.positions.name)
		}
		for _, f := range []struct {
			input string
			ids   []int64
		}{{"input_ids", e.IDs}, {"token_type_ids", e.TypeIDs}} {
			input, ids := f.input, f.ids
			table, ok := lim.tables[input]
			if !ok {
				continue
			}
			for j, id := range ids {
				if id < 0 || id >= table.rows {
					return bad(ex, "%s[%d] is %d, outside the model's %d rows of %s", input, j, id, table.rows, table.name)
				}
			}
		}
	}
	return nil
}
