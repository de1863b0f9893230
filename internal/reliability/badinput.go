package reliability

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/frontend"
	"github.com/sqc-dev/sqc/compiler/hf"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Input is one broken input written to disk, with the two ways sqc can be
// fed it.
type Input struct {
	// Load feeds the input to the public Go API that reads it (the model
	// loaders plus the checks run before executing a graph, the tokenizer
	// loaders, the input-file readers) and returns its error.
	Load func() error
	// Commands are the sqc command lines, without the program name, that
	// read the input.
	Commands [][]string
	// Mentions are strings the error, and the CLI's one line on stderr,
	// must contain: the file's path and, where there is one, the tensor,
	// node, field or value at fault.
	Mentions []string
	// CommandMentions, when set, replace Mentions for the CLI's line:
	// `sqc run` checks some inputs against the model before it runs
	// anything, and then names the input file and line rather than what
	// the Go API Load calls finds at fault in the model.
	CommandMentions []string
}

// Case is one kind of bad input.
type Case struct {
	Name string
	// Want is the cause errors.Is must find; every error must also match
	// compiler.ErrBadInput (which tokenizer.ErrBadInput is).
	Want error
	// Build writes the input under dir (an empty directory of its own).
	Build func(dir string) (Input, error)
}

// BadInputCases lists every kind of bad input sqc must refuse with a
// typed error naming the file or tensor: broken model files of both
// formats, broken tokenizer files, and bad requests.
func BadInputCases() []Case {
	var cases []Case
	cases = append(cases, onnxCases()...)
	cases = append(cases, safetensorsCases()...)
	cases = append(cases, configCases()...)
	cases = append(cases, tokenizerCases()...)
	cases = append(cases, requestCases()...)
	return cases
}

// ValidCommands writes the unbroken versions of the files the cases
// break under dir and returns sqc command lines reading them, each of
// which must succeed: the commands of the table fail because of the fault
// each case puts in, not because of anything else.
func ValidCommands(dir string) ([][]string, error) {
	onnxPath, err := writeFile(dir, "model.onnx", tinyONNX().marshal())
	if err != nil {
		return nil, err
	}
	model := filepath.Join(dir, "hf")
	tensors, err := tinyHFTensors(tinyHFConfig())
	if err != nil {
		return nil, err
	}
	if err := writeTinyHF(model, tinyHFConfig(), tensors); err != nil {
		return nil, err
	}
	ids, err := writeFile(dir, "ids.jsonl", idsLine(TinyIDs, nil, 1))
	if err != nil {
		return nil, err
	}
	texts, err := writeFile(dir, "texts.txt", []byte("a fine film\n"))
	if err != nil {
		return nil, err
	}
	tj, err := writeFile(dir, "tokenizer.json", tinyTokenizerJSON())
	if err != nil {
		return nil, err
	}
	vocab := filepath.Join(model, "vocab.txt")
	return [][]string{
		{"inspect", onnxPath},
		{"inspect", model},
		{"run", "--fp32", "--model", onnxPath, "--ids", ids},
		{"run", "--fp32", "--model", model, "--ids", ids},
		{"run", "--int8", "--model", model, "--ids", ids, "--calib", ids},
		{"run", "--fp32", "--model", onnxPath, "--texts", texts, "--vocab", vocab},
		{"run", "--fp32", "--model", onnxPath, "--texts", texts, "--vocab", tj},
		{"eval", "--model", model, "--data", ids, "--calib", ids},
	}, nil
}

// CheckModel is what sqc does with a model file before running it: load
// it (frontend.Load), infer shapes (as `sqc inspect` does) and prepare
// the interpreter (as `sqc run --fp32` does).
func CheckModel(path string) error {
	g, err := frontend.Load(path)
	if err != nil {
		return err
	}
	if err := g.InferShapes(); err != nil {
		return err
	}
	_, err = interp.New(g)
	return err
}

