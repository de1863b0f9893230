package sentence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// File names of a sentence-transformers folder.
const (
	ModulesFile      = "modules.json"
	BertConfigFile   = "sentence_bert_config.json"
	STConfigFile     = "config_sentence_transformers.json"
	moduleConfigFile = "config.json"
)

// Model is a sentence-transformers folder, read.
type Model struct {
	Dir            string // the folder
	TransformerDir string // module 0's folder: the encoder's config.json, weights and tokenizer
	// Head is what follows the encoder: pooling, Dense layers, Normalize.
	Head modelrt.EmbeddingHead
	// WordEmbeddingDim is 1_Pooling's word_embedding_dimension (0: absent):
	// the encoder's hidden size, checked by Check.
	WordEmbeddingDim int
	// MaxSeqLength is sentence_bert_config.json's max_seq_length, the
	// tokenizer's truncation length with special tokens (0: absent).
	MaxSeqLength int
	// Prompts are config_sentence_transformers.json's prompts by name, and
	// DefaultPrompt the name of the one applied when none is asked for
	// ("" for none).
	Prompts       map[string]string
	DefaultPrompt string
	// IncludePrompt is 1_Pooling's include_prompt (default true): whether
	// the prompt's tokens are pooled. False is supported only without a
	// prompt (Prompt reports it).
	IncludePrompt bool
	// Sparse is a SparseEncoder folder's SpladePooling (modules
	// MLMTransformer and SpladePooling: a masked language model whose
	// logits are pooled over the vocabulary), nil for a dense
	// SentenceTransformer's. Head is then unused, and WordEmbeddingDim is
	// SpladePooling's (the vocabulary size).
	Sparse *modelrt.SparseHead
}

// IsFolder reports whether dir is a sentence-transformers folder (holds
// modules.json).
func IsFolder(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ModulesFile))
	return err == nil && !st.IsDir()
}

// module is one modules.json entry.
type module struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// kind is a module type's class name: "sentence_transformers.models.Pooling"
// -> "Pooling".
func (m module) kind() string {
	return m.Type[strings.LastIndex(m.Type, ".")+1:]
}

// Load reads the folder dir.
func Load(dir string) (*Model, error) {
	path := filepath.Join(dir, ModulesFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, compiler.BadInput(path, "", err)
	}
	var mods []module
	if err := json.Unmarshal(data, &mods); err != nil {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
	}
	sort.SliceStable(mods, func(i, j int) bool { return mods[i].Idx < mods[j].Idx })
	if len(mods) > 0 && mods[0].kind() == "MLMTransformer" {
		return loadSparse(dir, path, mods)
	}
	if len(mods) < 2 || mods[0].kind() != "Transformer" {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: want a Transformer module first and a Pooling module after it, got %s", compiler.ErrUnknownModel, kinds(mods)))
	}
	m := &Model{Dir: dir, IncludePrompt: true}
	if m.TransformerDir, err = modulePath(dir, path, mods[0]); err != nil {
		return nil, err
	}
	pooled, normalized := false, false
	for _, mod := range mods[1:] {
		at := fmt.Sprintf("module %d (%s)", mod.Idx, mod.Type)
		if normalized {
			return nil, compiler.BadInput(path, at, fmt.Errorf("%w: only Normalize may be last; sqc computes Pooling, Dense..., Normalize", compiler.ErrUnknownModel))
		}
		switch mod.kind() {
		case "Pooling":
			if pooled {
				return nil, compiler.BadInput(path, at, fmt.Errorf("%w: a second Pooling module", compiler.ErrUnknownModel))
			}
			pooled = true
			mdir, err := modulePath(dir, path, mod)
			if err != nil {
				return nil, err
			}
			if err := m.readPooling(filepath.Join(mdir, moduleConfigFile)); err != nil {
				return nil, err
			}
		case "Dense":
			if !pooled {
				return nil, compiler.BadInput(path, at, fmt.Errorf("%w: Dense before Pooling (token-level Dense is not supported)", compiler.ErrUnknownModel))
			}
			mdir, err := modulePath(dir, path, mod)
			if err != nil {
				return nil, err
			}
			d, err := readDense(mdir)
			if err != nil {
				return nil, err
			}
			m.Head.Dense = append(m.Head.Dense, d)
		case "Normalize":
			// Normalize has no parameters: its folder may be absent.
			if !pooled {
				return nil, compiler.BadInput(path, at, fmt.Errorf("%w: Normalize before Pooling", compiler.ErrUnknownModel))
			}
			m.Head.Normalize, normalized = true, true
		default:
			return nil, compiler.BadInput(path, at, fmt.Errorf("%w: module type %q; sqc supports Transformer, Pooling, Dense and Normalize", compiler.ErrUnknownModel, mod.Type))
		}
	}
	if !pooled {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: no Pooling module (%s)", compiler.ErrUnknownModel, kinds(mods)))
	}
	return m, m.readConfigs()
}

