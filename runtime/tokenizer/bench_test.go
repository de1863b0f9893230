package tokenizer

import (
	"path/filepath"
	"testing"
)

// benchSetup returns the bert-base-uncased tokenizer and the SST-2 dev
// sentences, or the test vocabulary and a few sentences without ../shared.
func benchSetup(b *testing.B) (*Tokenizer, []string) {
	b.Helper()
	shared, err := findShared()
	if err != nil {
		b.Logf("benchmarking the test vocabulary: %v", err)
		tok := testTokenizer(b, Options{Lowercase: true})
		return tok, []string{"Hello, world! The unaffable café is playing.", "中文 字 — naïve ¿hello?", "it 's a charming and often affecting journey . "}
	}
	tok, err := FromVocabFile(filepath.Join(shared, "models", "sst2-bert-mini", "vocab.txt"), Options{Lowercase: true})
	if err != nil {
		b.Fatal(err)
	}
	return tok, readTSVColumn(b, filepath.Join(shared, "data", "glue-sst2", "dev.tsv"), "sentence")
}

func BenchmarkEncode(b *testing.B) {
	tok, sentences := benchSetup(b)
	bytes := 0
	for _, s := range sentences {
		bytes += len(s)
	}
	b.SetBytes(int64(bytes / len(sentences)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tok.Encode(sentences[i%len(sentences)])
	}
}

func BenchmarkEncodeBatch32(b *testing.B) {
	tok, sentences := benchSetup(b)
	for len(sentences) < 32 {
		sentences = append(sentences, sentences...)
	}
	b.ReportAllocs()
	for b.Loop() {
		tok.EncodeBatch(sentences[:32], 0)
	}
}

// BenchmarkEncodeTypes encodes the SST-2 dev sentences (or the oracle
// corpus's first texts without ../shared) with each oracle tokenizer type.
func BenchmarkEncodeTypes(b *testing.B) {
	_, sentences := benchSetup(b)
	for _, typ := range []string{"wordpiece", "bpe", "unigram", "sentencepiece"} {
		b.Run(typ, func(b *testing.B) {
			tok := loadFuzzTokenizer(b, fuzzTokenizers[typ])
			bytes := 0
			for _, s := range sentences {
				bytes += len(s)
			}
			b.SetBytes(int64(bytes / len(sentences)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tok.Encode(sentences[i%len(sentences)])
			}
		})
	}
}
