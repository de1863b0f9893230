package modelrt

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// TestTagTokens tags five positions of three labels, [CLS] and [SEP]
// around three text tokens, against values worked out by hand.
func TestTagTokens(t *testing.T) {
	logits := []float32{
		9, 0, 0, // [CLS]: would be "O" if it were tagged
		0, 2, 2, // a tie: the first of the two
		0, 0, 1, // class 2, which has no name
		1, 1, 1, // a three-way tie
		0, 0, 9, // [SEP]
	}
	offsets := []tokenizer.Offset{{}, {Start: 0, End: 3}, {Start: 4, End: 7}, {Start: 7, End: 8}, {}}
	got := TagTokens(logits, 3, []string{"O", "B-PER"}, offsets, 1, 4)
	want := []TokenPrediction{
		{Position: 1, Label: "B-PER", Class: 1, Score: float32(1 / (2 + math.Exp(-2))), Start: 0, End: 3},
		{Position: 2, Label: "", Class: 2, Score: float32(math.E / (2 + math.E)), Start: 4, End: 7},
		{Position: 3, Label: "O", Class: 0, Score: 1.0 / 3, Start: 7, End: 8},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d predictions %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if math.Abs(float64(g.Score-w.Score)) > 1e-7 {
			t.Errorf("position %d: score %v, want %v", w.Position, g.Score, w.Score)
		}
		g.Score = w.Score
		if g != w {
			t.Errorf("prediction %d: got %+v, want %+v", i, got[i], w)
		}
	}
}

// TestTagTokensBounds: positions without a full row of logits or an
// offset are not tagged, and nonsense bounds give no predictions, never
// a panic.
func TestTagTokensBounds(t *testing.T) {
	offsets := make([]tokenizer.Offset, 4)
	logits := []float32{0, 1, 1, 0, 0, 1, 1} // three full rows of 2 and half a row
	for _, tc := range []struct {
		name             string
		numLabels        int
		offs             []tokenizer.Offset
		first, last, pos int // pos: the last position tagged, -1 for none
	}{
		{"short logits", 2, offsets, 0, 4, 2},
		{"short offsets", 2, offsets[:2], 0, 4, 1},
		{"negative first", 2, offsets, -3, 2, 1},
		{"empty range", 2, offsets, 2, 2, -1},
		{"reversed range", 2, offsets, 3, 1, -1},
		{"no labels", 0, offsets, 0, 4, -1},
		{"negative labels", -2, offsets, 0, 4, -1},
	} {
		got := TagTokens(logits, tc.numLabels, nil, tc.offs, tc.first, tc.last)
		if tc.pos < 0 {
			if len(got) != 0 {
				t.Errorf("%s: got %+v, want none", tc.name, got)
			}
			continue
		}
		if len(got) == 0 || got[len(got)-1].Position != tc.pos || got[0].Position != max(tc.first, 0) {
			t.Errorf("%s: got %+v, want positions %d..%d", tc.name, got, max(tc.first, 0), tc.pos)
		}
	}
}

// tagged builds predictions from labels and scores, token i spanning
// bytes [10i, 10i+5).
func tagged(labels []string, scores []float32) []TokenPrediction {
	out := make([]TokenPrediction, len(labels))
	for i, l := range labels {
		out[i] = TokenPrediction{Position: i + 1, Label: l, Score: scores[i], Start: 10 * i, End: 10*i + 5}
	}
	return out
}

