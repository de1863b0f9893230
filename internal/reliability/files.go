package reliability

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/hf"
)

// Small valid models and side files, built in Go, which the bad-input
// cases copy and break one way each.

// tinyVocab is the vocabulary of both tiny models: BERT's special tokens
// at BERT's uncased ids would need 30k lines, so the ids are small and
// the tokenizer finds the specials by name.
var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"a", "fine", "film", "dull", "plot", "the", "is", "and", "it", "not", "good",
	"bad", "movie", "story", "##s", "##ly", "great", "long", "short", "very", "so",
	"of", "to", "was", "one", ".", ",",
}

// TinyVocabSize is the number of token ids of the tiny models.
var TinyVocabSize = len(tinyVocab)

// tinyHidden is the width of the tiny ONNX model's embedding.
const tinyHidden = 4

// tinyONNX is a valid opset-14 model over input_ids:
//
//	h      = Gather(emb, input_ids)              f32[batch, sequence, 4]
//	pooled = ReduceMean(h, axes=[1], keepdims=0) f32[batch, 4]
//	logits = MatMul(pooled, cls)                 f32[batch, 2]
func tinyONNX() onnxModel {
	emb := make([]float32, TinyVocabSize*tinyHidden)
	for i := range emb {
		emb[i] = float32(i%7-3) / 8
	}
	return onnxModel{
		Opset: 14,
		Nodes: []onnxNode{
			{Name: "embed", Op: "Gather", In: []string{"emb", "input_ids"}, Out: []string{"h"}},
			{Name: "pool", Op: "ReduceMean", In: []string{"h"}, Out: []string{"pooled"},
				Attrs: []onnxAttr{{Name: "axes", Ints: []int64{1}}, {Name: "keepdims", Int: intPtr(0)}}},
			{Name: "classify", Op: "MatMul", In: []string{"pooled", "cls"}, Out: []string{"logits"}},
		},
		Initializers: []onnxTensor{
			{Name: "emb", DType: onnxFloat, Dims: []int64{int64(TinyVocabSize), tinyHidden}, F32: emb},
			{Name: "cls", DType: onnxFloat, Dims: []int64{tinyHidden, 2}, F32: []float32{1, -1, 0.5, -0.5, 0.25, 0.75, -1, 1}},
		},
		Inputs:  []onnxValue{{Name: "input_ids", DType: onnxInt64, Dims: []any{"batch", "sequence"}}},
		Outputs: []onnxValue{{Name: "logits", DType: onnxFloat, Dims: []any{"batch", 2}}},
	}
}

// tinyHFConfig is the config.json of a 1-layer, 8-wide DistilBERT
// sentiment classifier over tinyVocab, at most 16 tokens long.
func tinyHFConfig() map[string]any {
	return map[string]any{
		"model_type":              "distilbert",
		"architectures":           []string{"DistilBertForSequenceClassification"},
		"vocab_size":              TinyVocabSize,
		"dim":                     8,
		"n_layers":                1,
		"n_heads":                 2,
		"hidden_dim":              16,
		"max_position_embeddings": TinyMaxPositions,
		"activation":              "gelu",
		"id2label":                map[string]string{"0": "negative", "1": "positive"},
	}
}

// TinyMaxPositions is the longest sequence the tiny HF model embeds.
const TinyMaxPositions = 16

// stTensor is one tensor of a safetensors file.
type stTensor struct {
	Name  string
	DType string // "F32", "I32", ...
	Shape []int64
	Data  []byte
}

// f32Tensor stores t's values as F32.
func f32Tensor(name string, t *compiler.Tensor) stTensor {
	data := make([]byte, 4*len(t.F32))
	for i, v := range t.F32 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return stTensor{Name: name, DType: "F32", Shape: t.Shape, Data: data}
}

// recorder is an hf.WeightSource that keeps what hf.Build asks for.
type recorder struct {
	inner hf.WeightSource
	got   []stTensor
}

func (r *recorder) Weight(name string, shape []int64) (*compiler.Tensor, error) {
	t, err := r.inner.Weight(name, shape)
	if err == nil {
		r.got = append(r.got, f32Tensor(name, t))
	}
	return t, err
}

// tinyHFTensors are the tensors hf.Build reads for config, with random
// values, sorted by name: the parameter list comes from the frontend
// itself, so it cannot drift from what the loader expects.
func tinyHFTensors(config map[string]any) ([]stTensor, error) {
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	cfg, err := hf.ParseConfig(raw, "config.json")
	if err != nil {
		return nil, err
	}
	rec := &recorder{inner: hf.RandomWeights(11)}
	if _, err := hf.Build(cfg, rec); err != nil {
		return nil, err
	}
	sort.Slice(rec.got, func(i, j int) bool { return rec.got[i].Name < rec.got[j].Name })
	return rec.got, nil
}

// encodeSafetensors lays tensors out in order: the 8-byte header length,
// the JSON header (padded with spaces to 8 bytes, as the Rust writer
// does), the data. The header is written by hand so that a test can give
// two tensors one name.
func encodeSafetensors(tensors []stTensor) []byte {
	var h strings.Builder
	h.WriteString(`{"__metadata__":{"format":"pt"}`)
	var off int
	for _, t := range tensors {
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		fmt.Fprintf(&h, `,%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.Name, t.DType, shape, off, off+len(t.Data))
		off += len(t.Data)
	}
	h.WriteString("}")
	header := []byte(h.String())
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	for _, t := range tensors {
		out = append(out, t.Data...)
	}
	return out
}

// tinyTokenizerJSON is a valid WordPiece tokenizer.json over tinyVocab.
func tinyTokenizerJSON() []byte {
	vocab := map[string]int{}
	for i, tok := range tinyVocab {
		vocab[tok] = i
	}
	f := map[string]any{
		"version":       "1.0",
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{
			"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2},
		},
		"model": map[string]any{
			"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": vocab,
		},
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(err) // cannot happen: plain maps, slices and strings
	}
	return data
}

// TinyIDs are a valid pre-tokenized input for both tiny models: [CLS] a
// fine film [SEP].
var TinyIDs = []int64{2, 5, 6, 7, 3}

// idsLine is one line of a --ids file.
func idsLine(ids, mask []int64, label int) []byte {
	obj := map[string]any{"input_ids": ids}
	if mask != nil {
		obj["attention_mask"] = mask
	}
	if label >= 0 {
		obj["label"] = label
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err) // cannot happen: int64 slices
	}
	return append(data, '\n')
}

// writeFile writes data to dir/name, making directories, and returns the
// path.
func writeFile(dir, name string, data []byte) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, data, 0o644)
}

// writeTinyHF writes a tiny HF model directory (config.json,
// model.safetensors, vocab.txt) with config and tensors as given.
func writeTinyHF(dir string, config map[string]any, tensors []stTensor) error {
	cfg, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	if _, err := writeFile(dir, hf.ConfigFile, cfg); err != nil {
		return err
	}
	if _, err := writeFile(dir, hf.SafetensorsFile, encodeSafetensors(tensors)); err != nil {
		return err
	}
	_, err = writeFile(dir, "vocab.txt", []byte(strings.Join(tinyVocab, "\n")+"\n"))
	return err
}
