package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// The request bodies, as TEI and OpenAI define them. Unknown fields are
// ignored, as TEI's serde structs do; a field of the wrong type, a
// missing required field or trailing data after the object is a 400.

// input is one input of an embedding request (TEI's InputType): a text,
// or token ids the model runs as given (no special tokens added).
type input struct {
	Text string
	IDs  []int64 // non-nil: token ids
}

// embedRequest is POST /embed (and the embedding form of POST /), and
// POST /embed_sparse, which has no normalize.
type embedRequest struct {
	Inputs     []input
	Truncate   *bool // nil: the server's --auto-truncate
	Left       bool  // truncation_direction "Left": drop the first tokens
	Normalize  bool  // L2-normalise the vectors (default true)
	PromptName *string
}

// predictRequest is POST /predict: each input a text or a pair.
type predictRequest struct {
	Inputs    [][]string // one or two texts each
	Single    bool       // inputs was one text or one pair, not a list
	Truncate  *bool
	RawScores bool
}

// rerankRequest is POST /rerank.
type rerankRequest struct {
	Query      string
	Texts      []string
	Truncate   *bool
	RawScores  bool
	ReturnText bool
}

// similarityRequest is POST /similarity (TEI's SimilarityRequest): a
// source sentence to compare with each of Sentences, and /embed's
// truncation and prompt, which TEI reads from "parameters" only.
type similarityRequest struct {
	Source     string
	Sentences  []string
	Truncate   *bool
	Left       bool
	PromptName *string
}

// classifyTokensRequest is POST /classify_tokens.
type classifyTokensRequest struct {
	Inputs   []string
	Single   bool // inputs was one text, not a list
	Truncate *bool
	// Strategy is aggregation_strategy: "simple" (the default), "first",
	// "average" and "max" answer entities, "none" every token's own tag.
	Strategy modelrt.Aggregation
}

// qaInput is one question about one context.
type qaInput struct {
	Question, Context string
}

// answerRequest is POST /answer: the Inference API's question-answering
// task, its parameters as transformers' QuestionAnsweringPipeline names
// them; nil is the pipeline's default.
type answerRequest struct {
	Inputs                                   []qaInput
	Single                                   bool // inputs was one {question, context}, not a list
	TopK, DocStride, MaxAnswerLen, MaxSeqLen *int
	HandleImpossible, AlignToWords           *bool
}

// tokenizeRequest is POST /tokenize.
type tokenizeRequest struct {
	Inputs           []string
	AddSpecialTokens bool // default true
}

// openAIRequest is POST /v1/embeddings.
type openAIRequest struct {
	Input      []input
	Model      string
	Base64     bool // encoding_format "base64"
	Dimensions int  // 0: the model's
}

// decodeObject unmarshals body, a JSON object, into v; the message of
// the 400 says what is wrong.
func decodeObject(body []byte, v any) *apiError {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return badRequest("empty request body: want a JSON object")
	}
	if body[0] != '{' {
		return badRequest("request body is not a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(fmt.Sprintf("invalid request body: field %q: want %s, got JSON %s", te.Field, te.Type, te.Value))
		}
		return badRequest("invalid request body: " + err.Error())
	}
	return nil
}

// required is the JSON value of field trimmed, or TEI's missing-field
// error when it is absent or null.
func required(field string, raw json.RawMessage) (json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest(fmt.Sprintf("missing field `%s`", field))
	}
	return raw, nil
}

// textOrList decodes a string or a list of strings (TEI's Input); single
// reports the first form.
func textOrList(field string, raw json.RawMessage) (texts []string, single bool, err *apiError) {
	raw, err = required(field, raw)
	if err != nil {
		return nil, false, err
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, true, nil
	}
	if json.Unmarshal(raw, &texts) == nil && texts != nil {
		return texts, false, nil
	}
	return nil, false, badRequest(fmt.Sprintf("`%s`: want a string or a list of strings", field))
}