// readConfigs reads the Transformer's sentence_bert_config.json and the
// folder's config_sentence_transformers.json.
func (m *Model) readConfigs() error {
	if err := m.readBertConfig(filepath.Join(m.TransformerDir, BertConfigFile)); err != nil {
		return err
	}
	return m.readSTConfig(filepath.Join(m.Dir, STConfigFile))
}

// loadSparse reads a SparseEncoder folder (sentence-transformers 5's
// sparse_encoder): an MLMTransformer (a *ForMaskedLM checkpoint) and a
// SpladePooling, whose config.json gives pooling_strategy (max, sum) and
// activation_function (relu, log1p_relu). Inference-free SPLADE (Router,
// SparseStaticEmbedding) and sparse heads after the pooling (SparseAutoEncoder,
// CSR) are refused by name.
func loadSparse(dir, path string, mods []module) (*Model, error) {
	if len(mods) != 2 || mods[1].kind() != "SpladePooling" {
		return nil, compiler.BadInput(path, "", fmt.Errorf("%w: a sparse encoder of modules %s; sqc supports MLMTransformer then SpladePooling", compiler.ErrUnknownModel, kinds(mods)))
	}
	m := &Model{Dir: dir, IncludePrompt: true, Sparse: &modelrt.SparseHead{}}
	var err error
	if m.TransformerDir, err = modulePath(dir, path, mods[0]); err != nil {
		return nil, err
	}
	mdir, err := modulePath(dir, path, mods[1])
	if err != nil {
		return nil, err
	}
	file := filepath.Join(mdir, moduleConfigFile)
	var raw struct {
		Strategy   *string `json:"pooling_strategy"`
		Activation *string `json:"activation_function"`
		Dim        *int    `json:"word_embedding_dimension"`
	}
	if _, err := readJSON(file, &raw); err != nil { // absent: SpladePooling's defaults
		return nil, err
	}
	if raw.Strategy != nil {
		m.Sparse.Pooling = *raw.Strategy
	}
	if raw.Activation != nil {
		m.Sparse.Activation = *raw.Activation
	}
	if err := m.Sparse.Validate(); err != nil {
		return nil, compiler.BadInput(file, "", fmt.Errorf("%w: %v", compiler.ErrUnknownModel, err))
	}
	if raw.Dim != nil {
		if *raw.Dim <= 0 {
			return nil, compiler.BadInput(file, "word_embedding_dimension", fmt.Errorf("%w: want a positive integer, got %d", compiler.ErrMalformed, *raw.Dim))
		}
		m.WordEmbeddingDim = *raw.Dim
	}
	return m, m.readConfigs()
}

func kinds(mods []module) string {
	var k []string
	for _, m := range mods {
		k = append(k, m.kind())
	}
	if len(k) == 0 {
		return "no modules"
	}
	return strings.Join(k, ", ")
}

