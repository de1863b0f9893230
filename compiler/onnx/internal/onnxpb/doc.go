// Package onnxpb holds the Go types protoc-gen-go generates from ONNX's
// onnx.proto (ONNX 1.12, the copy Debian's libonnx-dev installs as
// /usr/include/onnx/onnx.proto, checked in here unchanged). Unknown fields
// added by newer ONNX releases are skipped by the decoder, so newer models
// still load.
//
// Regenerate with `go generate`: gen.go builds protoc-gen-go from the
// google.golang.org/protobuf version go.mod pins, so the output depends only
// on that version and on protoc. TestGeneratedCodeIsCurrent regenerates into
// a temporary directory and fails on any difference.
package onnxpb

//go:generate go run gen.go
