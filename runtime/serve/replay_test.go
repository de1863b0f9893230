package serve

import (
	"context"
	"encoding/json"
	"testing"
)

// replays are request bodies byte for byte as client libraries send them
// to TEI (and to OpenAI-compatible servers): field order, spacing and
// escaping as their JSON encoders write them. Python's json.dumps (used
// by requests, and by httpx before 0.28) puts spaces after ':' and ',' and
// escapes non-ASCII; httpx 0.28+ writes compact UTF-8.
var replays = []struct {
	client string
	kind   Kind
	path   string
	body   string
	n      int // answers expected (embeddings, predictions, ranks)
}{
	{"huggingface_hub InferenceClient.feature_extraction(text) (requests, to the model URL)", Embedder, "/",
		`{"inputs": "Today is a sunny day and I will get some ice cream."}`, 1},
	{"huggingface_hub feature_extraction(text, normalize=True, truncate=True, truncation_direction='Right')", Embedder, "/",
		`{"inputs": "caf\u00e9 au lait", "normalize": true, "truncate": true, "truncation_direction": "Right"}`, 1},
	{"langchain HuggingFaceEndpointEmbeddings.embed_documents (feature_extraction with a list)", Embedder, "/",
		`{"inputs": ["deep learning", "a good movie"]}`, 2},
	{"llama-index TextEmbeddingsInference (httpx >= 0.28)", Embedder, "/embed",
		`{"inputs":["what is deep learning?","the film was bad"],"truncate":true}`, 2},
	{"llama-index TextEmbeddingsInference (httpx < 0.28)", Embedder, "/embed",
		`{"inputs": ["what is deep learning?", "the film was bad"], "truncate": true}`, 2},
	{"openai-python embeddings.create(input=[...], model=...) (encoding_format defaults to base64)", Embedder, "/v1/embeddings",
		`{"input":["a good movie","deep learning"],"model":"text-embedding-3-small","encoding_format":"base64"}`, 2},
	{"openai-python embeddings.create(input=str, encoding_format='float', user=...)", Embedder, "/v1/embeddings",
		`{"input":"a good movie","model":"sqc","encoding_format":"float","user":"user-1234"}`, 1},
	{"openai-node embeddings.create", Embedder, "/v1/embeddings",
		`{"model":"sqc","input":"café","encoding_format":"base64"}`, 1},
	{"llama-index TextEmbeddingsInferenceRerank (postprocessor-tei-rerank)", CrossEncoder, "/rerank",
		`{"query":"what is deep learning?","texts":["deep learning is good","i love it"],"truncate":true}`, 2},
	{"TEI README curl /rerank", CrossEncoder, "/rerank",
		`{"query":"What is Deep Learning?", "texts": ["Deep Learning is not...", "Deep learning is..."]}`, 2},
	{"TEI README curl /predict (pair)", Classifier, "/predict",
		`{"inputs":["I like you.", "I love you."]}`, 2},
	{"huggingface_hub text_classification(text) (to the model URL)", Classifier, "/",
		`{"inputs": "I like you. I love you", "parameters": {}}`, 2},
	{"TEI README curl /tokenize", Embedder, "/tokenize",
		`{"inputs":"test"}`, 1},
	{"TEI README curl /embed_sparse", SparseEmbedder, "/embed_sparse",
		`{"inputs":"I like you."}`, 1},
}

func TestClientReplays(t *testing.T) {
	for _, r := range replays {
		t.Run(r.client, func(t *testing.T) {
			s := newTestServer(t, newFake(t, r.kind), Config{})
			code, body := post(s, context.Background(), r.path, r.body)
			if code != 200 {
				t.Fatalf("POST %s %s: %d %s", r.path, r.body, code, body)
			}
			var n int
			switch r.path {
			case "/v1/embeddings":
				var resp openAIResponse
				if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Object != "list" {
					t.Fatalf("%s: not an OpenAI embedding list: %v", body, err)
				}
				n = len(resp.Data)
			default:
				var list []json.RawMessage
				if err := json.Unmarshal([]byte(body), &list); err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				n = len(list)
			}
			if n != r.n {
				t.Errorf("%d answers, want %d: %s", n, r.n, body)
			}
		})
	}
}