// modulePath resolves a module's folder inside dir, refusing paths that
// leave it.
func modulePath(dir, file string, m module) (string, error) {
	p := filepath.Clean(filepath.FromSlash(m.Path))
	if filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
		return "", compiler.BadInput(file, fmt.Sprintf("module %d", m.Idx), fmt.Errorf("%w: path %q is outside the folder", compiler.ErrMalformed, m.Path))
	}
	return filepath.Join(dir, p), nil
}

// readJSON decodes path into v; absent reports whether the file is
// missing (then v is untouched and err nil).
func readJSON(path string, v any) (absent bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, compiler.BadInput(path, "", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, compiler.BadInput(path, "", fmt.Errorf("%w: %v", compiler.ErrMalformed, err))
	}
	return false, nil
}

// poolingKeys maps 1_Pooling/config.json's mode switches to modes.
var poolingKeys = map[string]modelrt.PoolingMode{
	"pooling_mode_cls_token":            modelrt.PoolCLS,
	"pooling_mode_max_tokens":           modelrt.PoolMax,
	"pooling_mode_mean_tokens":          modelrt.PoolMean,
	"pooling_mode_mean_sqrt_len_tokens": modelrt.PoolMeanSqrtLen,
	"pooling_mode_weightedmean_tokens":  modelrt.PoolWeightedMean,
	"pooling_mode_lasttoken":            modelrt.PoolLastToken,
}

// poolingNames maps the Pooling constructor's pooling_mode strings.
var poolingNames = map[string]modelrt.PoolingMode{
	"cls": modelrt.PoolCLS, "lasttoken": modelrt.PoolLastToken, "max": modelrt.PoolMax, "mean": modelrt.PoolMean,
	"mean_sqrt_len_tokens": modelrt.PoolMeanSqrtLen, "weightedmean": modelrt.PoolWeightedMean,
}

func (m *Model) readPooling(path string) error {
	var raw map[string]json.RawMessage
	absent, err := readJSON(path, &raw)
	if err != nil {
		return err
	}
	if absent {
		return compiler.BadInput(path, "", fmt.Errorf("%w: the Pooling module has no config.json", compiler.ErrMalformed))
	}
	on := map[modelrt.PoolingMode]bool{}
	for key, v := range raw {
		switch key {
		case "word_embedding_dimension":
			if err := json.Unmarshal(v, &m.WordEmbeddingDim); err != nil || m.WordEmbeddingDim <= 0 {
				return compiler.BadInput(path, key, fmt.Errorf("%w: want a positive integer, got %s", compiler.ErrMalformed, v))
			}
		case "pooling_mode":
			// The Pooling constructor's string form, should a config hold it.
			var name string
			mode, known := modelrt.PoolingMode(""), false
			if err := json.Unmarshal(v, &name); err == nil {
				mode, known = poolingNames[name]
			}
			if !known {
				return compiler.BadInput(path, key, fmt.Errorf("%w: %s; want one of cls, lasttoken, max, mean, mean_sqrt_len_tokens, weightedmean", compiler.ErrUnknownModel, v))
			}
			on[mode] = true
		case "include_prompt":
			if err := json.Unmarshal(v, &m.IncludePrompt); err != nil {
				return compiler.BadInput(path, key, fmt.Errorf("%w: want true or false, got %s", compiler.ErrMalformed, v))
			}
		default:
			mode, known := poolingKeys[key]
			if !known {
				if strings.HasPrefix(key, "pooling_mode") {
					return compiler.BadInput(path, key, fmt.Errorf("%w: unknown pooling mode", compiler.ErrUnknownModel))
				}
				continue // other settings do not change the computation
			}
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return compiler.BadInput(path, key, fmt.Errorf("%w: want true or false, got %s", compiler.ErrMalformed, v))
			}
			on[mode] = b
		}
	}
	for _, mode := range modelrt.PoolingOrder {
		if on[mode] {
			m.Head.Pooling = append(m.Head.Pooling, mode)
		}
	}
	if len(m.Head.Pooling) == 0 {
		return compiler.BadInput(path, "", fmt.Errorf("%w: no pooling mode is true", compiler.ErrMalformed))
	}
	return nil
}

