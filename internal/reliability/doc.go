// Package reliability holds sqc's cross-cutting reliability tests: bad
// input of every kind refused with a typed error that names the file or
// tensor (never a panic), bitwise determinism of the INT8 engine across
// runs, worker counts and kernel families, and concurrent use of one
// compiled program or generated model.
//
// The non-test files build the inputs those tests need: two small valid
// models written in Go (an ONNX graph encoded field by field with
// protowire, and a 1-layer DistilBERT as config.json + model.safetensors),
// their tokenizer files, and BadInputCases, a table of broken copies of
// them. cmd/sqc's reliability tests run the same table through the
// command line, so the Go API and the CLI are held to one list.
package reliability
