package testmodels

import (
	"os"
	"path/filepath"
	"testing"
)

// SparseEncoderModules is a sentence-transformers SparseEncoder folder's
// modules.json as sentence-transformers 5 writes it: the masked language
// model at the top, then SpladePooling.
const SparseEncoderModules = `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.sparse_encoder.models.MLMTransformer"},
{"idx":1,"name":"1","path":"1_SpladePooling","type":"sentence_transformers.sparse_encoder.models.SpladePooling"}]`

// SparseEncoderFolder lays out a SparseEncoder folder in a temporary
// directory around the tiny model name (its config.json and
// model.safetensors at the top, modules.json) with files (path relative
// to the folder, slash-separated -> contents) added or replacing those;
// "1_SpladePooling/config.json" is the pooling's settings.
func SparseEncoderFolder(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	src := TinyDir(t, name)
	all := map[string]string{"modules.json": SparseEncoderModules}
	for _, f := range []string{"config.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		all[f] = string(data)
	}
	for f, s := range files {
		all[f] = s
	}
	dir := t.TempDir()
	for f, s := range all {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
