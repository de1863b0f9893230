package bench

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/passes"
)

// DefaultSeed seeds random weights when Source.Seed is 0. The weights of a
// named shape are a pure function of the seed.
const DefaultSeed = 1

// Source says which model to benchmark: a file or directory (Model), or a
// named shape with random weights (Config). Exactly one must be set.
type Source struct {
	Model  string // an .onnx file or a HuggingFace directory (frontend.Load)
	Config string // a name Config knows: bert-base, minilm-l6, ...
	Seed   uint64 // random-weight seed for Config (DefaultSeed when 0)
}

// Validate checks that exactly one of Model and Config is set.
func (s Source) Validate() error {
	switch {
	case s.Model != "" && s.Config != "":
		return fmt.Errorf("%w: give --model or --config, not both", compiler.ErrInvalidRequest)
	case s.Model == "" && s.Config == "":
		return fmt.Errorf("%w: give --model FILE or --config NAME (one of %v)", compiler.ErrInvalidRequest, ConfigNames())
	}
	return nil
}

// Model is a canonical FP32 graph (after passes.Pipeline) ready to be run
// or quantised, with what is needed to make inputs for it.
type Model struct {
	Name  string // the config name, or the model path
	Graph *compiler.Graph
	// Vocab is the row count of the word-embedding table: random token
	// ids are drawn below it.
	Vocab int
	// MaxSeq is the longest sequence the position embeddings cover (0:
	// unknown, e.g. for ONNX files).
	MaxSeq int
	// Random reports weights made by hf.RandomWeights (not a checkpoint).
	Random bool
	// Seed is the random-weight seed (Random only).
	Seed uint64
}

// Load builds the model s names and runs the canonicalisation pipeline on
// it, so that it can be calibrated, quantised and compiled.
func Load(s Source) (*Model, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var (
		g    *compiler.Graph
		err  error
		name = s.Model
	)
	if s.Config != "" {
		name = s.Config
		cfg, cerr := Config(s.Config)
		if cerr != nil {
			return nil, cerr
		}
		seed := s.Seed
		if seed == 0 {
			seed = DefaultSeed
		}
		if g, err = hf.Build(cfg, hf.RandomWeights(seed)); err == nil {
			err = exposeHidden(g)
		}
	} else {
		g, err = frontend.Load(s.Model)
	}
	if err != nil {
		return nil, err
	}
	// The vocabulary is read before canonicalisation, which may fuse the
	// embedding lookups into one op.
	vocab, err := vocabSize(g)
	if err != nil {
		return nil, compiler.BadInput(s.Model, "input_ids", err)
	}
	if err := passes.RunPipeline(g, passes.Options{}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := &Model{Name: name, Graph: g, Vocab: vocab, Random: s.Config != ""}
	if m.Random {
		m.Seed = s.Seed
		if m.Seed == 0 {
			m.Seed = DefaultSeed
		}
	}
	if n, err := strconv.Atoi(g.Meta["max_position_embeddings"]); err == nil && n > 0 {
		m.MaxSeq = n
	}
	return m, nil
}

// HiddenOutput is the graph output Load adds to models built from a
// Config: the encoder's last hidden state, [batch, sequence, hidden].
const HiddenOutput = "last_hidden_state"

// exposeHidden makes the encoder's last hidden state a graph output of a
// sequence classifier, named HiddenOutput, as the peer harness's models
// return it next to the logits: both are then timed producing the same
// outputs, and the accuracy check can compare hidden states. The hidden
// state is what the classifier head's first-token Gather (axis 1, index 0)
// reads.
func exposeHidden(g *compiler.Graph) error {
	if g.IsOutput(HiddenOutput) {
		return nil
	}
	var hidden string
	for _, n := range g.Nodes {
		if n.Op == "Gather" && n.AttrInt("axis", 0) == 1 && len(n.Inputs) == 2 {
			if idx, ok := g.Initializers[n.Inputs[1]]; ok && idx.Len() == 1 && len(idx.I64) == 1 && idx.I64[0] == 0 {
				hidden = n.Inputs[0]
			}
		}
	}
	if hidden == "" {
		return errors.New("no first-token Gather: cannot find the encoder's last hidden state")
	}
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in == hidden {
				n.Inputs[i] = HiddenOutput
			}
		}
		for i, out := range n.Outputs {
			if out == hidden {
				n.Outputs[i] = HiddenOutput
			}
		}
	}
	if v, ok := g.Values[hidden]; ok {
		delete(g.Values, hidden)
		v.Name = HiddenOutput
		g.Values[HiddenOutput] = v
	}
	g.Outputs = append(g.Outputs, &compiler.Value{Name: HiddenOutput, DType: compiler.Float32,
		Shape: compiler.Shape{{Size: -1, Param: "batch"}, {Size: -1, Param: "sequence"}, {Size: int64(hiddenSize(g))}}})
	return nil
}

func hiddenSize(g *compiler.Graph) int {
	n, _ := strconv.Atoi(g.Meta["hidden_size"])
	return n
}

// vocabSize finds the table that input_ids index (a Gather of a constant
// table by the graph input) and returns its row count.
func vocabSize(g *compiler.Graph) (int, error) {
	for _, n := range g.Nodes {
		if n.Op != "Gather" || len(n.Inputs) < 2 || n.Inputs[1] != InputIDs {
			continue
		}
		if t, ok := g.Initializers[n.Inputs[0]]; ok && len(t.Shape) == 2 {
			return int(t.Shape[0]), nil
		}
	}
	return 0, errors.New("no embedding table is indexed by input_ids: not a BERT-family encoder")
}
