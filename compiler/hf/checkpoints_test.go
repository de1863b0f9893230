package hf

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// checkpointDir is a folder of testdata/checkpoints
// (internal/testmodels/gen/make_checkpoints.py): the tiny deberta-v3-base's
// weights in another layout.
func checkpointDir(t testing.TB, name string) string {
	t.Helper()
	root, err := testmodels.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "internal", "testmodels", "testdata", "checkpoints", name)
}

// sameInitializers fails unless a and b hold the same initializers, bit
// for bit.
func sameInitializers(t *testing.T, what string, a, b *compiler.Graph) {
	t.Helper()
	if len(a.Initializers) != len(b.Initializers) {
		t.Fatalf("%s: %d initializers, want %d", what, len(b.Initializers), len(a.Initializers))
	}
	for name, x := range a.Initializers {
		y := b.Initializers[name]
		if y == nil || !slices.Equal(x.Shape, y.Shape) || x.DType != y.DType || len(x.F32) != len(y.F32) {
			t.Fatalf("%s: initializer %s differs in form", what, name)
		}
		for i := range x.F32 {
			if math.Float32bits(x.F32[i]) != math.Float32bits(y.F32[i]) {
				t.Fatalf("%s: %s[%d] = %g, want %g", what, name, i, y.F32[i], x.F32[i])
			}
		}
	}
}

// TestCheckpointLayouts: the folder loads the same graph, weights bit for
// bit, from pytorch_model.bin (torch.save's zip format), from sharded
// safetensors and from sharded torch.save files as from its
// model.safetensors; its float16 pytorch_model.bin as from the same
// values in a float16 model.safetensors.
func TestCheckpointLayouts(t *testing.T) {
	want, err := Load(testmodels.TinyDir(t, testmodels.TinyDeBERTaBase))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"torch-f32", "sharded-st", "sharded-torch"} {
		g, err := Load(checkpointDir(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameInitializers(t, name, want, g)
	}
	f16, err := Load(checkpointDir(t, "st-f16"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(checkpointDir(t, "torch-f16"))
	if err != nil {
		t.Fatal(err)
	}
	sameInitializers(t, "torch-f16", f16, g)
}

// TestTorchCheckpointViews: tensors saved as views of a shared storage
// (transposed, sliced at an offset) read as their own elements in
// row-major order; bfloat16 widens exactly; an int64 tensor is refused as
// a weight, and an absent name is missing, each naming file and tensor.
func TestTorchCheckpointViews(t *testing.T) {
	path := filepath.Join(checkpointDir(t, "views"), TorchFile)
	ck, err := OpenTorchCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := ck.Names(); !slices.Equal(got, []string{"bf16", "ids", "shared", "sliced", "transposed"}) {
		t.Fatalf("names %v", got)
	}
	for _, c := range []struct {
		name  string
		shape []int64
		want  []float32
	}{
		{"transposed", []int64{6, 4}, []float32{0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20, 3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}},
		{"sliced", []int64{2, 3}, []float32{8, 9, 10, 14, 15, 16}},
		{"bf16", []int64{2, 3}, []float32{0, 0.25, 0.5, 0.75, 1, 1.25}},
	} {
		w, err := ck.Weight(c.name, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(w.Shape, c.shape) || !slices.Equal(w.F32, c.want) {
			t.Errorf("%s = %v %v, want %v %v", c.name, w.Shape, w.F32, c.shape, c.want)
		}
	}
	for name, want := range map[string]error{"ids": compiler.ErrDTypeMismatch, "absent": compiler.ErrMissingTensor} {
		_, err := ck.Weight(name, nil)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want %v naming the file and the tensor", name, err, want)
		}
	}
}

// rewriteZip copies the zip at src to a new file, letting edit change
// each record's bytes, and returns its path.
func rewriteZip(t *testing.T, src string, edit func(name string, data []byte) []byte) string {
	t.Helper()
	zr, err := zip.OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(edit(f.Name, data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), TorchFile)
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTorchCheckpointBadInput: checkpoints sqc cannot read are refused
// with an error naming the file and what is wrong, never a panic: the
// format before torch 1.6, a file cut short, a storage record shorter
// than the pickle says, a damaged pickle, a pickle whose string claims
// gigabytes (both checked before anything is allocated for them), a
// pickle of something else than a state dict.
func TestTorchCheckpointBadInput(t *testing.T) {
	views := filepath.Join(checkpointDir(t, "views"), TorchFile)
	data, err := os.ReadFile(views)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), TorchFile)
	if err := os.WriteFile(cut, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"legacy", filepath.Join(checkpointDir(t, "legacy"), TorchFile), "before torch 1.6"},
		{"cut short", cut, "not a zip archive"},
		{"short storage", rewriteZip(t, views, func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "data/0") {
				return b[:len(b)/2]
			}
			return b
		}), "record holds"},
		{"damaged pickle", rewriteZip(t, views, func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "data.pkl") {
				return b[:len(b)/2]
			}
			return b
		}), "data.pkl"},
		{"huge string", rewriteZip(t, views, func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "data.pkl") {
				return []byte("\x80\x02X\x04\x00\x00\xa9abc.") // a 2.8 GB string in a 12-byte pickle
			}
			return b
		}), "bytes of argument"},
		{"not a state dict", rewriteZip(t, views, func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "data.pkl") {
				return []byte("\x80\x02K\x07.") // pickle of the int 7
			}
			return b
		}), "not a state dict"},
	} {
		_, err := OpenTorchCheckpoint(c.path)
		if !errors.Is(err, compiler.ErrBadInput) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a bad-input error naming the file and saying %q", c.name, err, c.want)
		}
	}
}

// TestTorchCheckpointNamesOtherEntries: a state dict entry that is not a
// tensor sqc reads (here an int; a class of a newer torch would be such)
// is named in the error for the parameter asked for.
func TestTorchCheckpointNamesOtherEntries(t *testing.T) {
	path := rewriteZip(t, filepath.Join(checkpointDir(t, "views"), TorchFile), func(name string, b []byte) []byte {
		if strings.HasSuffix(name, "data.pkl") {
			return []byte("\x80\x02}q\x00X\x01\x00\x00\x00aq\x01K\x07s.") // {"a": 7}
		}
		return b
	})
	ck, err := OpenTorchCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ck.Weight("a", nil)
	if !errors.Is(err, compiler.ErrMissingTensor) || !strings.Contains(err.Error(), "entries that are not tensors sqc reads: 1, such as a (int)") {
		t.Errorf("got %v; want a missing tensor naming the entry that is not one", err)
	}
}

// TestShardedBadIndex: an index naming a shard outside its folder, or
// one that is not there, is refused naming the index or the shard.
func TestShardedBadIndex(t *testing.T) {
	src := checkpointDir(t, "sharded-st")
	for name, c := range map[string]struct{ from, to, want string }{
		"outside": {"model-00001-of-00002.safetensors", "../model-00001-of-00002.safetensors", "not a .safetensors or .bin file beside the index"},
		"missing": {"model-00002-of-00002.safetensors", "model-00003-of-00003.safetensors", "model-00003-of-00003.safetensors"},
		"no map":  {`"weight_map"`, `"weights"`, "weight_map"},
	} {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", SafetensorsIndexFile} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == SafetensorsIndexFile {
				data = []byte(strings.ReplaceAll(string(data), c.from, c.to))
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Load(dir)
		if !errors.Is(err, compiler.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a bad-input error saying %q", name, err, c.want)
		}
	}
}
