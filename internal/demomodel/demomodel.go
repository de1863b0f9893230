// Package demomodel embeds sqc's default model, sst2-distilbert-tiny (a
// 2-layer DistilBERT SST-2 sentiment classifier; see README.md for its
// provenance), so `sqc demo` and the README's main command work on a fresh
// clone with nothing else on the machine.
package demomodel

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed sst2-distilbert-tiny/config.json sst2-distilbert-tiny/model.safetensors sst2-distilbert-tiny/vocab.txt sst2-distilbert-tiny/tokenizer_config.json
var files embed.FS

// Calibration holds 64 short movie-review sentences written for sqc (one
// per line; the same as examples/sentiment/calib.txt) that `sqc demo`
// calibrates the INT8 model on.
//
//go:embed calib.txt
var Calibration string

// Name is the embedded model's name.
const Name = "sst2-distilbert-tiny"

// FS returns the model directory as a file system (config.json,
// model.safetensors, vocab.txt, tokenizer_config.json at its root).
func FS() fs.FS {
	sub, err := fs.Sub(files, Name)
	if err != nil {
		panic(err) // cannot happen: the directory is embedded above
	}
	return sub
}

// Extract writes the model directory under dir and returns its path, for
// loaders that read from disk.
func Extract(dir string) (string, error) {
	out := filepath.Join(dir, Name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	err := fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(FS(), path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, path), data, 0o644)
	})
	return out, err
}
