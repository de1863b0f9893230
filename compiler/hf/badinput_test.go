package hf

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"

	"github.com/sqc-dev/sqc/compiler"
)

// TestBadInput breaks a valid tiny checkpoint in each way the frontend must
// report: one error, Is(ErrBadInput) and Is(the cause), naming the file
// and what is wrong.
func TestBadInput(t *testing.T) {
	const queryKey = "bert.encoder.layer.0.attention.self.key.weight"
	type files struct{ cfg, st []byte }
	cases := []struct {
		name   string
		arch   string
		break_ func(t *testing.T, m *tinyModel) files
		cause  error
		file   string   // base name the message must name
		want   []string // substrings of the message
	}{
		{
			name: "safetensors cut in the tensor data",
			break_: func(t *testing.T, m *tinyModel) files {
				st := m.safetensorsBytes(t)
				return files{m.configJSON(t), st[:len(st)-100]}
			},
			cause: compiler.ErrTruncated, file: SafetensorsFile, want: []string{"tensor data takes", "file holds"},
		},
		{
			name: "safetensors cut in the header",
			break_: func(t *testing.T, m *tinyModel) files {
				return files{m.configJSON(t), m.safetensorsBytes(t)[:200]}
			},
			cause: compiler.ErrTruncated, file: SafetensorsFile, want: []string{"header claims"},
		},
		{
			name: "safetensors shorter than the length prefix",
			break_: func(t *testing.T, m *tinyModel) files {
				return files{m.configJSON(t), []byte{1, 2, 3}}
			},
			cause: compiler.ErrTruncated, file: SafetensorsFile, want: []string{"3 bytes"},
		},
		{
			name: "header length larger than the file",
			break_: func(t *testing.T, m *tinyModel) files {
				st := m.safetensorsBytes(t)
				binary.LittleEndian.PutUint64(st, uint64(len(st))*3)
				return files{m.configJSON(t), st}
			},
			cause: compiler.ErrTruncated, file: SafetensorsFile, want: []string{"header claims"},
		},
		{
			name: "absurd header length",
			break_: func(t *testing.T, m *tinyModel) files {
				st := m.safetensorsBytes(t)
				binary.LittleEndian.PutUint64(st, 1<<62)
				return files{m.configJSON(t), st}
			},
			cause: compiler.ErrMalformed, file: SafetensorsFile, want: []string{"header length"},
		},
		{
			name: "header not JSON",
			break_: func(t *testing.T, m *tinyModel) files {
				st := m.safetensorsBytes(t)
				st[8] = '['
				return files{m.configJSON(t), st}
			},
			cause: compiler.ErrMalformed, file: SafetensorsFile, want: []string{"header"},
		},
		{
			name: "trailing bytes after the data",
			break_: func(t *testing.T, m *tinyModel) files {
				return files{m.configJSON(t), append(m.safetensorsBytes(t), 0, 0, 0, 0)}
			},
			cause: compiler.ErrMalformed, file: SafetensorsFile,
		},
		{
			name: "unknown model_type",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["model_type"] = "gpt2"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{`"gpt2"`, "supported", "bert (", "distilbert ("},
		},
		{
			name: "model_type absent",
			break_: func(t *testing.T, m *tinyModel) files {
				delete(m.config, "model_type")
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"model_type", "absent"},
		},
		{
			name: "unsupported architecture",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["architectures"] = []string{"BertForPreTraining"}
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"BertForPreTraining", ArchBertForSequence, ArchBertForMaskedLM},
		},
		{
			name: "masked language model without its head",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["architectures"] = []string{ArchBertForMaskedLM}
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMissingTensor, file: "model.safetensors", want: []string{"cls.predictions.transform.dense.weight", ArchBertForMaskedLM, "architectures to BertModel"},
		},
		{
			name: "missing weight",
			break_: func(t *testing.T, m *tinyModel) files {
				delete(m.tensors, queryKey)
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMissingTensor, file: SafetensorsFile, want: []string{queryKey},
		},
		{
			name: "weight shape disagrees with config",
			break_: func(t *testing.T, m *tinyModel) files {
				m.tensors[queryKey] = compiler.NewTensor(compiler.Float32, 8, 4)
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrShapeMismatch, file: SafetensorsFile, want: []string{queryKey, "got [8 4]", "want [8 8]"},
		},
		{
			name: "config disagrees with weights",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["vocab_size"] = 21
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrShapeMismatch, file: SafetensorsFile, want: []string{"bert.embeddings.word_embeddings.weight", "got [20 8]", "want [21 8]"},
		},
		{
			name: "integer weights",
			break_: func(t *testing.T, m *tinyModel) files {
				views := map[string]safetensors.TensorView{}
				for name, w := range m.tensors {
					views[name] = f32View(t, w)
				}
				views[queryKey] = view(t, safetensors.I32, []int64{8, 8}, make([]byte, 4*64))
				st, err := safetensors.Serialize(views, nil)
				if err != nil {
					t.Fatal(err)
				}
				return files{m.configJSON(t), st}
			},
			cause: compiler.ErrDTypeMismatch, file: SafetensorsFile, want: []string{queryKey, "I32", "F32"},
		},
		{
			name: "NaN in a weight",
			break_: func(t *testing.T, m *tinyModel) files {
				m.tensors["classifier.bias"].F32[1] = float32(math.NaN())
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrNonFinite, file: SafetensorsFile, want: []string{"classifier.bias", "element 1", "NaN"},
		},
		{
			name: "Inf in a weight",
			arch: ArchDistilBertForSequence,
			break_: func(t *testing.T, m *tinyModel) files {
				m.tensors["distilbert.transformer.layer.1.ffn.lin2.weight"].F32[5] = float32(math.Inf(-1))
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrNonFinite, file: SafetensorsFile, want: []string{"distilbert.transformer.layer.1.ffn.lin2.weight", "-Inf"},
		},
		{
			name: "config.json not JSON",
			break_: func(t *testing.T, m *tinyModel) files {
				cfg := m.configJSON(t)
				return files{append(cfg[:len(cfg)-2:len(cfg)-2], ",\n}"...), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMalformed, file: ConfigFile, want: []string{"invalid JSON at line"},
		},
		{
			name: "config.json value of the wrong type",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["hidden_size"] = "eight"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMalformed, file: ConfigFile, want: []string{"hidden_size", "string"},
		},
		{
			name: "hidden size not a multiple of heads",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["num_attention_heads"] = 3
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMalformed, file: ConfigFile, want: []string{"num_attention_heads", "not a multiple"},
		},
		{
			name: "negative size",
			arch: ArchDistilBertModel,
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["n_layers"] = -1
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMalformed, file: ConfigFile, want: []string{"n_layers", "-1"},
		},
		{
			name: "unsupported activation",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["hidden_act"] = "mish"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"mish", "gelu", "silu"},
		},
		{
			name: "id2label with a gap",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["id2label"] = map[string]string{"0": "a", "2": "b"}
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrMalformed, file: ConfigFile, want: []string{"id2label", `"2"`},
		},
		{
			name: "relative position embeddings",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["position_embedding_type"] = "relative_key"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"relative_key", "absolute"},
		},
		{
			name: "ALiBi on a BERT architecture",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["position_embedding_type"] = "alibi"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"position_embedding_type", "alibi", ArchJinaBertModel},
		},
		{
			name: "JinaBERT without ALiBi",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["architectures"] = []string{ArchJinaBertForSequence}
				m.config["feed_forward_type"] = "geglu"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"position_embedding_type", `"absolute"`, `"alibi" only`},
		},
		{
			name: "JinaBERT's ungated feed-forward",
			break_: func(t *testing.T, m *tinyModel) files {
				m.config["architectures"] = []string{ArchJinaBertForSequence}
				m.config["position_embedding_type"] = "alibi"
				return files{m.configJSON(t), m.safetensorsBytes(t)}
			},
			cause: compiler.ErrUnknownModel, file: ConfigFile, want: []string{"feed_forward_type", `"original"`, "geglu, reglu"},
		},
		{
			name: "no config.json",
			break_: func(t *testing.T, m *tinyModel) files {
				return files{nil, m.safetensorsBytes(t)}
			},
			cause: fs.ErrNotExist, file: ConfigFile,
		},
		{
			name: "no model.safetensors",
			break_: func(t *testing.T, m *tinyModel) files {
				return files{m.configJSON(t), nil}
			},
			cause: compiler.ErrMissingTensor, file: SafetensorsFile, want: []string{"no model.safetensors"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arch := tc.arch
			if arch == "" {
				arch = ArchBertForSequence
			}
			f := tc.break_(t, newTinyModel(t, arch, false))
			dir := writeModel(t, f.cfg, f.st)
			g, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded (%d nodes); want an error", len(g.Nodes))
			}
			msg := err.Error()
			t.Log(msg)
			if !errors.Is(err, compiler.ErrBadInput) {
				t.Errorf("error %q is not ErrBadInput", msg)
			}
			if !errors.Is(err, tc.cause) {
				t.Errorf("error %q is not %v", msg, tc.cause)
			}
			if !strings.Contains(msg, filepath.Join(dir, tc.file)) {
				t.Errorf("error %q does not name %s", msg, tc.file)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestMissingWeightsNamesOtherFormat checks the hint for a folder that
// holds another framework's checkpoint (TensorFlow's) and none sqc reads.
func TestMissingWeightsNamesOtherFormat(t *testing.T) {
	m := newTinyModel(t, ArchBertModel, false)
	dir := writeModel(t, m.configJSON(t), nil)
	if err := os.WriteFile(filepath.Join(dir, "tf_model.h5"), []byte("hdf5"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if !errors.Is(err, compiler.ErrMissingTensor) || !strings.Contains(err.Error(), "tf_model.h5") || !strings.Contains(err.Error(), TorchFile) {
		t.Fatalf("got %v; want a missing-weights error naming tf_model.h5 and what sqc reads", err)
	}
}
