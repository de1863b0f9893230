package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// TEI's error types (the "error_type" field).
const (
	errValidation = "Validation"
	errTokenizer  = "Tokenizer"
	errOverloaded = "Overloaded"
	errBackend    = "Backend"
	errUnhealthy  = "Unhealthy"
	errEmpty      = "Empty" // an empty batch: TEI's 400
)

// apiError is a failed request: its status and TEI's error body.
type apiError struct {
	Status int    `json:"-"`
	Msg    string `json:"error"`
	Type   string `json:"error_type"`
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(msg string) *apiError { return &apiError{http.StatusBadRequest, msg, errValidation} }

// openAIError is the body OpenAI's clients expect from /v1/embeddings (as
// TEI sends it there).
type openAIError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
	Type    string `json:"type"`
}

// writeError writes e as TEI (or, for openAI, as TEI's OpenAI route) does.
func writeError(w http.ResponseWriter, e *apiError, openAI bool) {
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	var body any = e
	if openAI {
		body = openAIError{Message: e.Msg, Code: e.Status, Type: e.Type}
	}
	writeJSON(w, e.Status, body)
}

// retryAfterSeconds is the Retry-After of 429 and 503 answers: a
// forward pass takes milliseconds, so a second is a polite pause.
const retryAfterSeconds = 1

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil { // only NaN or Inf scores can get here; the handlers check them
		status, data = http.StatusInternalServerError, []byte(`{"error":"cannot encode the response","error_type":"Backend"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data) // then the newline: appending it could copy data
	io.WriteString(w, "\n")
}