func (m *Model) readBertConfig(path string) error {
	var raw struct {
		MaxSeqLength *int  `json:"max_seq_length"`
		DoLowerCase  *bool `json:"do_lower_case"`
	}
	if _, err := readJSON(path, &raw); err != nil {
		return err
	}
	if raw.MaxSeqLength != nil {
		if *raw.MaxSeqLength <= 0 {
			return compiler.BadInput(path, "max_seq_length", fmt.Errorf("%w: %d, want a positive length", compiler.ErrMalformed, *raw.MaxSeqLength))
		}
		m.MaxSeqLength = *raw.MaxSeqLength
	}
	if raw.DoLowerCase != nil && *raw.DoLowerCase {
		// Python's str.lower before tokenizing; the tokenizer's own
		// lowercasing (tokenizer_config.json do_lower_case) is supported.
		return compiler.BadInput(path, "do_lower_case", fmt.Errorf("%w: lowercasing texts before the tokenizer is not supported (set the tokenizer's do_lower_case instead)", compiler.ErrUnknownModel))
	}
	return nil
}

func (m *Model) readSTConfig(path string) error {
	var raw struct {
		Prompts           map[string]string `json:"prompts"`
		DefaultPromptName *string           `json:"default_prompt_name"`
	}
	if _, err := readJSON(path, &raw); err != nil {
		return err
	}
	m.Prompts = raw.Prompts
	if raw.DefaultPromptName != nil && *raw.DefaultPromptName != "" {
		if _, ok := m.Prompts[*raw.DefaultPromptName]; !ok {
			return compiler.BadInput(path, "default_prompt_name", fmt.Errorf("%w: %q is not among the prompts (%s)", compiler.ErrMalformed, *raw.DefaultPromptName, m.promptNames()))
		}
		m.DefaultPrompt = *raw.DefaultPromptName
	}
	return nil
}

