package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The request bodies, as TEI and OpenAI define them. Unknown fields are
// ignored, as TEI's serde structs do; a field of the wrong type, a
// missing required field or trailing data after the object is a 400.

// embedRequest is POST /embed (and the embedding form of POST /).
type embedRequest struct {
	Inputs    []string
	Truncate  *bool // nil: the server's --auto-truncate
	Normalize bool  // L2-normalise the vectors (default true)
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

// tokenizeRequest is POST /tokenize.
type tokenizeRequest struct {
	Inputs           []string
	AddSpecialTokens bool // default true
}

// openAIRequest is POST /v1/embeddings.
type openAIRequest struct {
	Input      []string
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

// textOrList decodes a string or a list of strings (TEI's Input); single
// reports the first form.
func textOrList(field string, raw json.RawMessage) (texts []string, single bool, err *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, false, badRequest(fmt.Sprintf("missing field `%s`", field))
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, true, nil
	}
	if json.Unmarshal(raw, &texts) == nil && texts != nil {
		return texts, false, nil
	}
	var ids []json.Number
	var idLists [][]json.Number
	if json.Unmarshal(raw, &ids) == nil || json.Unmarshal(raw, &idLists) == nil {
		return nil, false, badRequest(fmt.Sprintf("`%s`: token ids are not accepted, send text", field))
	}
	return nil, false, badRequest(fmt.Sprintf("`%s`: want a string or a list of strings", field))
}

func decodeEmbed(body []byte) (embedRequest, *apiError) {
	var raw struct {
		Inputs              json.RawMessage `json:"inputs"`
		Truncate            *bool           `json:"truncate"`
		Normalize           *bool           `json:"normalize"`
		TruncationDirection *string         `json:"truncation_direction"`
		PromptName          *string         `json:"prompt_name"`
	}
	if err := decodeObject(body, &raw); err != nil {
		return embedRequest{}, err
	}
	// huggingface_hub's feature_extraction sends these two when asked to.
	if d := raw.TruncationDirection; d != nil && !strings.EqualFold(*d, "right") {
		return embedRequest{}, badRequest(fmt.Sprintf("`truncation_direction` %q: only \"Right\" is supported", *d))
	}
	if raw.PromptName != nil {
		return embedRequest{}, badRequest(fmt.Sprintf("`prompt_name` %q: the model has no prompts", *raw.PromptName))
	}
	inputs, _, err := textOrList("inputs", raw.Inputs)
	if err != nil {
		return embedRequest{}, err
	}
	r := embedRequest{Inputs: inputs, Truncate: raw.Truncate, Normalize: raw.Normalize == nil || *raw.Normalize}
	return r, nil
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
	in := bytes.TrimSpace(raw.Inputs)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		return r, badRequest("missing field `inputs`")
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
	input, _, err := textOrList("input", raw.Input)
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
