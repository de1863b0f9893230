package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shellWorker is a peer-protocol worker in sh: mode m, 1.5 ms per call.
const shellWorker = `echo '{"ready": true, "modes": ["m"], "load_s": {"m": 1}}'; ` +
	`while read -r l; do case "$l" in *quit*) echo '{"bye": true}'; exit 0;; *) echo '{"ms": [1.5]}';; esac; done`

func TestRun(t *testing.T) {
	dir := t.TempDir()
	vocab := filepath.Join(dir, "vocab.txt")
	text := filepath.Join(dir, "s.txt")
	os.WriteFile(vocab, []byte("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n"), 0o644)
	os.WriteFile(text, []byte("hello\nhello hello\nhello\n"), 0o644)
	out := filepath.Join(dir, "out")
	var stdout, stderr strings.Builder
	err := run([]string{"--text", text, "--vocab", vocab, "--out", out, "--batch", "2", "--rounds", "2",
		"--worker", "a=" + shellWorker, "--worker", "b=" + shellWorker, "--padded", "b/m", "--reference", "a/m"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v (stderr %s)", err, stderr.String())
	}
	for _, want := range []string{"3 sentences in 2 batches", "a/m ", "b/m ", "b/m padded", "x a/m"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, f := range []string{"table.txt", "summary.json", "workers.log"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(out, "calls.jsonl"))
	if n := strings.Count(string(calls), "\n"); n != 2*2*3 {
		t.Errorf("%d calls recorded, want 12 (2 rounds x 2 batches x 3 targets)", n)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--text, --vocab and --out are required"},
		{[]string{"--text", text, "--vocab", vocab, "--out", out}, "at least one --worker"},
		{[]string{"--text", text, "--vocab", vocab, "--out", out, "--worker", "nameless"}, "want name=COMMAND"},
		{[]string{"--text", text, "--vocab", vocab, "--out", out, "--worker", "a=" + shellWorker, "--padded", "a/x"}, `--padded "a/x"`},
		{[]string{"--text", filepath.Join(dir, "none.tsv"), "--vocab", vocab, "--out", out, "--worker", "a=" + shellWorker}, "none.tsv"},
		{[]string{"--text", text, "--vocab", vocab, "--out", out, "--worker", "a=" + shellWorker, "--reference", "z/m"}, `reference "z/m"`},
	} {
		if err := run(c.args, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %q: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
