package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/serve"
)

// TestServeEngineTokenClassifier: the demo model read as a
// DistilBertForTokenClassification (its classifier applied to every token:
// the same [2, dim] weight, labels "MISC" and "O") is served as a token
// classifier, not as an embedder: /classify_tokens answers with entities
// whose words are the text they span, and concurrent requests get the
// bytes a request alone gets.
func TestServeEngineTokenClassifier(t *testing.T) {
	model, calib := demoDir(t)
	cfgPath := filepath.Join(model, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["architectures"] = []string{"DistilBertForTokenClassification"}
	cfg["id2label"] = map[string]string{"0": "MISC", "1": "O"}
	cfg["label2id"] = map[string]int{"MISC": 0, "O": 1}
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
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