// inputsOf decodes TEI's Input (and OpenAI's input): a text, a list of
// token ids, or a list whose items are texts or lists of token ids.
func inputsOf(field string, raw json.RawMessage) ([]input, *apiError) {
	raw, err := required(field, raw)
	if err != nil {
		return nil, err
	}
	want := badRequest(fmt.Sprintf("`%s`: want a string, a list of token ids, or a list of strings and lists of token ids", field))
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, want
		}
		return []input{{Text: s}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, want
	}
	// A list of numbers is one input's ids, as TEI's untagged enum reads it.
	if len(items) > 0 && isNumber(items[0]) {
		ids, ok := tokenIDs(raw)
		if !ok {
			return nil, want
		}
		return []input{{IDs: ids}}, nil
	}
	out := make([]input, len(items))
	for i, item := range items {
		switch item = bytes.TrimSpace(item); {
		case len(item) > 0 && item[0] == '"':
			if json.Unmarshal(item, &out[i].Text) != nil {
				return nil, want
			}
		case len(item) > 0 && item[0] == '[':
			ids, ok := tokenIDs(item)
			if !ok {
				return nil, want
			}
			out[i].IDs = ids
		default:
			return nil, want
		}
	}
	return out, nil
}

func isNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// tokenIDs decodes a JSON list of token ids: integers in 0..2^32-1 (TEI's
// u32), never nil.
func tokenIDs(raw json.RawMessage) ([]int64, bool) {
	var nums []json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&nums) != nil {
		return nil, false
	}
	ids := make([]int64, len(nums))
	for i, n := range nums {
		v, err := strconv.ParseUint(string(n), 10, 32)
		if err != nil {
			return nil, false
		}
		ids[i] = int64(v)
	}
	return ids, true
}

// embedFields are the fields /embed and /embed_sparse share (TEI's
// EmbedRequest without normalize is its EmbedSparseRequest).
type embedFields struct {
	Inputs              json.RawMessage `json:"inputs"`
	Truncate            *bool           `json:"truncate"`
	TruncationDirection *string         `json:"truncation_direction"`
	PromptName          *string         `json:"prompt_name"`
}

// request reads the shared fields into an embedRequest (Normalize unset).
func (f *embedFields) request() (embedRequest, *apiError) {
	r := embedRequest{Truncate: f.Truncate, PromptName: f.PromptName}
	var err *apiError
	if r.Left, err = truncatesLeft("truncation_direction", f.TruncationDirection); err != nil {
		return embedRequest{}, err
	}
	if r.Inputs, err = inputsOf("inputs", f.Inputs); err != nil {
		return embedRequest{}, err
	}
	return r, nil
}

// truncatesLeft reads TEI's TruncationDirection, "Left" or "Right"
// (serde's names; any case here), from field; absent is Right.
func truncatesLeft(field string, d *string) (bool, *apiError) {
	switch {
	case d == nil, strings.EqualFold(*d, "right"):
		return false, nil
	case strings.EqualFold(*d, "left"):
		return true, nil
	}
	return false, badRequest(fmt.Sprintf("`%s` %q: want \"Left\" or \"Right\"", field, *d))
}

func decodeEmbed(body []byte) (embedRequest, *apiError) {
	var raw struct {
		embedFields
		Normalize *bool `json:"normalize"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return embedRequest{}, err
	}
	r, err := raw.request()
	if err != nil {
		return embedRequest{}, err
	}
	r.Normalize = raw.Normalize == nil || *raw.Normalize
	return r, nil
}

// decodeEmbedSparse reads TEI's EmbedSparseRequest: /embed's fields but
// normalize, which is ignored as any unknown field is (a sparse vector
// is never normalised: its weights are what it scores with).
func decodeEmbedSparse(body []byte) (embedRequest, *apiError) {
	var raw embedFields
	if err := decodeObject(body, &raw); err != nil {
		return embedRequest{}, err
	}
	return raw.request()
}

// decodePredict reads TEI's PredictInput: a string, a pair [a, b], or a
// list of [a] and [a, b] items.
func decodePredict(body []byte) (predictRequest, *apiError) {
	var raw struct {
		Inputs    json.RawMessage `json:"inputs"`
		Truncate  *bool           `json:"truncate"`
		RawScores bool            `json:"raw_scores"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return predictRequest{}, err
	}
	r := predictRequest{Truncate: raw.Truncate, RawScores: raw.RawScores}
	in, err := required("inputs", raw.Inputs)
	if err != nil {
		return r, err
	}
	const want = "`inputs`: want a string, a pair of strings [string, string] or a batch of mixed strings and pairs [[string], [string, string], ...]"
	var s string
	if json.Unmarshal(in, &s) == nil {
		r.Inputs, r.Single = [][]string{{s}}, true
		return r, nil
	}
	var flat []string
	if json.Unmarshal(in, &flat) == nil && flat != nil {
		if len(flat) == 0 || len(flat) > 2 {
			return r, badRequest(want)
		}
		r.Inputs, r.Single = [][]string{flat}, true
		return r, nil
	}
	var batch [][]string
	if json.Unmarshal(in, &batch) != nil || batch == nil {
		return r, badRequest(want)
	}
	for _, item := range batch {
		if len(item) == 0 || len(item) > 2 {
			return r, badRequest(want)
		}
	}
	r.Inputs = batch
	return r, nil
}

