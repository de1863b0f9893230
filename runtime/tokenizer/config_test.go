package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer_config.json")

	opts, err := ReadConfig(path)
	if err != nil || !opts.Lowercase || opts.MaxLength != 0 {
		t.Fatalf("missing file: got %+v, %v; want the defaults (lowercase)", opts, err)
	}

	cfg := `{"do_lower_case": false, "strip_accents": true, "tokenize_chinese_chars": false,
		"model_max_length": 64, "unk_token": "[U]", "pad_token": {"content": "[P]"}, "mask_token": null}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err = ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Lowercase || opts.StripAccents == nil || !*opts.StripAccents || !opts.NoChineseChars ||
		opts.MaxLength != 64 || opts.UnkToken != "[U]" || opts.PadToken != "[P]" || opts.MaskToken != "" {
		t.Errorf("got %+v", opts)
	}

	// transformers writes int(1e30) for "no limit": that means the default.
	if err := os.WriteFile(path, []byte(`{"model_max_length": 1e30}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts, err = ReadConfig(path); err != nil || opts.MaxLength != 0 {
		t.Errorf("unbounded model_max_length: got %d, %v; want 0", opts.MaxLength, err)
	}

	for _, bad := range []string{`{"do_lower_case": `, `{"cls_token": 3}`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadConfig(path)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v; want ErrBadInput naming %s", bad, err, path)
		}
	}
}
