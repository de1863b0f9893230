package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(empty, []byte(`{"kind":"check"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, args := range [][]string{{empty}, {filepath.Join(dir, "missing.jsonl")}} {
		err := run(args, &out)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("run(%q) = %v, want an error naming the file", args, err)
		}
	}
	if err := run(nil, &out); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("run() = %v, want the usage", err)
	}
}
