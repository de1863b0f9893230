// Package modelrt is the support code shared by every Go package that
// `sqc compile` generates: the request types (Batch, Prediction), a token
// classifier's tags, words and entities (TagTokens, AggregateWords,
// GroupEntities), input validation with typed errors, the embedded weight
// file format and its integrity check, and the runtime version handshake. The schedule of a
// model itself is generated straight-line Go in the model's package; this
// package holds only what is the same for every model.
//
// # Version handshake
//
// A generated package contains
//
//	const _ = modelrt.SupportVersion1
//
// (the number is codegen.RuntimeVersion at generation time). The runtime
// keeps a SupportVersionN constant for every generated-code version it can
// run and drops it when it no longer can, so a package generated for an
// incompatible runtime fails to compile, naming the missing constant,
// instead of misbehaving at run time: protoc-gen-go's EnforceVersion idea.
package modelrt

// SupportVersion1 exists while this runtime can run packages generated
// for runtime version 1: the weight format of weights.go (format version
// 1), Batch and Prediction as defined here, and the signatures of
// runtime/qgemm, runtime/nn, runtime/pool and runtime/tokenizer that
// generated code calls.
const SupportVersion1 = 1

// SupportVersion2 exists while this runtime can run packages generated
// for runtime version 2: version 1 plus length-ordered chunking
// (ChunkOrder, LongestOf, FillInputsOf).
const SupportVersion2 = 2

// SupportVersion3 exists while this runtime can run packages generated
// for runtime version 3: version 2 plus the heads of sentence-embedding
// and scoring models (EmbeddingHead, Dense, Activation, Scores). Only
// packages that use them are generated for version 3.
const SupportVersion3 = 3

// SupportVersion4 exists while this runtime can run packages generated
// for runtime version 4: version 3 plus a token classifier's tags and
// entities (TokenPrediction, TagTokens, Entity, GroupEntities,
// TemplateTokens). Only token classifiers' packages are generated for
// version 4.
const SupportVersion4 = 4

// SupportVersion5 exists while this runtime can run packages generated
// for runtime version 5: version 4 plus extractive question answering
// (QAOptions, Answer, Answers, tokenizer.EncodePairWindows). Only question
// answering models' packages are generated for version 5.
const SupportVersion5 = 5

// SupportVersion6 exists while this runtime can run packages generated
// for runtime version 6: version 5 plus sparse encoders (SparseHead,
// SparseValue, Sparsify). Only masked language models' packages are
// generated for version 6.
const SupportVersion6 = 6

// CurrentVersion is the generated-code version this runtime was written
// for; `sqc compile` emits packages of this version.
const CurrentVersion = 2
