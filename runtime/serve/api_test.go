package serve

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// long is 20 words: more than the fake models' 16 tokens.
var long = strings.Repeat("good ", 20)

// words20 and ids20 are 20 different words, and 20 different token ids:
// truncating them on the left and on the right keeps different tokens.
const (
	words20 = "the a movie film good bad great is was not very what deep learning i it love hate search query"
	ids20   = "5,6,7,8,9,10,11,12,13,14,15,16,17,18,25,26,27,28,29,30"
)

func withPrompts(i *Info) {
	i.Prompts, i.DefaultPrompt = map[string]string{"query": "query: ", "passage": "search text: "}, "passage"
}

// apiCase is one request and the golden file of its answer.
type apiCase struct {
	name   string
	kind   Kind
	cfg    Config
	info   func(*Info) // edits the fake model's Info before the server reads it
	setup  func(*Server, *fakeModel)
	method string // POST when empty
	path   string
	body   string
}

var apiCases = []apiCase{
	// /embed
	{name: "embed_single", kind: Embedder, path: "/embed", body: `{"inputs":"what is deep learning?"}`},
	{name: "embed_batch", kind: Embedder, path: "/embed", body: `{"inputs":["a good movie","the film was bad!"],"normalize":false}`},
	{name: "embed_truncate", kind: Embedder, path: "/embed", body: `{"inputs":"` + long + `","truncate":true}`},
	{name: "embed_auto_truncate", kind: Embedder, cfg: Config{AutoTruncate: true}, path: "/embed", body: `{"inputs":["` + long + `"]}`},
	{name: "embed_root", kind: Embedder, path: "/", body: `{"inputs":"a movie"}`},
	{name: "embed_400_malformed", kind: Embedder, path: "/embed", body: `{"inputs":"a movie"`},
	{name: "embed_400_not_object", kind: Embedder, path: "/embed", body: `["a movie"]`},
	{name: "embed_400_wrong_type", kind: Embedder, path: "/embed", body: `{"inputs":"a","normalize":"yes"}`},
	{name: "embed_400_missing", kind: Embedder, path: "/embed", body: `{"input":"a movie"}`},
	{name: "embed_400_empty_list", kind: Embedder, path: "/embed", body: `{"inputs":[]}`},
	{name: "embed_token_ids", kind: Embedder, path: "/embed", body: `{"inputs":[2,17,7,3]}`},
	{name: "embed_token_ids_mixed", kind: Embedder, path: "/embed", body: `{"inputs":["what a movie",[2,17,7,3],[9]],"normalize":false}`},
	{name: "embed_token_ids_truncate", kind: Embedder, path: "/embed", body: `{"inputs":[[` + ids20 + `]],"truncate":true}`},
	{name: "embed_token_ids_truncate_left", kind: Embedder, path: "/embed", body: `{"inputs":[[` + ids20 + `]],"truncate":true,"truncation_direction":"Left"}`},
	{name: "embed_400_token_id_negative", kind: Embedder, path: "/embed", body: `{"inputs":[-1]}`},
	{name: "embed_400_token_id_float", kind: Embedder, path: "/embed", body: `{"inputs":[[1.5]]}`},
	{name: "embed_400_token_ids_mixed_list", kind: Embedder, path: "/embed", body: `{"inputs":[5,"a"]}`},
	{name: "embed_422_token_id_range", kind: Embedder, path: "/embed", body: `{"inputs":[101,2054,102]}`},
	{name: "embed_422_token_ids_empty", kind: Embedder, path: "/embed", body: `{"inputs":[[]]}`},
	{name: "embed_422_token_ids_too_long", kind: Embedder, path: "/embed", body: `{"inputs":[` + ids20 + `],"truncate":false}`},
	{name: "embed_400_trailing", kind: Embedder, path: "/embed", body: `{"inputs":"a"} {"inputs":"b"}`},
	{name: "embed_truncate_left", kind: Embedder, path: "/embed", body: `{"inputs":["` + words20 + `"],"truncate":true,"truncation_direction":"Left"}`},
	{name: "embed_truncate_right", kind: Embedder, path: "/embed", body: `{"inputs":["` + words20 + `"],"truncate":true,"truncation_direction":"Right"}`},
	{name: "embed_400_truncation_direction", kind: Embedder, path: "/embed", body: `{"inputs":"a","truncation_direction":"Up"}`},
	{name: "embed_422_prompt_name", kind: Embedder, path: "/embed", body: `{"inputs":"a","prompt_name":"query"}`},
	{name: "embed_prompt", kind: Embedder, info: withPrompts, path: "/embed", body: `{"inputs":"a movie","prompt_name":"query"}`},
	{name: "embed_default_prompt", kind: Embedder, info: withPrompts, path: "/embed", body: `{"inputs":"a movie"}`},
	{name: "embed_normalized_model", kind: Embedder, info: func(i *Info) { i.Normalized = true }, path: "/embed", body: `{"inputs":"a movie"}`},
	{name: "embed_422_prompt_unknown", kind: Embedder, info: withPrompts, path: "/embed", body: `{"inputs":"a","prompt_name":"doc"}`},
	{name: "embed_400_prompt_token_ids", kind: Embedder, info: withPrompts, path: "/embed", body: `{"inputs":[2,7,3],"prompt_name":"query"}`},
	{name: "embed_400_empty_body", kind: Embedder, path: "/embed", body: ``},
	{name: "embed_413_batch", kind: Embedder, cfg: Config{MaxClientBatchSize: 2}, path: "/embed", body: `{"inputs":["a","the","it"]}`},
	{name: "embed_413_payload", kind: Embedder, cfg: Config{PayloadLimit: 32}, path: "/embed", body: `{"inputs":"` + long + `"}`},
	{name: "embed_422_too_long", kind: Embedder, path: "/embed", body: `{"inputs":["a","` + long + `"],"truncate":false}`},
	{name: "embed_424_classifier", kind: Classifier, path: "/embed", body: `{"inputs":"a"}`},
	{name: "embed_429_overloaded", kind: Embedder, cfg: Config{MaxConcurrentRequests: 1}, setup: func(s *Server, _ *fakeModel) { s.admit <- struct{}{} }, path: "/embed", body: `{"inputs":"a"}`},
	{name: "embed_500_model_error", kind: Embedder, setup: func(_ *Server, m *fakeModel) { m.fail = errFake }, path: "/embed", body: `{"inputs":"a"}`},
	{name: "embed_500_nan", kind: Embedder, setup: func(_ *Server, m *fakeModel) { m.nan = true }, path: "/embed", body: `{"inputs":"a"}`},
	{name: "embed_503_draining", kind: Embedder, setup: func(s *Server, _ *fakeModel) { s.draining.Store(true) }, path: "/embed", body: `{"inputs":"a"}`},
	{name: "embed_405_get", kind: Embedder, method: "GET", path: "/embed"},

	// /predict
	{name: "predict_single", kind: Classifier, path: "/predict", body: `{"inputs":"i love this movie"}`},
	{name: "predict_pair", kind: Classifier, path: "/predict", body: `{"inputs":["i love it","it is bad"]}`},
	{name: "predict_batch_raw", kind: Classifier, path: "/predict", body: `{"inputs":[["a good film"],["a bad film","not good"]],"raw_scores":true}`},
	{name: "predict_root", kind: Classifier, path: "/", body: `{"inputs":"a good film"}`},
	{name: "predict_cross_encoder", kind: CrossEncoder, path: "/predict", body: `{"inputs":["what is deep learning","deep learning is good"]}`},
	{name: "predict_scoring_sigmoid", kind: Classifier, info: func(i *Info) { i.Scoring = modelrt.ActSigmoid }, path: "/predict", body: `{"inputs":"i love this movie"}`},
	{name: "predict_400_triple", kind: Classifier, path: "/predict", body: `{"inputs":["a","b","c"]}`},
	{name: "predict_400_nested", kind: Classifier, path: "/predict", body: `{"inputs":[["a","b","c"]]}`},
	{name: "predict_400_mixed", kind: Classifier, path: "/predict", body: `{"inputs":[["a"],"b"]}`},
	{name: "predict_413_batch", kind: Classifier, cfg: Config{MaxClientBatchSize: 1}, path: "/predict", body: `{"inputs":[["a"],["b"]]}`},
	{name: "predict_422_too_long", kind: Classifier, path: "/predict", body: `{"inputs":"` + long + `"}`},
	{name: "predict_424_embedder", kind: Embedder, path: "/predict", body: `{"inputs":"a"}`},

	// /rerank
	{name: "rerank", kind: CrossEncoder, path: "/rerank", body: `{"query":"what is deep learning?","texts":["deep learning is a movie","i love search","the text"]}`},
	{name: "rerank_text_raw", kind: CrossEncoder, path: "/rerank", body: `{"query":"what is deep learning?","texts":["deep learning","a film"],"return_text":true,"raw_scores":true}`},
	{name: "rerank_scoring_identity", kind: CrossEncoder, info: func(i *Info) { i.Scoring = modelrt.ActIdentity }, path: "/rerank", body: `{"query":"what is deep learning?","texts":["deep learning","a film"]}`},
	{name: "rerank_400_missing_query", kind: CrossEncoder, path: "/rerank", body: `{"texts":["a"]}`},
	{name: "rerank_400_empty_texts", kind: CrossEncoder, path: "/rerank", body: `{"query":"a","texts":[]}`},
	{name: "rerank_400_texts_type", kind: CrossEncoder, path: "/rerank", body: `{"query":"a","texts":"b"}`},
	{name: "rerank_413_batch", kind: CrossEncoder, cfg: Config{MaxClientBatchSize: 1}, path: "/rerank", body: `{"query":"a","texts":["b","c"]}`},
	{name: "rerank_422_too_long", kind: CrossEncoder, path: "/rerank", body: `{"query":"` + long + `","texts":["b"]}`},
	{name: "rerank_424_classifier", kind: Classifier, path: "/rerank", body: `{"query":"a","texts":["b"]}`},

	// /tokenize
	{name: "tokenize", kind: Classifier, path: "/tokenize", body: `{"inputs":"I love searching!"}`},
	{name: "tokenize_no_special", kind: Embedder, path: "/tokenize", body: `{"inputs":["the movies","zebra"],"add_special_tokens":false}`},
	{name: "tokenize_400", kind: Embedder, path: "/tokenize", body: `{"inputs":{"text":"a"}}`},
	{name: "tokenize_413_batch", kind: Embedder, cfg: Config{MaxClientBatchSize: 1}, path: "/tokenize", body: `{"inputs":["a","b"]}`},

	// /v1/embeddings
	{name: "openai_float", kind: Embedder, path: "/v1/embeddings", body: `{"input":["a good movie","deep learning"],"model":"anything","encoding_format":"float"}`},
	{name: "openai_base64", kind: Embedder, path: "/v1/embeddings", body: `{"input":"a good movie","model":"anything","encoding_format":"base64"}`},
	{name: "openai_token_ids", kind: Embedder, path: "/v1/embeddings", body: `{"input":[[2,17,7,3],[2,9,3]],"model":"anything"}`},
	{name: "openai_token_ids_single", kind: Embedder, path: "/v1/embeddings", body: `{"input":[2,17,7,3],"model":"anything"}`},
	{name: "openai_400_format", kind: Embedder, path: "/v1/embeddings", body: `{"input":"a","encoding_format":"int8"}`},
	{name: "openai_400_dimensions", kind: Embedder, path: "/v1/embeddings", body: `{"input":"a","dimensions":3}`},
	{name: "openai_400_missing", kind: Embedder, path: "/v1/embeddings", body: `{"inputs":"a"}`},
	{name: "openai_413_batch", kind: Embedder, cfg: Config{MaxClientBatchSize: 1}, path: "/v1/embeddings", body: `{"input":["a","b"]}`},
	{name: "openai_422_too_long", kind: Embedder, path: "/v1/embeddings", body: `{"input":"` + long + `"}`},
	{name: "openai_424_classifier", kind: Classifier, path: "/v1/embeddings", body: `{"input":"a"}`},
	{name: "openai_429", kind: Embedder, cfg: Config{MaxConcurrentRequests: 1}, setup: func(s *Server, _ *fakeModel) { s.admit <- struct{}{} }, path: "/v1/embeddings", body: `{"input":"a"}`},

	// /classify_tokens
	{name: "classify_tokens_simple", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":"Zoë is the Zürich film"}`},
	{name: "classify_tokens_none_batch", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":["Zoë is the Zürich film","a good movie"],"aggregation_strategy":"none"}`},
	{name: "classify_tokens_truncate", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":["` + words20 + `"],"truncate":true}`},
	{name: "classify_tokens_root", kind: TokenClassifier, path: "/", body: `{"inputs":"a movie"}`},
	{name: "classify_tokens_first", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":["searching movies is good","Zoë is the Zürich film"],"aggregation_strategy":"first"}`},
	{name: "classify_tokens_max_parameters", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":"searching movies is good","parameters":{"aggregation_strategy":"MAX"}}`},
	{name: "classify_tokens_400_strategy", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":"a","aggregation_strategy":"maximum"}`},
	{name: "classify_tokens_400_inputs", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":[["a","b"]]}`},
	{name: "classify_tokens_413_batch", kind: TokenClassifier, cfg: Config{MaxClientBatchSize: 1}, path: "/classify_tokens", body: `{"inputs":["a","b"]}`},
	{name: "classify_tokens_422_too_long", kind: TokenClassifier, path: "/classify_tokens", body: `{"inputs":"` + long + `","truncate":false}`},
	{name: "classify_tokens_424_classifier", kind: Classifier, path: "/classify_tokens", body: `{"inputs":"a"}`},
	{name: "embed_424_token_classifier", kind: TokenClassifier, path: "/embed", body: `{"inputs":"a"}`},
	{name: "predict_424_token_classifier", kind: TokenClassifier, path: "/predict", body: `{"inputs":"a"}`},
	{name: "rerank_424_token_classifier", kind: TokenClassifier, path: "/rerank", body: `{"query":"a","texts":["b"]}`},
	{name: "openai_424_token_classifier", kind: TokenClassifier, path: "/v1/embeddings", body: `{"input":"a"}`},

	// /answer (the contexts are answer_test.go's)
	{name: "answer_single", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"what is it?","context":"` + zoeLoves + `"}}`},
	{name: "answer_top_k", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"what is it?","context":"` + zoeLoves + `"},"parameters":{"top_k":2}}`},
	{name: "answer_list", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":[{"question":"what is it?","context":"` + zoeLoves + `"},{"question":"what is it?","context":"` + zoeLovesIt + `"}],"align_to_words":false}`},
	{name: "answer_windows", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"what?","context":"` + longContext + `"},"parameters":{"max_seq_len":10,"doc_stride":2,"top_k":3}}`},
	{name: "answer_impossible", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"what is it?","context":"` + zoeLives + `"},"parameters":{"handle_impossible_answer":true,"top_k":2}}`},
	{name: "answer_root", kind: QuestionAnswerer, path: "/", body: `{"inputs":{"question":"what is it?","context":"` + zoeLovesIt + `"}}`},
	{name: "answer_400_empty_question", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"","context":"a"}}`},
	{name: "answer_400_inputs", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":"what is it?"}`},
	{name: "answer_400_doc_stride", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"a","context":"b"},"parameters":{"doc_stride":8,"max_seq_len":8}}`},
	{name: "answer_400_top_k", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"a","context":"b"},"parameters":{"top_k":0}}`},
	{name: "answer_413_batch", kind: QuestionAnswerer, cfg: Config{MaxClientBatchSize: 1}, path: "/answer", body: `{"inputs":[{"question":"a","context":"b"},{"question":"a","context":"b"}]}`},
	{name: "answer_413_windows", kind: QuestionAnswerer, cfg: Config{MaxClientBatchSize: 1, MaxBatchTokens: 16}, path: "/answer", body: `{"inputs":{"question":"what?","context":"` + longContext + `"},"parameters":{"max_seq_len":10,"doc_stride":2}}`},
	{name: "answer_422_max_seq_len", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"a","context":"b"},"parameters":{"max_seq_len":17}}`},
	{name: "answer_422_no_room", kind: QuestionAnswerer, path: "/answer", body: `{"inputs":{"question":"what is deep learning? what is a good movie?","context":"a good movie"}}`},
	{name: "answer_424_classifier", kind: Classifier, path: "/answer", body: `{"inputs":{"question":"a","context":"b"}}`},
	{name: "answer_500_nan", kind: QuestionAnswerer, setup: func(_ *Server, m *fakeModel) { m.nan = true }, path: "/answer", body: `{"inputs":{"question":"a","context":"b"}}`},
	{name: "embed_424_question_answerer", kind: QuestionAnswerer, path: "/embed", body: `{"inputs":"a"}`},
	{name: "predict_424_question_answerer", kind: QuestionAnswerer, path: "/predict", body: `{"inputs":"a"}`},
	{name: "rerank_424_question_answerer", kind: QuestionAnswerer, path: "/rerank", body: `{"query":"a","texts":["b"]}`},
	{name: "classify_tokens_424_question_answerer", kind: QuestionAnswerer, path: "/classify_tokens", body: `{"inputs":"a"}`},
	{name: "openai_424_question_answerer", kind: QuestionAnswerer, path: "/v1/embeddings", body: `{"input":"a"}`},

	// /embed_sparse (the fake's weights are sparseWeight's)
	{name: "embed_sparse_single", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":"a good movie"}`},
	{name: "embed_sparse_list", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":["the the the","what is deep learning?",[5]]}`},
	{name: "embed_sparse_truncate_left", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":"` + words20 + `","truncate":true,"truncation_direction":"left"}`},
	{name: "embed_sparse_prompt", kind: SparseEmbedder, info: withPrompts, path: "/embed_sparse", body: `{"inputs":"a movie","prompt_name":"query"}`},
	{name: "embed_sparse_normalize_ignored", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":"a movie","normalize":"yes"}`},
	{name: "embed_sparse_root", kind: SparseEmbedder, path: "/", body: `{"inputs":"a movie"}`},
	{name: "embed_sparse_400_missing", kind: SparseEmbedder, path: "/embed_sparse", body: `{"input":"a movie"}`},
	{name: "embed_sparse_400_truncation_direction", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":"a","truncation_direction":"Up"}`},
	{name: "embed_sparse_413_batch", kind: SparseEmbedder, cfg: Config{MaxClientBatchSize: 2}, path: "/embed_sparse", body: `{"inputs":["a","the","it"]}`},
	{name: "embed_sparse_422_too_long", kind: SparseEmbedder, path: "/embed_sparse", body: `{"inputs":"` + long + `","truncate":false}`},
	{name: "embed_sparse_422_prompt_unknown", kind: SparseEmbedder, info: withPrompts, path: "/embed_sparse", body: `{"inputs":"a","prompt_name":"doc"}`},
	{name: "embed_sparse_500_nan", kind: SparseEmbedder, setup: func(_ *Server, m *fakeModel) { m.nan = true }, path: "/embed_sparse", body: `{"inputs":"a"}`},
	{name: "embed_sparse_424_embedder", kind: Embedder, path: "/embed_sparse", body: `{"inputs":"a"}`},
	{name: "embed_sparse_424_token_classifier", kind: TokenClassifier, path: "/embed_sparse", body: `{"inputs":"a"}`},
	{name: "embed_sparse_dense", kind: SparseEmbedder, path: "/embed", body: `{"inputs":"a good movie","normalize":false}`},
	{name: "embed_424_sparse_normalize", kind: SparseEmbedder, path: "/embed", body: `{"inputs":"a good movie"}`},
	{name: "embed_424_sparse_normalize_true", kind: SparseEmbedder, path: "/embed", body: `{"inputs":["a good movie"],"normalize":true}`},
	{name: "openai_424_sparse", kind: SparseEmbedder, path: "/v1/embeddings", body: `{"input":"a"}`},
	{name: "predict_424_sparse", kind: SparseEmbedder, path: "/predict", body: `{"inputs":"a"}`},
	{name: "rerank_424_sparse", kind: SparseEmbedder, path: "/rerank", body: `{"query":"a","texts":["b"]}`},
	{name: "classify_tokens_424_sparse", kind: SparseEmbedder, path: "/classify_tokens", body: `{"inputs":"a"}`},
	{name: "answer_424_sparse", kind: SparseEmbedder, path: "/answer", body: `{"inputs":{"question":"a","context":"b"}}`},

	// /similarity (similarity_test.go works the cosines out by hand)
	{name: "similarity", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a good movie","sentences":["a good movie","the film was bad!","i love it"]}}`},
	{name: "similarity_parameters", kind: Embedder, info: withPrompts, path: "/similarity", body: `{"inputs":{"source_sentence":"` + words20 + `","sentences":["` + words20 + `","a movie"]},"parameters":{"truncate":true,"truncation_direction":"Left","prompt_name":"query"}}`},
	{name: "similarity_parameters_null", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a good movie","sentences":["i love it"]},"parameters":null}`},
	{name: "similarity_sparse", kind: SparseEmbedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a good movie","sentences":["the the the","a good movie"]}}`},
	{name: "similarity_400_empty_sentences", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":[]}}`},
	{name: "similarity_400_missing_source", kind: Embedder, path: "/similarity", body: `{"inputs":{"sentences":["a"]}}`},
	{name: "similarity_400_missing_sentences", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":null}}`},
	{name: "similarity_400_inputs", kind: Embedder, path: "/similarity", body: `{"inputs":"a good movie"}`},
	{name: "similarity_400_token_ids", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":[[5,6]]}}`},
	{name: "similarity_400_parameters", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]},"parameters":"truncate"}`},
	{name: "similarity_400_truncation_direction", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]},"parameters":{"truncation_direction":"Up"}}`},
	{name: "similarity_413_batch", kind: Embedder, cfg: Config{MaxClientBatchSize: 2}, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["the","it"]}}`},
	{name: "similarity_422_too_long", kind: Embedder, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["` + long + `"]},"parameters":{"truncate":false}}`},
	{name: "similarity_422_prompt_unknown", kind: Embedder, info: withPrompts, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]},"parameters":{"prompt_name":"doc"}}`},
	{name: "similarity_424_classifier", kind: Classifier, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]}}`},
	{name: "similarity_424_token_classifier", kind: TokenClassifier, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]}}`},
	{name: "similarity_500_nan", kind: Embedder, setup: func(_ *Server, m *fakeModel) { m.nan = true }, path: "/similarity", body: `{"inputs":{"source_sentence":"a","sentences":["b"]}}`},

	// /vertex (vertex_test.go checks each prediction is its endpoint's answer)
	{name: "vertex_embed", kind: Embedder, path: "/vertex", body: `{"instances":[{"inputs":"a good movie"},{"inputs":["i love it","a film"],"normalize":false}]}`},
	{name: "vertex_rerank", kind: CrossEncoder, path: "/vertex", body: `{"instances":[{"query":"what is deep learning?","texts":["deep learning","a film"]},{"inputs":["what is deep learning","deep learning is good"]}]}`},
	{name: "vertex_classifier", kind: Classifier, path: "/vertex", body: `{"instances":[{"inputs":"i love this movie"},{"inputs":[["a good film"],["a bad film","not good"]],"raw_scores":true}]}`},
	{name: "vertex_sparse", kind: SparseEmbedder, path: "/vertex", body: `{"instances":[{"inputs":"a good movie"},{"inputs":["the the the",[5]]}]}`},
	{name: "vertex_token_classifier", kind: TokenClassifier, path: "/vertex", body: `{"instances":[{"inputs":"Zoë is the Zürich film"},{"inputs":["a good movie"],"aggregation_strategy":"none"}]}`},
	{name: "vertex_answer", kind: QuestionAnswerer, path: "/vertex", body: `{"instances":[{"inputs":{"question":"what is it?","context":"` + zoeLoves + `"}}]}`},
	{name: "vertex_empty", kind: Embedder, path: "/vertex", body: `{"instances":[]}`},
	{name: "vertex_400_missing", kind: Embedder, path: "/vertex", body: `{"inputs":"a"}`},
	{name: "vertex_400_instances", kind: Embedder, path: "/vertex", body: `{"instances":{"inputs":"a"}}`},
	{name: "vertex_400_instance", kind: Embedder, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"input":"b"}]}`},
	{name: "vertex_400_instance_not_object", kind: Embedder, path: "/vertex", body: `{"instances":["a movie"]}`},
	{name: "vertex_422_first_error", kind: Embedder, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"inputs":"` + long + `","truncate":false},{"input":"b"}]}`},
	{name: "vertex_413_instance", kind: Embedder, cfg: Config{MaxClientBatchSize: 1}, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"inputs":["a","b"]}]}`},
	{name: "vertex_413_instances", kind: Embedder, cfg: Config{MaxConcurrentRequests: 2}, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"inputs":"b"},{"inputs":"c"}]}`},
	{name: "vertex_429", kind: Embedder, cfg: Config{MaxConcurrentRequests: 3}, setup: func(s *Server, _ *fakeModel) { s.admit <- struct{}{} }, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"inputs":"b"},{"inputs":"c"}]}`},
	{name: "vertex_424_rerank_embedder", kind: Embedder, path: "/vertex", body: `{"instances":[{"inputs":"a"},{"query":"a","texts":["b"]}]}`},
	{name: "vertex_500_nan", kind: Embedder, setup: func(_ *Server, m *fakeModel) { m.nan = true }, path: "/vertex", body: `{"instances":[{"inputs":"a"}]}`},

	// Aliases: SageMaker's /invocations (as POST /), OpenAI's /embeddings
	// without /v1, GET / and /ping (as /health).
	{name: "invocations_embed", kind: Embedder, path: "/invocations", body: `{"inputs":"a movie"}`},
	{name: "invocations_classifier", kind: Classifier, path: "/invocations", body: `{"inputs":"a good film"}`},
	{name: "invocations_sparse", kind: SparseEmbedder, path: "/invocations", body: `{"inputs":"a movie"}`},
	{name: "embeddings", kind: Embedder, path: "/embeddings", body: `{"input":["a good movie","deep learning"],"model":"anything"}`},
	{name: "embeddings_424_classifier", kind: Classifier, path: "/embeddings", body: `{"input":"a"}`},
	{name: "ping", kind: Embedder, method: "GET", path: "/ping"},
	{name: "ping_503_draining", kind: Embedder, setup: func(s *Server, _ *fakeModel) { s.draining.Store(true) }, method: "GET", path: "/ping"},
	{name: "health_root", kind: Classifier, method: "GET", path: "/"},
	{name: "health_root_503_draining", kind: Classifier, setup: func(s *Server, _ *fakeModel) { s.draining.Store(true) }, method: "GET", path: "/"},
	{name: "root_405_put", kind: Embedder, method: "PUT", path: "/"},

	// /health, /info
	{name: "health", kind: Embedder, method: "GET", path: "/health"},
	{name: "health_503_draining", kind: Embedder, setup: func(s *Server, _ *fakeModel) { s.draining.Store(true) }, method: "GET", path: "/health"},
	{name: "info_embedder", kind: Embedder, cfg: Config{Version: "test", TokenizationWorkers: 2}, method: "GET", path: "/info"},
	{name: "info_classifier", kind: Classifier, cfg: Config{Version: "test", TokenizationWorkers: 2, MaxBatchRequests: 8, ServedModelName: "sst2"}, method: "GET", path: "/info"},
	{name: "info_cross_encoder", kind: CrossEncoder, cfg: Config{Version: "test", TokenizationWorkers: 2}, method: "GET", path: "/info"},
	{name: "info_token_classifier", kind: TokenClassifier, cfg: Config{Version: "test", TokenizationWorkers: 2}, method: "GET", path: "/info"},
	{name: "info_question_answerer", kind: QuestionAnswerer, cfg: Config{Version: "test", TokenizationWorkers: 2}, method: "GET", path: "/info"},
	{name: "info_sparse_embedder", kind: SparseEmbedder, cfg: Config{Version: "test", TokenizationWorkers: 2}, method: "GET", path: "/info"},
	{name: "unknown_404", kind: Embedder, method: "GET", path: "/nope"},
}