func decodeRerank(body []byte) (rerankRequest, *apiError) {
	var raw struct {
		Query      *string  `json:"query"`
		Texts      []string `json:"texts"`
		Truncate   *bool    `json:"truncate"`
		RawScores  bool     `json:"raw_scores"`
		ReturnText bool     `json:"return_text"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return rerankRequest{}, err
	}
	switch {
	case raw.Query == nil:
		return rerankRequest{}, badRequest("missing field `query`")
	case raw.Texts == nil:
		return rerankRequest{}, badRequest("missing field `texts`")
	}
	return rerankRequest{Query: *raw.Query, Texts: raw.Texts, Truncate: raw.Truncate, RawScores: raw.RawScores, ReturnText: raw.ReturnText}, nil
}

// decodeSimilarity reads TEI's SimilarityRequest: {"inputs":
// {"source_sentence": string, "sentences": [string, ...]}, "parameters":
// {"truncate", "truncation_direction", "prompt_name"}}, parameters and
// each of its fields optional. The sentences are texts only (TEI's are
// Strings, not /embed's token ids). An empty sentences list decodes: the
// handler refuses it, as TEI does, with its own error.
func decodeSimilarity(body []byte) (similarityRequest, *apiError) {
	var raw struct {
		Inputs     json.RawMessage `json:"inputs"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return similarityRequest{}, err
	}
	in, err := required("inputs", raw.Inputs)
	if err != nil {
		return similarityRequest{}, err
	}
	var inputs struct {
		SourceSentence *string  `json:"source_sentence"`
		Sentences      []string `json:"sentences"`
	}
	if in[0] != '{' || json.Unmarshal(in, &inputs) != nil {
		return similarityRequest{}, badRequest("`inputs`: want an object {\"source_sentence\": string, \"sentences\": [string, ...]}")
	}
	switch {
	case inputs.SourceSentence == nil:
		return similarityRequest{}, badRequest("missing field `inputs.source_sentence`")
	case inputs.Sentences == nil:
		return similarityRequest{}, badRequest("missing field `inputs.sentences`")
	}
	r := similarityRequest{Source: *inputs.SourceSentence, Sentences: inputs.Sentences}
	if p := bytes.TrimSpace(raw.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		var params struct {
			Truncate            *bool   `json:"truncate"`
			TruncationDirection *string `json:"truncation_direction"`
			PromptName          *string `json:"prompt_name"`
		}
		if p[0] != '{' || json.Unmarshal(p, &params) != nil {
			return similarityRequest{}, badRequest("`parameters`: want an object {\"truncate\": bool, \"truncation_direction\": \"Left\" or \"Right\", \"prompt_name\": string}")
		}
		var err *apiError
		if r.Left, err = truncatesLeft("parameters.truncation_direction", params.TruncationDirection); err != nil {
			return similarityRequest{}, err
		}
		r.Truncate, r.PromptName = params.Truncate, params.PromptName
	}
	return r, nil
}