// RunIDs loads a model and an --ids file and runs the model's FP32
// interpreter on each input, the path of `sqc run --fp32 --ids`.
func RunIDs(model, ids string) error {
	g, err := frontend.Load(model)
	if err != nil {
		return err
	}
	exs, err := dataio.ReadIDs(ids)
	if err != nil {
		return err
	}
	it, err := interp.New(g)
	if err != nil {
		return err
	}
	for _, ex := range exs {
		feeds := map[string]*compiler.Tensor{}
		for _, in := range g.Inputs {
			t := compiler.NewTensor(compiler.Int64, 1, int64(len(ex.IDs)))
			switch in.Name {
			case "input_ids":
				copy(t.I64, ex.IDs)
			case "attention_mask":
				for i := range t.I64 {
					t.I64[i] = 1
				}
				if ex.Mask != nil {
					copy(t.I64, ex.Mask)
				}
			}
			feeds[in.Name] = t
		}
		if _, err := it.Run(feeds, nil); err != nil {
			return err
		}
	}
	return nil
}

// modelInput is the Input of a broken model file at path: loaded by
// CheckModel, read by `sqc inspect` and `sqc run --fp32` (on a valid ids
// file).
func modelInput(dir, path string, mentions ...string) (Input, error) {
	ids, err := writeFile(dir, "ok.jsonl", idsLine(TinyIDs, nil, -1))
	if err != nil {
		return Input{}, err
	}
	return Input{
		Load:     func() error { return CheckModel(path) },
		Commands: [][]string{{"inspect", path}, {"run", "--fp32", "--model", path, "--ids", ids}},
		Mentions: append([]string{path}, mentions...),
	}, nil
}

// onnxFile writes data as dir/model.onnx and makes its modelInput.
func onnxFile(data []byte, mentions ...string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		path, err := writeFile(dir, "model.onnx", data)
		if err != nil {
			return Input{}, err
		}
		return modelInput(dir, path, mentions...)
	}
}

// onnxWith is the tiny ONNX model changed by edit.
func onnxWith(edit func(m *onnxModel)) []byte {
	m := tinyONNX()
	edit(&m)
	return m.marshal()
}

func onnxCases() []Case {
	good := tinyONNX().marshal()
	garbled := slices.Clone(good)
	// 0xff bytes where the first node is: a varint that never ends.
	for i := 24; i < 40; i++ {
		garbled[i] = 0xff
	}
	// A graph field whose length prefix claims 1 TiB.
	oversized := appendBytesHeader(nil, 7, 1<<40)
	oversized = append(oversized, good[:64]...)
	// A PyTorch checkpoint (a zip file) saved under the .onnx name.
	zip := append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), bytes.Repeat([]byte{0}, 54)...)
	return []Case{
		{Name: "onnx/empty", Want: compiler.ErrTruncated, Build: onnxFile(nil)},
		{Name: "onnx/truncated", Want: compiler.ErrTruncated, Build: onnxFile(good[:len(good)*2/3], "truncated")},
		{Name: "onnx/oversized-length-prefix", Want: compiler.ErrTruncated, Build: onnxFile(oversized)},
		{Name: "onnx/oversized-dims", Want: compiler.ErrShapeMismatch, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[1].Dims = []int64{1 << 20, 1 << 20} // 4 TiB of f32 claimed, 32 bytes given
		}), "cls")},
		{Name: "onnx/garbled", Want: compiler.ErrMalformed, Build: onnxFile(garbled)},
		{Name: "onnx/wrong-magic", Want: compiler.ErrMalformed, Build: onnxFile(zip)},
		{Name: "onnx/dtype-mismatch", Want: compiler.ErrDTypeMismatch, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[1] = onnxTensor{Name: "cls", DType: onnxInt64, Dims: []int64{tinyHidden, 2}, I64: []int64{1, 2, 3, 4, 5, 6, 7, 8}}
		}), "classify")},
		{Name: "onnx/missing-initializer", Want: compiler.ErrMissingTensor, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers = m.Initializers[:1]
		}), "cls")},
		{Name: "onnx/duplicate-initializer", Want: compiler.ErrDuplicate, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers = append(m.Initializers, m.Initializers[0])
		}), "emb")},
		{Name: "onnx/raw-data-vs-dims", Want: compiler.ErrShapeMismatch, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[1].Raw = make([]byte, 7*4)
		}), "cls")},
		{Name: "onnx/weight-shape-mismatch", Want: compiler.ErrShapeMismatch, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[1].Dims = []int64{tinyHidden + 1, 2}
			m.Initializers[1].F32 = make([]float32, (tinyHidden+1)*2)
		}), "classify")},
		{Name: "onnx/cyclic-graph", Want: compiler.ErrCyclicGraph, Build: onnxFile(onnxWith(func(m *onnxModel) {
			// pool reads "logits", which classify makes from pool's output.
			m.Nodes[1].In = []string{"logits"}
			m.Nodes = append(m.Nodes, onnxNode{Name: "out", Op: "Identity", In: []string{"pooled"}, Out: []string{"result"}})
			m.Outputs[0].Name = "result"
		}), "pool")},
		{Name: "onnx/unsupported-op", Want: compiler.ErrUnsupportedOp, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Nodes[1].Op = "NonMaxSuppression"
		}), "pool", "NonMaxSuppression")},
		{Name: "onnx/wrong-arity", Want: compiler.ErrMalformed, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Nodes[2].In = m.Nodes[2].In[:1] // MatMul of one operand
		}), "classify", "inputs")},
		{Name: "onnx/nan-weight", Want: compiler.ErrNonFinite, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[0].F32[9] = float32(math.NaN())
		}), "emb")},
		{Name: "onnx/inf-weight", Want: compiler.ErrNonFinite, Build: onnxFile(onnxWith(func(m *onnxModel) {
			m.Initializers[1].F32[3] = float32(math.Inf(-1))
		}), "cls")},
	}
}