func (m *Model) promptNames() string {
	names := make([]string, 0, len(m.Prompts))
	for n := range m.Prompts {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Prompt returns the text put before every input for the prompt called
// name ("" means the default prompt, if any; "none" means no prompt).
func (m *Model) Prompt(name string) (string, error) {
	switch name {
	case "none":
		return "", nil
	case "":
		name = m.DefaultPrompt
		if name == "" {
			return "", nil
		}
	}
	p, ok := m.Prompts[name]
	if !ok {
		return "", compiler.BadInput(filepath.Join(m.Dir, STConfigFile), "prompts", fmt.Errorf("%w: no prompt %q; the model has: %s", compiler.ErrInvalidRequest, name, m.promptNames()))
	}
	if p != "" && !m.IncludePrompt {
		return "", compiler.BadInput(filepath.Join(m.Dir, "1_Pooling", moduleConfigFile), "include_prompt", fmt.Errorf("%w: include_prompt false (pooling without the prompt's tokens) is not supported with a prompt", compiler.ErrUnknownModel))
	}
	return p, nil
}

// Check verifies the head against the encoder's hidden size (a sparse
// encoder's SpladePooling against the width of its logits, the
// vocabulary size).
func (m *Model) Check(hidden int) error {
	file := filepath.Join(m.Dir, ModulesFile)
	if m.Sparse != nil {
		if m.WordEmbeddingDim != 0 && m.WordEmbeddingDim != hidden {
			return compiler.BadInput(file, "word_embedding_dimension", fmt.Errorf("%w: the SpladePooling module expects %d, the masked language model's vocabulary has %d", compiler.ErrShapeMismatch, m.WordEmbeddingDim, hidden))
		}
		return nil
	}
	if m.WordEmbeddingDim != 0 && m.WordEmbeddingDim != hidden {
		return compiler.BadInput(file, "word_embedding_dimension", fmt.Errorf("%w: the Pooling module expects %d, the encoder's hidden size is %d", compiler.ErrShapeMismatch, m.WordEmbeddingDim, hidden))
	}
	if err := m.Head.Validate(hidden); err != nil {
		return compiler.BadInput(file, "", fmt.Errorf("%w: %v", compiler.ErrShapeMismatch, err))
	}
	return nil
}

// activations maps torch module classes to modelrt activations.
var activations = map[string]modelrt.Activation{
	"Identity": modelrt.ActIdentity,
	"Tanh":     modelrt.ActTanh,
	"ReLU":     modelrt.ActReLU,
	"Sigmoid":  modelrt.ActSigmoid,
	"GELU":     modelrt.ActGELU,
}

// parseActivation maps "torch.nn.modules.activation.Tanh" to ActTanh.
func parseActivation(file, key, class string) (modelrt.Activation, error) {
	a, ok := activations[class[strings.LastIndex(class, ".")+1:]]
	if !ok {
		return "", compiler.BadInput(file, key, fmt.Errorf("%w: activation %q; supported: torch.nn Identity, Tanh, ReLU, Sigmoid, GELU", compiler.ErrUnknownModel, class))
	}
	return a, nil
}

// readDense reads a Dense module folder: config.json and
// model.safetensors (linear.weight [out, in], linear.bias).
func readDense(dir string) (modelrt.Dense, error) {
	path := filepath.Join(dir, moduleConfigFile)
	var raw struct {
		In         *int    `json:"in_features"`
		Out        *int    `json:"out_features"`
		Bias       *bool   `json:"bias"`
		Activation *string `json:"activation_function"`
	}
	absent, err := readJSON(path, &raw)
	if err != nil {
		return modelrt.Dense{}, err
	}
	switch {
	case absent:
		return modelrt.Dense{}, compiler.BadInput(path, "", fmt.Errorf("%w: the Dense module has no config.json", compiler.ErrMalformed))
	case raw.In == nil || raw.Out == nil || *raw.In <= 0 || *raw.Out <= 0:
		return modelrt.Dense{}, compiler.BadInput(path, "", fmt.Errorf("%w: in_features and out_features must be positive integers", compiler.ErrMalformed))
	}
	d := modelrt.Dense{In: *raw.In, Out: *raw.Out, Activation: modelrt.ActTanh} // Dense's default
	if raw.Activation != nil {
		if d.Activation, err = parseActivation(path, "activation_function", *raw.Activation); err != nil {
			return modelrt.Dense{}, err
		}
	}
	st, err := hf.OpenWeights(dir)
	if err != nil {
		return modelrt.Dense{}, err
	}
	w, err := tensor(st, "linear.weight", []int64{int64(d.Out), int64(d.In)})
	if err != nil {
		return modelrt.Dense{}, err
	}
	d.Weight = w
	if raw.Bias == nil || *raw.Bias {
		if d.Bias, err = tensor(st, "linear.bias", []int64{int64(d.Out)}); err != nil {
			return modelrt.Dense{}, err
		}
	}
	return d, nil
}

// tensor reads one parameter and checks its shape and values.
func tensor(st hf.WeightSource, name string, shape []int64) ([]float32, error) {
	t, err := st.Weight(name, shape)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, compiler.BadInput(hf.SourceFile(st), name, fmt.Errorf("%w: shape %v, config.json implies %v", compiler.ErrShapeMismatch, t.Shape, shape))
	}
	for i, v := range t.F32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, compiler.BadInput(hf.SourceFile(st), name, fmt.Errorf("%w: element %d is %g", compiler.ErrNonFinite, i, v))
		}
	}
	return t.F32, nil
}
