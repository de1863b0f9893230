package main

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"

	"github.com/sqc-dev/sqc/cmd/sqc/testdata/gen-3310819861/m"
)

func main() {
	var b m.Batch
	f, err := os.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ex struct {
			IDs   []int64 `json:"input_ids"`
			Mask  []int64 `json:"attention_mask"`
			Types []int64 `json:"token_type_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			panic(err)
		}
		b.InputIDs, b.AttentionMask, b.TokenTypeIDs = append(b.InputIDs, ex.IDs), append(b.AttentionMask, ex.Mask), append(b.TokenTypeIDs, ex.Types)
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	var texts []string
	for _, l := range splitLines(string(data)) {
		texts = append(texts, l)
	}
	model, err := m.New()
	if err != nil {
		panic(err)
	}
	out, err := model.Run(context.Background(), b)
	if err != nil {
		panic(err)
	}
	preds, err := model.Classify(context.Background(), texts)
	if err != nil {
		panic(err)
	}
	enc := json.NewEncoder(os.Stdout)
	for i, row := range out.Logits {
		bits := make([]uint32, len(row))
		for j, v := range row {
			bits[j] = math.Float32bits(v)
		}
		if err := enc.Encode(map[string]any{"bits": bits, "label": preds[i].Index}); err != nil {
			panic(err)
		}
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
