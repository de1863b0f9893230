package testmodels

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

func TestReadIDsAndLogits(t *testing.T) {
	dir := t.TempDir()
	ids := filepath.Join(dir, "ids.jsonl")
	content := `{"input_ids":[101,7,102],"attention_mask":[1,1,1],"token_type_ids":[0,0,0]}

{"input_ids":[101,102],"attention_mask":[1,1]}
`
	write(t, ids, []byte(content))
	exs, err := ReadIDs(ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 2 || !slices.Equal(exs[0].InputIDs, []int64{101, 7, 102}) || !slices.Equal(exs[1].TokenTypeIDs, []int64{0, 0}) {
		t.Fatalf("examples %+v", exs)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	write(t, bad, []byte(`{"input_ids":[1,2],"attention_mask":[1]}`+"\n"))
	if _, err := ReadIDs(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("mismatched lengths: error %v", err)
	}

	logits := filepath.Join(dir, "logits.f32")
	raw := make([]byte, 16)
	for i, v := range []float32{1, -2, 0.5, 3} {
		binary.LittleEndian.PutUint32(raw[i*4:], math.Float32bits(v))
	}
	write(t, logits, raw)
	rows, err := ReadLogits(logits, 2, 2)
	if err != nil || !slices.Equal(rows[1], []float32{0.5, 3}) {
		t.Fatalf("logits %v, %v", rows, err)
	}
	if _, err := ReadLogits(logits, 3, 2); err == nil {
		t.Error("short logits file accepted")
	}
	if got := Accuracy(rows, []int{0, 1}); got != 1 {
		t.Errorf("accuracy %v, want 1", got)
	}
	if got := MaxAbsDiff(rows, [][]float32{{1, -2}, {0.25, 3}}); got != 0.25 {
		t.Errorf("max abs diff %v, want 0.25", got)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInputsPadRight(t *testing.T) {
	g := compiler.NewGraph("g")
	g.Inputs = []*compiler.Value{{Name: "input_ids"}, {Name: "attention_mask"}}
	exs := []Example{
		{InputIDs: []int64{101, 7, 102}, AttentionMask: []int64{1, 1, 1}, TokenTypeIDs: []int64{0, 0, 0}},
		{InputIDs: []int64{101, 102}, AttentionMask: []int64{1, 1}, TokenTypeIDs: []int64{0, 0}},
	}
	in, err := Inputs(g, exs)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || !slices.Equal(in["input_ids"].Shape, []int64{2, 3}) ||
		!slices.Equal(in["input_ids"].I64, []int64{101, 7, 102, 101, 102, 0}) ||
		!slices.Equal(in["attention_mask"].I64, []int64{1, 1, 1, 1, 1, 0}) {
		t.Fatalf("inputs %v %v", in["input_ids"], in["attention_mask"])
	}
	g.Inputs = append(g.Inputs, &compiler.Value{Name: "pixel_values"})
	if _, err := Inputs(g, exs); err == nil {
		t.Error("unknown input name accepted")
	}
}

// TestSharedReferences checks the shared references agree with themselves:
// 872 examples, and the argmax accuracy of the logits equals dev.json's.
func TestSharedReferences(t *testing.T) {
	for _, name := range Models {
		t.Run(name, func(t *testing.T) {
			ref, err := LoadReference(ModelDir(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if len(ref.Examples) != 872 {
				t.Errorf("%d examples, want 872", len(ref.Examples))
			}
			if acc := Accuracy(ref.Logits, ref.Labels); acc != ref.Accuracy {
				t.Errorf("reference logits give accuracy %v, dev.json says %v", acc, ref.Accuracy)
			}
		})
	}
}
