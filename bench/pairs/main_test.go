package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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

// TestRunRatesVariantsAgainstTheBase checks that the worker's comparison
// modes are rated against sqc/int8 only, the sqc modes against the peers,
// and nothing against itself.
func TestRunRatesVariantsAgainstTheBase(t *testing.T) {
	rec := func(system, mode string, ms ...float64) string {
		times, _ := json.Marshal(ms)
		return fmt.Sprintf(`{"kind": "bench", "system": %q, "mode": %q, "config": "bert-base", "threads": 2, "batch": 8, "seq": 128, "round": 1, "times_ms": %s}`, system, mode, times)
	}
	path := filepath.Join(t.TempDir(), "results.jsonl")
	lines := []string{
		rec("ort", "int8", 200, 200, 200),
		rec("sqc", "int8", 100, 100, 100),
		rec("sqc", "int8-vnni", 160, 160, 160),
		rec("sqc", "int8-fincol", 110, 120, 130),
		rec("sqc", "int8-sepepi", 150, 150, 150),
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // "target reference" -> median
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		f := strings.Fields(line)
		got[f[3]+" "+f[4]] = f[5]
	}
	want := map[string]string{
		"sqc/int8 ort/int8":        "2.00x",
		"sqc/int8-vnni ort/int8":   "1.25x",
		"sqc/int8 sqc/int8-fincol": "1.20x",
		"sqc/int8 sqc/int8-sepepi": "1.50x",
	}
	if !maps.Equal(got, want) {
		t.Errorf("rated %v, want exactly %v\n%s", got, want, out.String())
	}
}
