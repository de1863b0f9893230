package compiler

import (
	"os"
	"testing"
)

func loadBertLayer(b *testing.B) *Graph {
	b.Helper()
	src, err := os.ReadFile("testdata/bert_layer.sqc")
	if err != nil {
		b.Fatal(err)
	}
	g, err := ParseText(string(src))
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkVerify(b *testing.B) {
	g := loadBertLayer(b)
	for b.Loop() {
		if err := g.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInferShapes(b *testing.B) {
	g := loadBertLayer(b)
	for b.Loop() {
		clear(g.Values)
		if err := g.InferShapes(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTextRoundTrip(b *testing.B) {
	g := loadBertLayer(b)
	for b.Loop() {
		if _, err := ParseText(g.Text()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextLargeWeights prints a graph holding a BERT-mini-sized
// embedding table (7.8M f32), which is hashed for its elided form.
func BenchmarkTextLargeWeights(b *testing.B) {
	g := NewGraph("big")
	t := NewTensor(Float32, 30522, 256)
	for i := range t.F32 {
		t.F32[i] = float32(i % 251)
	}
	g.Initializers["emb"] = t
	b.SetBytes(t.Bytes())
	for b.Loop() {
		_ = g.Text()
	}
}