// appendBytesHeader appends a length-delimited field's tag and a length
// prefix of n, without the n bytes.
func appendBytesHeader(b []byte, num int, n uint64) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	return binary.AppendUvarint(b, n)
}

// hfDir writes the tiny HF model, its tensors changed by edit (which may
// be nil) and its safetensors bytes by mangle (which may be nil), and
// makes its modelInput.
func hfDir(edit func([]stTensor) []stTensor, mangle func([]byte) []byte, mentions ...string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		model := filepath.Join(dir, "model")
		tensors, err := tinyHFTensors(tinyHFConfig())
		if err != nil {
			return Input{}, err
		}
		if edit != nil {
			tensors = edit(tensors)
		}
		if err := writeTinyHF(model, tinyHFConfig(), tensors); err != nil {
			return Input{}, err
		}
		st := filepath.Join(model, hf.SafetensorsFile)
		if mangle != nil {
			data := mangle(encodeSafetensors(tensors))
			if _, err := writeFile(model, hf.SafetensorsFile, data); err != nil {
				return Input{}, err
			}
		}
		in, err := modelInput(dir, model, mentions...)
		if err != nil {
			return Input{}, err
		}
		in.Mentions[0] = st // the error names the file, not the directory
		return in, nil
	}
}

// tensorNamed returns the index of the tensor whose name ends in suffix.
func tensorNamed(ts []stTensor, suffix string) int {
	return slices.IndexFunc(ts, func(t stTensor) bool { return strings.HasSuffix(t.Name, suffix) })
}

// setF32 overwrites element i of an F32 tensor.
func setF32(t stTensor, i int, v float32) stTensor {
	t.Data = slices.Clone(t.Data)
	binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(v))
	return t
}

const (
	wordEmbeddings = "word_embeddings.weight"
	classifierW    = "classifier.weight"
)