// goldenHeaders are the response headers the golden files hold (the
// x-*-time ones vary from run to run).
var goldenHeaders = []string{"Content-Type", "Retry-After", "Allow", "X-Compute-Tokens"}

func TestAPIGolden(t *testing.T) {
	for _, c := range apiCases {
		t.Run(c.name, func(t *testing.T) {
			m := newFake(t, c.kind)
			if c.info != nil {
				c.info(&m.info)
			}
			s := newTestServer(t, m, c.cfg)
			if c.setup != nil {
				c.setup(s, m)
			}
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, c.path, strings.NewReader(c.body))
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			got := goldenRecord(t, rec)
			path := filepath.Join("testdata", "golden", c.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s %s:\ngot  %s\nwant %s", method, c.path, c.body, got, want)
			}
		})
	}
}

// goldenRecord renders a response as the golden files hold it: status,
// the goldenHeaders present, and the body (as JSON when it is JSON).
func goldenRecord(t *testing.T, rec *httptest.ResponseRecorder) []byte {
	t.Helper()
	headers := map[string]string{}
	for _, h := range goldenHeaders {
		if v := rec.Header().Get(h); v != "" {
			headers[h] = v
		}
	}
	var body any = rec.Body.String()
	var parsed any
	if json.Unmarshal(rec.Body.Bytes(), &parsed) == nil {
		body = parsed
	}
	if rec.Code >= 400 && rec.Header().Get("Content-Type") == "application/json" {
		checkErrorShape(t, rec.Body.Bytes())
	}
	out, err := json.MarshalIndent(map[string]any{"status": rec.Code, "headers": headers, "body": body}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// checkErrorShape checks an error body has TEI's fields (or, from the
// OpenAI route, OpenAI's) and nothing else.
func checkErrorShape(t *testing.T, body []byte) {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	_, tei := fields["error_type"]
	_, oai := fields["type"]
	switch {
	case tei && len(fields) == 2 && fields["error"] != nil:
	case oai && len(fields) == 3 && fields["message"] != nil && fields["code"] != nil:
	default:
		t.Errorf("error body %s has neither TEI's {error, error_type} nor OpenAI's {message, code, type}", body)
	}
}
