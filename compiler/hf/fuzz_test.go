package hf

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

var update = flag.Bool("update", false, "rewrite the seed corpora under testdata/fuzz")

// seedConfig is the smallest model of an architecture, so the fuzzer's
// mutations land on every part of a file that loads.
func seedConfig(arch string) Config {
	c := tinyConfig(arch)
	c.VocabSize, c.HiddenSize, c.NumLayers, c.NumHeads, c.IntermediateSize, c.MaxPositions = 5, 4, 1, 2, 4, 3
	c.Labels = c.Labels[:2]
	if c.ModelType == ModelBERT {
		c.TypeVocabSize = 1
	}
	return c
}

// fuzzSeeds are (config.json, model.safetensors) pairs: a valid tiny
// checkpoint of each architecture, and a few broken ones.
func fuzzSeeds(t testing.TB) [][2][]byte {
	var seeds [][2][]byte
	for _, arch := range []string{ArchBertModel, ArchBertForSequence, ArchDistilBertModel, ArchDistilBertForSequence} {
		m := newModel(t, seedConfig(arch), false)
		seeds = append(seeds, [2][]byte{m.configJSON(t), m.safetensorsBytes(t)})
	}
	valid := seeds[1]
	seeds = append(seeds,
		[2][]byte{valid[0], valid[1][:len(valid[1])/2]},
		[2][]byte{[]byte(`{"model_type": "bert", "hidden_size": 0}`), valid[1]},
		[2][]byte{[]byte(`{}`), []byte("\x02\x00\x00\x00\x00\x00\x00\x00{}")},
	)
	return seeds
}

// FuzzLoad feeds arbitrary config.json and model.safetensors contents to
// the loader: it must return a graph or a bad-input error, never panic, and
// any graph it returns must be well formed.
// Seeds: testdata/fuzz/FuzzLoad (see TestFuzzSeedsCurrent).
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, cfg, st []byte) {
		g, err := loadBytes("fuzz", cfg, st)
		if err != nil {
			if !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error is not ErrBadInput: %v", err)
			}
			return
		}
		checkTopological(t, g)
	})
}

// FuzzSafetensors fuzzes the .safetensors reader alone: parsing and reading
// every tensor must never panic.
// Seeds: testdata/fuzz/FuzzSafetensors.
func FuzzSafetensors(f *testing.F) {
	f.Fuzz(func(t *testing.T, buf []byte) {
		st, err := ParseSafetensors(buf, "fuzz.safetensors")
		if err != nil {
			if !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error is not ErrBadInput: %v", err)
			}
			return
		}
		for _, name := range st.Names() {
			w, err := st.Weight(name, nil)
			if err == nil && w.Check() != nil {
				t.Fatalf("%s: %v", name, w.Check())
			}
		}
	})
}

// TestFuzzSeedsCurrent keeps the checked-in seed corpora equal to what
// fuzzSeeds makes (go test -run FuzzSeeds -update rewrites them).
func TestFuzzSeedsCurrent(t *testing.T) {
	for i, s := range fuzzSeeds(t) {
		files := map[string]string{
			filepath.Join("testdata", "fuzz", "FuzzLoad", "seed"+strconv.Itoa(i)):        corpusFile(s[0], s[1]),
			filepath.Join("testdata", "fuzz", "FuzzSafetensors", "seed"+strconv.Itoa(i)): corpusFile(s[1]),
		}
		for path, want := range files {
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("%s is stale or missing (run go test -run FuzzSeeds -update): %v", path, err)
			}
		}
	}
}

// corpusFile is the "go test fuzz v1" encoding of a corpus entry.
func corpusFile(args ...[]byte) string {
	s := "go test fuzz v1\n"
	for _, a := range args {
		s += fmt.Sprintf("[]byte(%q)\n", a)
	}
	return s
}

// FuzzTorchCheckpoint fuzzes the torch.save reader: opening a file and
// reading every tensor must return tensors or bad-input errors, never
// panic. Seeds: the views checkpoint, whole and cut, and a torch-f16 one.
func FuzzTorchCheckpoint(f *testing.F) {
	for _, name := range []string{"views", "torch-f16"} {
		data, err := os.ReadFile(filepath.Join(checkpointDir(f, name), TorchFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)-40])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), TorchFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ck, err := OpenTorchCheckpoint(path)
		if err != nil {
			if !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("error is not ErrBadInput: %v", err)
			}
			return
		}
		for _, name := range ck.Names() {
			w, err := ck.Weight(name, nil)
			if err == nil && w.Check() != nil {
				t.Fatalf("%s: %v", name, w.Check())
			}
			if err != nil && !errors.Is(err, compiler.ErrBadInput) {
				t.Fatalf("%s: error is not ErrBadInput: %v", name, err)
			}
		}
	})
}