// decodeVertex reads Vertex AI's prediction request, {"instances": [...]}:
// each instance is kept as it came, the body of the request it is
// (Server.vertex decodes it). No instances is no predictions, as TEI
// answers it.
func decodeVertex(body []byte) ([]json.RawMessage, *apiError) {
	var raw struct {
		Instances json.RawMessage `json:"instances"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return nil, err
	}
	in, err := required("instances", raw.Instances)
	if err != nil {
		return nil, err
	}
	var instances []json.RawMessage
	if in[0] != '[' || json.Unmarshal(in, &instances) != nil {
		return nil, badRequest("`instances`: want a list of requests")
	}
	return instances, nil
}

// decodeClassifyTokens reads a token classification request: inputs
// (a text or a list of texts), truncate, and transformers'
// aggregation_strategy (modelrt.ParseAggregation: "simple", "none",
// "first", "average", "max").
func decodeClassifyTokens(body []byte) (classifyTokensRequest, *apiError) {
	var raw struct {
		Inputs              json.RawMessage `json:"inputs"`
		Truncate            *bool           `json:"truncate"`
		AggregationStrategy *string         `json:"aggregation_strategy"`
		// Parameters is where huggingface_hub's InferenceClient (the
		// Inference API's request shape) puts the strategy.
		Parameters *struct {
			AggregationStrategy *string `json:"aggregation_strategy"`
		} `json:"parameters"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return classifyTokensRequest{}, err
	}
	if p := raw.Parameters; p != nil && p.AggregationStrategy != nil {
		if a := raw.AggregationStrategy; a != nil && !strings.EqualFold(*a, *p.AggregationStrategy) {
			return classifyTokensRequest{}, badRequest(fmt.Sprintf("`aggregation_strategy` %q and `parameters.aggregation_strategy` %q differ: give one", *a, *p.AggregationStrategy))
		}
		raw.AggregationStrategy = p.AggregationStrategy
	}
	inputs, single, err := textOrList("inputs", raw.Inputs)
	if err != nil {
		return classifyTokensRequest{}, err
	}
	r := classifyTokensRequest{Inputs: inputs, Single: single, Truncate: raw.Truncate, Strategy: modelrt.AggregateSimple}
	// The pipeline reads the strategy's name in any case.
	if a := raw.AggregationStrategy; a != nil {
		var perr error
		if r.Strategy, perr = modelrt.ParseAggregation(*a); perr != nil {
			return classifyTokensRequest{}, badRequest(fmt.Sprintf("`aggregation_strategy` %q: want %s", *a, modelrt.AggregationNames))
		}
	}
	return r, nil
}

// qaParams are the question-answering parameters, at the top level of a
// request or in its "parameters".
type qaParams struct {
	TopK                   *int  `json:"top_k"`
	DocStride              *int  `json:"doc_stride"`
	MaxAnswerLen           *int  `json:"max_answer_len"`
	MaxSeqLen              *int  `json:"max_seq_len"`
	HandleImpossibleAnswer *bool `json:"handle_impossible_answer"`
	AlignToWords           *bool `json:"align_to_words"`
}