// TestGroupEntities checks cases worked out by hand from transformers'
// group_entities, group_sub_entities and the pipeline's ignore_labels.
func TestGroupEntities(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
		scores []float32
		want   []Entity
	}{
		{"entities around O", []string{"B-PER", "I-PER", "O", "B-LOC"}, []float32{0.5, 0.75, 0.9, 0.25},
			[]Entity{{"PER", 0.625, 0, 15}, {"LOC", 0.25, 30, 35}}},
		{"I- after O starts an entity", []string{"O", "I-PER", "I-PER"}, []float32{1, 0.5, 1},
			[]Entity{{"PER", 0.75, 10, 25}}},
		{"B- after B- starts another", []string{"B-PER", "B-PER"}, []float32{0.5, 1},
			[]Entity{{"PER", 0.5, 0, 5}, {"PER", 1, 10, 15}}},
		{"I- of another tag starts another", []string{"B-PER", "I-LOC", "I-LOC"}, []float32{0.5, 1, 0.5},
			[]Entity{{"PER", 0.5, 0, 5}, {"LOC", 0.75, 10, 25}}},
		{"I- then B- of the same tag", []string{"I-PER", "B-PER", "I-PER"}, []float32{1, 0.5, 0.25},
			[]Entity{{"PER", 1, 0, 5}, {"PER", 0.375, 10, 25}}},
		{"labels without B-/I- continue", []string{"PER", "PER", "O", "PER", "MISC"}, []float32{0.25, 0.5, 1, 1, 0.5},
			[]Entity{{"PER", 0.375, 0, 15}, {"PER", 1, 30, 35}, {"MISC", 0.5, 40, 45}}},
		{"a bare tag continues a B-", []string{"B-PER", "PER"}, []float32{0.5, 1},
			[]Entity{{"PER", 0.75, 0, 15}}},
		{"only O", []string{"O", "O"}, []float32{1, 1}, nil},
		{"I-O is O too", []string{"B-O", "I-O"}, []float32{1, 1}, nil},
		{"the group is what follows the first -", []string{"I-foo-bar", "LABEL-1", "LABEL_1", "LABEL_1"}, []float32{1, 0.5, 0.25, 0.5},
			[]Entity{{"foo-bar", 1, 0, 5}, {"1", 0.5, 10, 15}, {"LABEL_1", 0.375, 20, 35}}},
		{"mean of three", []string{"B-ORG", "I-ORG", "I-ORG"}, []float32{0.25, 0.5, 1},
			[]Entity{{"ORG", float32(1.75 / 3), 0, 25}}},
		{"no tokens", nil, nil, nil},
	} {
		got := GroupEntities(tagged(tc.labels, tc.scores))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v: got %+v, want %+v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// TestTemplateTokens counts the template tokens of real tokenizers: BERT's
// vocab.txt and RoBERTa's tokenizer.json (1 and 1 each), and tokenizer.json
// files with a longer template and with none.
func TestTemplateTokens(t *testing.T) {
	bert, err := tokenizer.FromVocabFile("../tokenizer/testdata/vocab.txt", tokenizer.Options{Lowercase: true, MaxLength: 3})
	if err != nil {
		t.Fatal(err)
	}
	roberta, err := tokenizer.FromTokenizerJSON("../tokenizer/testdata/oracle/roberta.json")
	if err != nil {
		t.Fatal(err)
	}
	// [CLS] [MASK] A [SEP] [SEP]; with MaxLength 4 (as long as the pair
	// template) a text has no room left, which TemplateTokens must not
	// see.
	long, err := withTemplate(t, map[string]any{
		"type":   "TemplateProcessing",
		"single": []any{special("[CLS]"), special("[MASK]"), sequence("A"), special("[SEP]"), special("[SEP]")},
		"pair":   []any{special("[CLS]"), sequence("A"), special("[SEP]"), sequence("B"), special("[SEP]")},
		"special_tokens": map[string]any{
			"[CLS]":  map[string]any{"id": "[CLS]", "ids": []int{2}, "tokens": []string{"[CLS]"}},
			"[SEP]":  map[string]any{"id": "[SEP]", "ids": []int{3}, "tokens": []string{"[SEP]"}},
			"[MASK]": map[string]any{"id": "[MASK]", "ids": []int{4}, "tokens": []string{"[MASK]"}},
		},
	}).WithMaxLength(4)
	if err != nil {
		t.Fatal(err)
	}
	none := withTemplate(t, nil)
	for _, tc := range []struct {
		name           string
		tok            *tokenizer.Tokenizer
		prefix, suffix int
	}{
		{"bert", bert, 1, 1},
		{"roberta", roberta, 1, 1},
		{"two before, two after", long, 2, 2},
		{"no post-processor", none, 0, 0},
	} {
		if p, s := TemplateTokens(tc.tok); p != tc.prefix || s != tc.suffix {
			t.Errorf("%s: TemplateTokens = %d, %d; want %d, %d", tc.name, p, s, tc.prefix, tc.suffix)
		}
	}
}

// special and sequence are items of a tokenizer.json template.
func special(id string) any {
	return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": 0}}
}

func sequence(id string) any {
	return map[string]any{"Sequence": map[string]any{"id": id, "type_id": 0}}
}

// withTemplate loads the tokenizer package's BERT tokenizer.json with
// post_processor replaced.
func withTemplate(t *testing.T, post map[string]any) *tokenizer.Tokenizer {
	t.Helper()
	return editedBERT(t, func(doc map[string]any) { doc["post_processor"] = post })
}

// editedBERT loads the tokenizer package's BERT tokenizer.json after edit
// changed its JSON.
func editedBERT(t *testing.T, edit func(doc map[string]any)) *tokenizer.Tokenizer {
	t.Helper()
	data, err := os.ReadFile("../tokenizer/testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromTokenizerJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