func safetensorsCases() []Case {
	header := func(n uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b, n)
			return b
		}
	}
	return []Case{
		{Name: "safetensors/shorter-than-length-prefix", Want: compiler.ErrTruncated,
			Build: hfDir(nil, func(b []byte) []byte { return b[:5] })},
		{Name: "safetensors/truncated", Want: compiler.ErrTruncated,
			Build: hfDir(nil, func(b []byte) []byte { return b[:len(b)-100] }, "truncated")},
		{Name: "safetensors/oversized-header", Want: compiler.ErrMalformed, Build: hfDir(nil, header(1<<40), "header length")},
		{Name: "safetensors/header-past-end", Want: compiler.ErrTruncated,
			Build: hfDir(nil, func(b []byte) []byte { return header(uint64(len(b)))(b) })},
		{Name: "safetensors/garbled-header", Want: compiler.ErrMalformed, Build: hfDir(nil, func(b []byte) []byte {
			copy(b[8+20:], "\x00\xff garbage ]]}}")
			return b
		})},
		{Name: "safetensors/wrong-magic", Want: compiler.ErrMalformed, Build: hfDir(nil, func([]byte) []byte {
			return tinyONNX().marshal() // an ONNX file saved as model.safetensors
		})},
		{Name: "safetensors/dtype-mismatch", Want: compiler.ErrDTypeMismatch, Build: hfDir(func(ts []stTensor) []stTensor {
			ts[tensorNamed(ts, classifierW)].DType = "I32"
			return ts
		}, nil, classifierW, "I32")},
		{Name: "safetensors/missing-tensor", Want: compiler.ErrMissingTensor, Build: hfDir(func(ts []stTensor) []stTensor {
			return slices.Delete(ts, tensorNamed(ts, classifierW), tensorNamed(ts, classifierW)+1)
		}, nil, classifierW)},
		{Name: "safetensors/duplicate-tensor", Want: compiler.ErrDuplicate, Build: hfDir(func(ts []stTensor) []stTensor {
			return append(ts, ts[tensorNamed(ts, classifierW)])
		}, nil, classifierW)},
		{Name: "safetensors/shape-vs-config", Want: compiler.ErrShapeMismatch, Build: hfDir(func(ts []stTensor) []stTensor {
			i := tensorNamed(ts, wordEmbeddings)
			ts[i].Shape = []int64{ts[i].Shape[1], ts[i].Shape[0]} // [dim, vocab] for [vocab, dim]
			return ts
		}, nil, wordEmbeddings, "config.json")},
		{Name: "safetensors/nan-weight", Want: compiler.ErrNonFinite, Build: hfDir(func(ts []stTensor) []stTensor {
			i := tensorNamed(ts, wordEmbeddings)
			ts[i] = setF32(ts[i], 17, float32(math.NaN()))
			return ts
		}, nil, wordEmbeddings, "NaN")},
		{Name: "safetensors/inf-weight", Want: compiler.ErrNonFinite, Build: hfDir(func(ts []stTensor) []stTensor {
			i := tensorNamed(ts, classifierW)
			ts[i] = setF32(ts[i], 1, float32(math.Inf(1)))
			return ts
		}, nil, classifierW, "Inf")},
	}
}

// configDir writes the tiny HF model with config.json replaced by data.
func configDir(data func(good []byte) []byte, mentions ...string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		model := filepath.Join(dir, "model")
		tensors, err := tinyHFTensors(tinyHFConfig())
		if err != nil {
			return Input{}, err
		}
		if err := writeTinyHF(model, tinyHFConfig(), tensors); err != nil {
			return Input{}, err
		}
		good, err := json.MarshalIndent(tinyHFConfig(), "", "  ")
		if err != nil {
			return Input{}, err
		}
		path, err := writeFile(model, hf.ConfigFile, data(good))
		if err != nil {
			return Input{}, err
		}
		in, err := modelInput(dir, model, mentions...)
		if err != nil {
			return Input{}, err
		}
		in.Mentions[0] = path
		return in, nil
	}
}

// configWith is the tiny config.json with key set to v.
func configWith(key string, v any) func([]byte) []byte {
	return func([]byte) []byte {
		c := tinyHFConfig()
		c[key] = v
		data, err := json.Marshal(c)
		if err != nil {
			panic(err) // cannot happen: plain values
		}
		return data
	}
}

func configCases() []Case {
	return []Case{
		{Name: "config.json/truncated", Want: compiler.ErrMalformed, Build: configDir(func(b []byte) []byte { return b[:len(b)/2] }, "JSON")},
		{Name: "config.json/garbled", Want: compiler.ErrMalformed, Build: configDir(func(b []byte) []byte {
			return append([]byte("\x89PNG\r\n\x1a\n"), b...)
		})},
		{Name: "config.json/wrong-type", Want: compiler.ErrMalformed, Build: configDir(configWith("dim", "eight"), "dim")},
		{Name: "config.json/unknown-model", Want: compiler.ErrUnknownModel, Build: configDir(configWith("model_type", "gpt9"), "gpt9")},
		{Name: "config.json/oversized-vocab", Want: compiler.ErrMalformed, Build: configDir(configWith("vocab_size", 1<<40), "vocab_size")},
	}
}