// decodeAnswer reads a question answering request: inputs, one
// {"question", "context"} or a list of them, and the pipeline's
// parameters (top_k, doc_stride, max_answer_len, max_seq_len,
// handle_impossible_answer, align_to_words), at the top level or in
// "parameters" (huggingface_hub's InferenceClient puts them there), as
// /classify_tokens reads aggregation_strategy. Their ranges are checked
// here; how they fit the model and each other, by the handler
// (Server.qaOptions).
func decodeAnswer(body []byte) (answerRequest, *apiError) {
	var raw struct {
		Inputs json.RawMessage `json:"inputs"`
		qaParams
		Parameters *qaParams `json:"parameters"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return answerRequest{}, err
	}
	var r answerRequest
	p := raw.qaParams
	if q := raw.Parameters; q != nil {
		if e := cmp.Or(
			either("top_k", &p.TopK, q.TopK), either("doc_stride", &p.DocStride, q.DocStride),
			either("max_answer_len", &p.MaxAnswerLen, q.MaxAnswerLen), either("max_seq_len", &p.MaxSeqLen, q.MaxSeqLen),
			either("handle_impossible_answer", &p.HandleImpossibleAnswer, q.HandleImpossibleAnswer),
			either("align_to_words", &p.AlignToWords, q.AlignToWords),
		); e != nil {
			return r, e
		}
	}
	for _, c := range []struct {
		name string
		v    *int
		min  int
	}{{"top_k", p.TopK, 1}, {"doc_stride", p.DocStride, 0}, {"max_answer_len", p.MaxAnswerLen, 1}, {"max_seq_len", p.MaxSeqLen, 1}} {
		if c.v != nil && *c.v < c.min {
			want := "a positive number"
			if c.min == 0 {
				want = "a number not below 0"
			}
			return r, badRequest(fmt.Sprintf("`%s` %d: want %s", c.name, *c.v, want))
		}
	}
	r.TopK, r.DocStride, r.MaxAnswerLen, r.MaxSeqLen = p.TopK, p.DocStride, p.MaxAnswerLen, p.MaxSeqLen
	r.HandleImpossible, r.AlignToWords = p.HandleImpossibleAnswer, p.AlignToWords

	in, err := required("inputs", raw.Inputs)
	if err != nil {
		return r, err
	}
	const want = "`inputs`: want an object {\"question\": string, \"context\": string} or a list of them"
	var items []json.RawMessage
	switch in[0] {
	case '{':
		items, r.Single = []json.RawMessage{in}, true
	case '[':
		if json.Unmarshal(in, &items) != nil {
			return r, badRequest(want)
		}
	default:
		return r, badRequest(want)
	}
	r.Inputs = make([]qaInput, len(items))
	for i, item := range items {
		var q struct {
			Question *string `json:"question"`
			Context  *string `json:"context"`
		}
		if item = bytes.TrimSpace(item); len(item) == 0 || item[0] != '{' || json.Unmarshal(item, &q) != nil {
			return r, badRequest(want)
		}
		field := "inputs"
		if !r.Single {
			field = fmt.Sprintf("inputs[%d]", i)
		}
		// The pipeline refuses a missing or empty question or context.
		switch {
		case q.Question == nil:
			return r, badRequest(fmt.Sprintf("missing field `%s.question`", field))
		case q.Context == nil:
			return r, badRequest(fmt.Sprintf("missing field `%s.context`", field))
		case *q.Question == "":
			return r, badRequest(fmt.Sprintf("`%s.question` cannot be empty", field))
		case *q.Context == "":
			return r, badRequest(fmt.Sprintf("`%s.context` cannot be empty", field))
		}
		r.Inputs[i] = qaInput{Question: *q.Question, Context: *q.Context}
	}
	return r, nil
}

// either sets *top to param when the request gives param, a parameter
// of "parameters"; given at the top level too, both must be equal.
func either[T comparable](name string, top **T, param *T) *apiError {
	switch {
	case param == nil:
	case *top == nil:
		*top = param
	case **top != *param:
		return badRequest(fmt.Sprintf("`%s` %v and `parameters.%s` %v differ: give one", name, **top, name, *param))
	}
	return nil
}

func decodeTokenize(body []byte) (tokenizeRequest, *apiError) {
	var raw struct {
		Inputs           json.RawMessage `json:"inputs"`
		AddSpecialTokens *bool           `json:"add_special_tokens"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return tokenizeRequest{}, err
	}
	inputs, _, err := textOrList("inputs", raw.Inputs)
	if err != nil {
		return tokenizeRequest{}, err
	}
	return tokenizeRequest{Inputs: inputs, AddSpecialTokens: raw.AddSpecialTokens == nil || *raw.AddSpecialTokens}, nil
}

func decodeOpenAI(body []byte) (openAIRequest, *apiError) {
	var raw struct {
		Input          json.RawMessage `json:"input"`
		Model          string          `json:"model"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		User           *string         `json:"user"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return openAIRequest{}, err
	}
	input, err := inputsOf("input", raw.Input)
	if err != nil {
		return openAIRequest{}, err
	}
	r := openAIRequest{Input: input, Model: raw.Model}
	if raw.EncodingFormat != nil {
		switch *raw.EncodingFormat {
		case "float":
		case "base64":
			r.Base64 = true
		default:
			return r, badRequest(fmt.Sprintf("`encoding_format` %q: want \"float\" or \"base64\"", *raw.EncodingFormat))
		}
	}
	if raw.Dimensions != nil {
		if *raw.Dimensions < 1 {
			return r, badRequest(fmt.Sprintf("`dimensions` %d: want a positive number", *raw.Dimensions))
		}
		r.Dimensions = *raw.Dimensions
	}
	return r, nil
}
