package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunPrintsTheBarsAndNamesBadFiles(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{dir}, &out); err != nil {
		t.Fatalf("empty results folder: %v", err)
	}
	if !strings.Contains(out.String(), dir) || strings.Count(out.String(), "not measured") != 9 {
		t.Errorf("empty results folder: want nine bars not measured under a header naming %s:\n%s", dir, out.String())
	}
	bad := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(bad, []byte("{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{dir}, &out); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt results.jsonl: err = %v, want one naming %s", err, bad)
	}
	for _, args := range [][]string{{filepath.Join(dir, "missing")}, {bad}} {
		if err := run(args, &out); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("run(%q) = %v, want an error naming it", args, err)
		}
	}
	if err := run(nil, &out); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("run() = %v, want the usage", err)
	}
}