// tokenizerFile writes the tiny ONNX model and a broken tokenizer file
// beside it; loaded by load, run by `sqc run --fp32 --texts --vocab`.
func tokenizerFile(name string, data []byte, load func(path string) error, mentions ...string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		model, err := writeFile(dir, "model.onnx", tinyONNX().marshal())
		if err != nil {
			return Input{}, err
		}
		texts, err := writeFile(dir, "texts.txt", []byte("a fine film\n"))
		if err != nil {
			return Input{}, err
		}
		path, err := writeFile(dir, name, data)
		if err != nil {
			return Input{}, err
		}
		return Input{
			Load:     func() error { return load(path) },
			Commands: [][]string{{"run", "--fp32", "--model", model, "--texts", texts, "--vocab", path}},
			Mentions: append([]string{path}, mentions...),
		}, nil
	}
}

func loadVocab(path string) error {
	_, err := tokenizer.FromVocabFile(path, tokenizer.Options{Lowercase: true})
	return err
}

func loadTokenizerJSON(path string) error {
	_, err := tokenizer.FromTokenizerJSON(path)
	return err
}

func tokenizerCases() []Case {
	vocab := []byte(strings.Join(tinyVocab, "\n") + "\n")
	tj := tinyTokenizerJSON()
	var bpe map[string]any
	if err := json.Unmarshal(tj, &bpe); err != nil {
		panic(err) // cannot happen: tinyTokenizerJSON is valid JSON
	}
	bpe["model"].(map[string]any)["type"] = "CharBPE" // not a tokenizers model type
	bpeJSON, _ := json.Marshal(bpe)
	return []Case{
		{Name: "vocab.txt/empty", Want: tokenizer.ErrEmptyVocab, Build: tokenizerFile("vocab.txt", nil, loadVocab)},
		// Cut after [CLS]: [SEP] and [MASK] are gone.
		{Name: "vocab.txt/truncated", Want: tokenizer.ErrMissingToken, Build: tokenizerFile("vocab.txt", vocab[:bytes.Index(vocab, []byte("[SEP]"))], loadVocab, "[SEP]")},
		{Name: "vocab.txt/garbled", Want: tokenizer.ErrMalformed, Build: tokenizerFile("vocab.txt", append(slices.Clone(vocab[:40]), "\xff\xfe\x00garbage\n"...), loadVocab, "line")},
		{Name: "tokenizer.json/truncated", Want: tokenizer.ErrMalformed, Build: tokenizerFile("tokenizer.json", tj[:len(tj)/2], loadTokenizerJSON)},
		{Name: "tokenizer.json/garbled", Want: tokenizer.ErrMalformed, Build: tokenizerFile("tokenizer.json", append([]byte("\x00\x01"), tj...), loadTokenizerJSON)},
		{Name: "tokenizer.json/unsupported-model", Want: tokenizer.ErrUnsupported, Build: tokenizerFile("tokenizer.json", bpeJSON, loadTokenizerJSON, "BPE")},
	}
}

// idsFile writes the tiny HF model and an --ids file holding lines, run
// by the FP32 interpreter and the INT8 engine; "MODEL" and "IDS" in
// mentions stand for their paths.
func idsFile(lines [][]byte, mentions ...string) func(dir string) (Input, error) {
	return idsFileCLI(lines, mentions, nil)
}

// idsFileCLI is idsFile with the CommandMentions the CLI's line must
// contain instead of mentions (in which MODEL and IDS are replaced too).
func idsFileCLI(lines [][]byte, mentions, commandMentions []string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		model := filepath.Join(dir, "model")
		tensors, err := tinyHFTensors(tinyHFConfig())
		if err != nil {
			return Input{}, err
		}
		if err := writeTinyHF(model, tinyHFConfig(), tensors); err != nil {
			return Input{}, err
		}
		ids, err := writeFile(dir, "ids.jsonl", bytes.Join(lines, nil))
		if err != nil {
			return Input{}, err
		}
		calib, err := writeFile(dir, "calib.jsonl", idsLine(TinyIDs, nil, -1))
		if err != nil {
			return Input{}, err
		}
		return Input{
			Load: func() error { return RunIDs(model, ids) },
			Commands: [][]string{
				{"run", "--fp32", "--model", model, "--ids", ids},
				{"run", "--int8", "--model", model, "--ids", ids, "--calib", calib},
			},
			Mentions:        replaceAll(mentions, "MODEL", model, "IDS", ids),
			CommandMentions: replaceAll(commandMentions, "MODEL", model, "IDS", ids),
		}, nil
	}
}

