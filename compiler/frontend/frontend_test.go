package frontend

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// onnxRepo lays a tiny model out as optimum and transformers.js
// repositories are: config.json and the tokenizer at the top, the exports
// in onnx/. It returns the repository's directory.
func onnxRepo(t *testing.T) string {
	t.Helper()
	tiny := testmodels.TinyDir(t, testmodels.TinyBertCls)
	model, err := os.ReadFile(filepath.Join(tiny, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for name, data := range map[string][]byte{
		"vocab.txt":                 []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n"),
		"config.json":               []byte("{}"),
		"onnx/model.onnx":           model,
		"onnx/model_quantized.onnx": model,
	} {
		path := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// TestONNXRepository: a repository of ONNX exports loads its float32
// export, onnx/model.onnx, and the side files of any of its exports are
// the repository's; an onnx/ folder with a tokenizer of its own keeps it,
// and a directory with no model says what it looked for.
func TestONNXRepository(t *testing.T) {
	repo := onnxRepo(t)
	g, err := Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	if src := g.Meta["source"]; !strings.HasSuffix(src, filepath.Join("onnx", "model.onnx")) {
		t.Errorf("loaded %q, want onnx/model.onnx", src)
	}
	for _, path := range []string{repo, filepath.Join(repo, "onnx", "model_quantized.onnx")} {
		if d := Dir(path); d != repo {
			t.Errorf("Dir(%s) = %s, want the repository %s", path, d, repo)
		}
	}
	own := filepath.Join(repo, "onnx", "vocab.txt")
	if err := os.WriteFile(own, []byte("[PAD]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, want := Dir(filepath.Join(repo, "onnx", "model.onnx")), filepath.Join(repo, "onnx"); d != want {
		t.Errorf("Dir with a tokenizer in onnx/ = %s, want %s", d, want)
	}
	plain := filepath.Join(t.TempDir(), "onnx", "model.onnx")
	if d := Dir(plain); d != filepath.Dir(plain) {
		t.Errorf("Dir(%s) = %s, want its own directory (no tokenizer above it)", plain, d)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "onnx/model.onnx") {
		t.Errorf("empty directory: error %v, want it to name onnx/model.onnx", err)
	}
	// Without the float32 export, the error lists the variants to choose.
	if err := os.Remove(filepath.Join(repo, "onnx", "model.onnx")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(repo); err == nil || !strings.Contains(err.Error(), "its onnx/ holds model_quantized.onnx: give one of them") {
		t.Errorf("repository without onnx/model.onnx: error %v, want it to list model_quantized.onnx", err)
	}
}

// TestONNXConfigLabels: an ONNX export's class names come from the
// config.json of its side files, as a HuggingFace directory's do, when
// they are one per logit; a config of another label count, or none,
// names none.
func TestONNXConfigLabels(t *testing.T) {
	for _, c := range []struct {
		config string
		want   []string
	}{
		{`{"id2label": {"1": "positive", "0": "negative"}}`, []string{"negative", "positive"}},
		{`{"id2label": {"0": "a", "1": "b", "2": "c"}}`, nil},
		{`{"id2label": {"0": "a", "2": "c"}}`, nil},
		{`{}`, nil},
		{`not json`, nil},
	} {
		repo := onnxRepo(t)
		if err := os.WriteFile(filepath.Join(repo, "config.json"), []byte(c.config), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{repo, filepath.Join(repo, "onnx", "model_quantized.onnx")} {
			g, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := 0; ; i++ {
				l, ok := g.Meta["id2label."+strconv.Itoa(i)]
				if !ok {
					break
				}
				got = append(got, l)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("config %s, %s: labels %q, want %q", c.config, path, got, c.want)
			}
		}
	}
}

// TestMaskedLMDetected: a masked language model read from its folder or
// its ONNX export (whose config.json beside it names the architecture)
// is one (compiler.IsMaskedLM: served as a sparse encoder); a token
// classifier, whose logits have the same rank, is not, nor is the masked
// language model's export when its config.json is gone or names another
// vocabulary size.
func TestMaskedLMDetected(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{testmodels.TinyBertMLM, true}, {testmodels.TinyXLMRMLM, true}, {testmodels.TinyDistilBertMLM, true},
		{testmodels.TinyModernBertMLM, true}, {testmodels.TinyBertTok, false}, {testmodels.TinyBertBase, false},
	} {
		dir := testmodels.TinyDir(t, c.name)
		for _, path := range []string{dir, filepath.Join(dir, "model.onnx")} {
			g, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := compiler.IsMaskedLM(g); got != c.want {
				t.Errorf("%s: IsMaskedLM = %v, want %v (Meta %v)", path, got, c.want, g.Meta)
			}
		}
	}
	src := testmodels.TinyDir(t, testmodels.TinyBertMLM)
	model, err := os.ReadFile(filepath.Join(src, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, config := range []string{"", `{"architectures": ["BertForMaskedLM"], "vocab_size": 30522}`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644); err != nil {
			t.Fatal(err)
		}
		if config != "" {
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		g, err := Load(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		if compiler.IsMaskedLM(g) {
			t.Errorf("config.json %q: IsMaskedLM, want not", config)
		}
	}
}
