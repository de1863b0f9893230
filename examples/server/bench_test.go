package main

import (
	"testing"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/internal/servebench"
)

// BenchmarkBatching: does dynamic batching pay? internal/servebench's
// sequential, concurrent64 and direct runs on the generated demo model
// (2 layers: HTTP costs as much as the model). cmd/sqc's
// BenchmarkServeBatching runs the same on a realistic model; compare
// medians over -count runs:
//
//	go test -run '^$' -bench Batching -count 5 ./examples/server
func BenchmarkBatching(b *testing.B) {
	m, err := sentimentmodel.New()
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	texts := sentences(b, 256)
	bodies := make([][]byte, len(texts))
	for i, t := range texts {
		bodies[i] = predictBody(t)
	}
	servebench.Batching(b, model(m), "/predict", bodies)
}