// replaceAll applies strings.NewReplacer(oldnew...) to each of list.
func replaceAll(list []string, oldnew ...string) []string {
	r := strings.NewReplacer(oldnew...)
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = r.Replace(s)
	}
	return out
}

// emptyCalibration writes the tiny HF model, a labelled data file and an
// empty calibration file, for the INT8 commands given, in which MODEL,
// DATA, CALIB and OUT stand for the paths.
func emptyCalibration(commands ...[]string) func(dir string) (Input, error) {
	return func(dir string) (Input, error) {
		model := filepath.Join(dir, "model")
		tensors, err := tinyHFTensors(tinyHFConfig())
		if err != nil {
			return Input{}, err
		}
		if err := writeTinyHF(model, tinyHFConfig(), tensors); err != nil {
			return Input{}, err
		}
		data, err := writeFile(dir, "data.jsonl", idsLine(TinyIDs, nil, 1))
		if err != nil {
			return Input{}, err
		}
		calib, err := writeFile(dir, "empty.txt", nil)
		if err != nil {
			return Input{}, err
		}
		var cli [][]string
		for _, c := range commands {
			cli = append(cli, replaceAll(c, "MODEL", model, "DATA", data, "CALIB", calib, "OUT", filepath.Join(dir, "out")))
		}
		return Input{
			Load: func() error {
				_, err := dataio.ReadTexts(calib)
				return err
			},
			Commands: cli,
			Mentions: []string{calib},
		}, nil
	}
}

func requestCases() []Case {
	long := make([]int64, TinyMaxPositions+4)
	for i := range long {
		long[i] = 5
	}
	return []Case{
		{Name: "ids/token-id-past-vocabulary", Want: compiler.ErrShapeMismatch, Build: idsFileCLI([][]byte{
			idsLine(TinyIDs, nil, -1), idsLine([]int64{2, int64(TinyVocabSize), 3}, nil, -1),
		}, []string{"MODEL", "embeddings", fmt.Sprint(TinyVocabSize)},
			[]string{"IDS", "line 2", "input_ids[1] is " + fmt.Sprint(TinyVocabSize), "word_embeddings"})},
		{Name: "ids/negative-token-id", Want: compiler.ErrInvalidRequest, Build: idsFile([][]byte{
			idsLine([]int64{2, -1, 3}, nil, -1),
		}, "IDS", "line 1", "-1")},
		{Name: "ids/mask-length", Want: compiler.ErrShapeMismatch, Build: idsFile([][]byte{
			idsLine(TinyIDs, []int64{1, 1, 1}, -1),
		}, "IDS", "line 1", "attention_mask")},
		{Name: "ids/garbled", Want: compiler.ErrMalformed, Build: idsFile([][]byte{[]byte("{\"input_ids\": [2, 5,,]}\n")}, "IDS", "line 1")},
		{Name: "ids/empty", Want: compiler.ErrBadInput, Build: idsFile(nil, "IDS", "no inputs")},
		{Name: "ids/longer-than-model", Want: compiler.ErrShapeMismatch, Build: idsFileCLI([][]byte{
			idsLine(TinyIDs, nil, -1), idsLine(TinyIDs, nil, -1), idsLine(long, nil, -1),
		}, []string{"MODEL", "position", fmt.Sprint(TinyMaxPositions)},
			[]string{"IDS", "line 3", fmt.Sprint(len(long)) + " tokens", fmt.Sprint(TinyMaxPositions) + " positions"})},
		{Name: "calibration/empty", Want: compiler.ErrBadInput, Build: emptyCalibration(
			[]string{"run", "--int8", "--model", "MODEL", "--ids", "DATA", "--calib", "CALIB"},
			[]string{"eval", "--model", "MODEL", "--data", "DATA", "--calib", "CALIB"},
			[]string{"compile", "--model", "MODEL", "--out", "OUT", "--calib", "CALIB"},
		)},
	}
}
