package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/serve"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// TestServeEngineTokenClassifier: the demo model read as a
// DistilBertForTokenClassification (its classifier applied to every token:
// the same [2, dim] weight, labels "MISC" and "O") is served as a token
// classifier, not as an embedder: /classify_tokens answers with entities
// whose words are the text they span, and concurrent requests get the
// bytes a request alone gets.
func TestServeEngineTokenClassifier(t *testing.T) {
	model, calib := demoTokenClassifier(t)
	url := engineServer(t, model, calib, serve.TokenClassifier)
	text := "a gorgeous, witty, seductive movie about Zoë in Zürich."
	code, body := post(t, url+"/classify_tokens", text)
	var ents []struct {
		Group      string  `json:"entity_group"`
		Score      float64 `json:"score"`
		Word       string  `json:"word"`
		Start, End int
	}
	if err := json.Unmarshal([]byte(body), &ents); code != 200 || err != nil {
		t.Fatalf("/classify_tokens: %d %s (%v)", code, body, err)
	}
	runes := []rune(text)
	if len(ents) == 0 {
		t.Errorf("no entities in %q", text)
	}
	for _, e := range ents {
		if e.Group != "MISC" || !(e.Score > 0.5 && e.Score <= 1) || e.Start >= e.End || e.End > len(runes) || string(runes[e.Start:e.End]) != e.Word {
			t.Errorf("entity %+v of %q", e, text)
		}
	}
	if code, body := post(t, url+"/embed", text); code != 424 || !strings.Contains(body, "not an embedding model") {
		t.Errorf("/embed on a token classifier: %d %s", code, body)
	}
	batchedMatchesAlone(t, url+"/classify_tokens")
	t.Logf("%q: %s", text, body)
}

// demoTokenClassifier is the demo model read as a
// DistilBertForTokenClassification: its classifier ([2, dim]) applied to
// every token, labels "MISC" and "O".
func demoTokenClassifier(t *testing.T) (model, calib string) {
	t.Helper()
	return demoAs(t, func(cfg map[string]any) {
		cfg["architectures"] = []string{"DistilBertForTokenClassification"}
		cfg["id2label"] = map[string]string{"0": "MISC", "1": "O"}
		cfg["label2id"] = map[string]int{"MISC": 0, "O": 1}
	})
}

// demoAs is the demo model (demoDir) with its config.json changed by edit.
func demoAs(t *testing.T, edit func(cfg map[string]any)) (model, calib string) {
	t.Helper()
	model, calib = demoDir(t)
	cfgPath := filepath.Join(model, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return model, calib
}

// TestRunTokenClassifier: `sqc run --texts` on a token classifier prints
// each text's logits per token and its entities, which are the logits
// through modelrt's tagging and grouping, spans in characters of the text.
func TestRunTokenClassifier(t *testing.T) {
	model, _ := demoTokenClassifier(t)
	texts := []string{"a gorgeous, witty, seductive movie about Zoë in Zürich.", "dull", "the plot is a mess but the cast is lovely"}
	file := writeLines(t, "texts.txt", texts)
	code, stdout, stderr := runCLI(t, "run", "--model", model, "--fp32", "--texts", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"MISC", "O"}
	prefix, suffix := modelrt.TemplateTokens(tok)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%d lines for %d texts:\n%s", len(lines), len(texts), stdout)
	}
	entities := 0
	for i, line := range lines {
		var got struct {
			Logits   [][]float32              `json:"logits"`
			Entities []modelrt.PipelineEntity `json:"entities"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		e := tok.EncodeWithOffsets(texts[i])
		if len(got.Logits) != len(e.InputIDs) {
			t.Fatalf("text %d: %d rows of logits for %d tokens", i, len(got.Logits), len(e.InputIDs))
		}
		var flat []float32
		for _, row := range got.Logits {
			flat = append(flat, row...)
		}
		want := modelrt.PipelineEntities(texts[i], modelrt.GroupEntities(modelrt.TagTokens(flat, 2, labels, e.Offsets, prefix, len(e.InputIDs)-suffix)))
		if !reflect.DeepEqual(got.Entities, want) && !(len(got.Entities) == 0 && len(want) == 0) {
			t.Errorf("text %d: entities %+v, want %+v", i, got.Entities, want)
		}
		runes := []rune(texts[i])
		for _, ent := range got.Entities {
			if ent.EntityGroup != "MISC" || string(runes[ent.Start:ent.End]) != ent.Word {
				t.Errorf("text %d: entity %+v", i, ent)
			}
		}
		entities += len(got.Entities)
	}
	if entities == 0 {
		t.Error("no entities in any text")
	}
}
