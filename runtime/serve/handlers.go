package serve

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// handlerFunc answers one decoded request body: a value to encode as
// JSON with status 200, or an error.
type handlerFunc func(ctx context.Context, body []byte, t *timings) (any, *apiError)

// timings are what TEI reports in its x-*-time headers.
type timings struct {
	tokens               int
	tokenize, queue, run time.Duration
}

// endpoint wraps h with admission, the body limit, the error shapes,
// metrics and logs.
func (s *Server) endpoint(name string, openAI bool, h handlerFunc) http.HandlerFunc {
	// The collectors most requests of the endpoint update, looked up by
	// their label values once (a lookup hashes them), when first needed:
	// /metrics shows a series only once a request has counted in it.
	ok := sync.OnceValue(func() prometheus.Counter { return s.m.requests.WithLabelValues(name, "200") })
	latency := sync.OnceValue(func() prometheus.Observer { return s.m.latency.WithLabelValues(name) })
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := http.StatusOK
		defer func() {
			if status == http.StatusOK {
				ok().Inc()
			} else {
				s.m.requests.WithLabelValues(name, strconv.Itoa(status)).Inc()
			}
		}()
		fail := func(e *apiError) {
			status = e.Status
			writeError(w, e, openAI)
			if e.Status >= 500 {
				s.log.Error("request failed", "endpoint", name, "status", e.Status, "error", e.Msg)
			} else {
				s.log.Debug("request rejected", "endpoint", name, "status", e.Status, "error", e.Msg)
			}
		}
		if s.draining.Load() {
			fail(&apiError{http.StatusServiceUnavailable, "the server is shutting down", errUnhealthy})
			return
		}
		select {
		case s.admit <- struct{}{}:
		default:
			fail(overloaded())
			return
		}
		s.accepted.Add(1)
		s.m.inFlight.Inc()
		defer func() {
			<-s.admit
			s.m.inFlight.Dec()
			s.answered.Add(1)
			latency().Observe(time.Since(start).Seconds())
		}()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
		defer cancel()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.PayloadLimit))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				fail(&apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than the payload limit of %d bytes", s.cfg.PayloadLimit), errValidation})
			} else {
				fail(badRequest("cannot read the request body: " + err.Error()))
			}
			return
		}
		var t timings
		resp, e := h(ctx, body, &t)
		if e != nil {
			fail(e)
			return
		}
		setTimingHeaders(w.Header(), &t, time.Since(start))
		writeJSON(w, http.StatusOK, resp)
		if s.log.Enabled(ctx, slog.LevelDebug) { // the arguments cost allocations
			s.log.Debug("request", "endpoint", name, "tokens", t.tokens, "duration", time.Since(start).String())
		}
	}
}

// setTimingHeaders sets TEI's x-compute-* and x-*-time headers. The keys
// are written in canonical form, straight into the map, and the values
// share one array: Header.Set would canonicalise and allocate per key,
// a cost every request pays.
func setTimingHeaders(hd http.Header, t *timings, total time.Duration) {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	v := [...]string{"cpu-int8", strconv.Itoa(t.tokens), ms(total), ms(t.tokenize), ms(t.queue), ms(t.run)}
	vals := v[:]
	for i, k := range [...]string{"X-Compute-Type", "X-Compute-Tokens", "X-Total-Time", "X-Tokenization-Time", "X-Queue-Time", "X-Inference-Time"} {
		hd[k] = vals[i : i+1 : i+1]
	}
}

// wrongKind is TEI's answer to an endpoint the model does not serve.
func (s *Server) wrongKind(what string) *apiError {
	return modelCannot(fmt.Sprintf("model is not %s model", what))
}

// overloaded is TEI's 429: no place is free among the
// MaxConcurrentRequests the server admits.
func overloaded() *apiError {
	return &apiError{http.StatusTooManyRequests, "Model is overloaded", errOverloaded}
}

// modelCannot is a 424: the request asks what the model cannot compute,
// which TEI answers as a backend error.
func modelCannot(msg string) *apiError {
	return &apiError{http.StatusFailedDependency, msg, errBackend}
}

// errSparseNormalize is TEI's answer to a request for a normalised
// vector of a SPLADE model: its weights are what it scores with, and
// scaling them would change a sparse index's dot products.
var errSparseNormalize = modelCannot("`normalize` is not available for SPLADE models")

// checkCount enforces 1..MaxClientBatchSize inputs. No inputs is TEI's
// error of type Empty, a 400.
func (s *Server) checkCount(field string, n int) *apiError {
	switch {
	case n == 0:
		return &apiError{http.StatusBadRequest, fmt.Sprintf("`%s` cannot be empty", field), errEmpty}
	case n > s.cfg.MaxClientBatchSize:
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("batch size %d > maximum allowed batch size %d", n, s.cfg.MaxClientBatchSize), errValidation}
	}
	return nil
}

// infer tokenizes inputs (each one text or a pair) and runs them through
// the batcher: one output row per input.
func (s *Server) infer(ctx context.Context, inputs [][]string, truncate *bool, t *timings) ([][]float32, *apiError) {
	trunc := s.truncates(truncate)
	return s.inferEach(ctx, len(inputs), func(i int) (tokenizer.Encoding, *apiError) { return s.enc.encode(inputs[i], trunc) }, t)
}

// truncates is a request's truncate, or the server's --auto-truncate.
func (s *Server) truncates(truncate *bool) bool {
	if truncate != nil {
		return *truncate
	}
	return s.cfg.AutoTruncate
}

// inferEach tokenizes n inputs with encode, on the tokenization workers,
// and runs them through the batcher: one output row per input.
func (s *Server) inferEach(ctx context.Context, n int, encode func(i int) (tokenizer.Encoding, *apiError), t *timings) ([][]float32, *apiError) {
	encs := make([]tokenizer.Encoding, n)
	if e := s.tokenizeOn(ctx, t, func() *apiError {
		for i := range encs {
			var bad *apiError
			if encs[i], bad = encode(i); bad != nil {
				return bad
			}
		}
		return nil
	}); e != nil {
		return nil, e
	}
	return s.runEncodings(ctx, encs, t)
}

// tokenizeOn runs f, a request's tokenization, on a tokenization worker
// and times it.
func (s *Server) tokenizeOn(ctx context.Context, t *timings, f func() *apiError) *apiError {
	var bad *apiError
	t0 := time.Now()
	err := s.enc.do(ctx, func() { bad = f() })
	t.tokenize = time.Since(t0)
	s.m.tokenizeTime.Observe(t.tokenize.Seconds())
	if err != nil {
		return s.contextError(err) // f may still be running: bad is not read
	}
	return bad
}

// runEncodings runs a request's sequences through the batcher: one output
// row per sequence.
func (s *Server) runEncodings(ctx context.Context, encs []tokenizer.Encoding, t *timings) ([][]float32, *apiError) {
	for _, e := range encs {
		t.tokens += e.Len()
	}
	r, err := s.batch.submit(ctx, encs)
	if err != nil {
		if errors.Is(err, errBatcherClosed) {
			return nil, &apiError{http.StatusServiceUnavailable, err.Error(), errUnhealthy}
		}
		if ctx.Err() != nil {
			return nil, s.contextError(ctx.Err())
		}
		return nil, &apiError{http.StatusInternalServerError, "inference failed: " + err.Error(), errBackend}
	}
	t.queue, t.run = r.started.Sub(r.submitted), r.stopped.Sub(r.started)
	s.m.queueTime.Observe(t.queue.Seconds())
	return r.out, nil
}

// embedInputs runs an embedder's inputs; the vectors are the model's, L2-
// normalised when normalize is set (unless the model's own head already
// normalises them: its vectors are returned as they are, bit for bit).
func (s *Server) embedInputs(ctx context.Context, inputs []input, promptName *string, truncate *bool, left, normalize bool, t *timings) ([][]float32, *apiError) {
	prompt, e := s.prompt(promptName)
	if e != nil {
		return nil, e
	}
	trunc := s.truncates(truncate)
	vecs, e := s.inferEach(ctx, len(inputs), func(i int) (tokenizer.Encoding, *apiError) {
		return s.enc.encodeInput(inputs[i], prompt, trunc, left)
	}, t)
	if e != nil {
		return nil, e
	}
	if normalize && !s.info.Normalized {
		for i, v := range vecs {
			vecs[i] = normalize32(v)
		}
	}
	if e := finite(vecs); e != nil {
		return nil, e
	}
	return vecs, nil
}

// prompt is the text put before every text input: the model's prompt
// named by the request, else its default prompt (as sentence-transformers
// and `sqc run` apply it), else none.
func (s *Server) prompt(name *string) (string, *apiError) {
	if name == nil {
		return s.info.Prompts[s.info.DefaultPrompt], nil
	}
	p, ok := s.info.Prompts[*name]
	if !ok {
		if len(s.info.Prompts) == 0 {
			return "", &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `prompt_name` %q: the model has no prompts", *name), errValidation}
		}
		names := slices.Sorted(maps.Keys(s.info.Prompts))
		return "", &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("Input validation error: `prompt_name` %q was not found in the prompts list: %s", *name, strings.Join(names, ", ")), errValidation}
	}
	return p, nil
}

// contextError answers a request whose context ended: its client is gone
// (nobody reads the answer) or it ran past WriteTimeout.
func (s *Server) contextError(err error) *apiError {
	if errors.Is(err, context.DeadlineExceeded) {
		return &apiError{http.StatusServiceUnavailable, fmt.Sprintf("request took longer than %s", s.cfg.WriteTimeout), errOverloaded}
	}
	return &apiError{499, "client closed the request", errValidation}
}

// embed answers POST /embed. A sparse embedder's vectors are answered
// dense, as TEI answers them, but only with "normalize": false (TEI's
// default, true, is its 424).
func (s *Server) embed(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != Embedder && s.info.Kind != SparseEmbedder {
		return nil, s.wrongKind("an embedding")
	}
	req, e := decodeEmbed(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	if s.info.Kind == SparseEmbedder && req.Normalize {
		return nil, errSparseNormalize
	}
	return s.embedInputs(ctx, req.Inputs, req.PromptName, req.Truncate, req.Left, req.Normalize, t)
}

// normalize32 returns v / ||v||, the norm summed in float64; a zero vector
// stays zero.
func normalize32(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	n := math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// finite rejects NaN and Inf outputs, which JSON cannot carry.
func finite(rows [][]float32) *apiError {
	for _, row := range rows {
		for _, x := range row {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return &apiError{http.StatusInternalServerError, "the model returned a non-finite value", errBackend}
			}
		}
	}
	return nil
}

// prediction is TEI's {score, label}.
type prediction struct {
	Score float32 `json:"score"`
	Label string  `json:"label"`
}

func (s *Server) label(i int) string {
	if i < len(s.info.Labels) && s.info.Labels[i] != "" {
		return s.info.Labels[i]
	}
	return "LABEL_" + strconv.Itoa(i)
}

// scores turns one row of logits into TEI's scores: the logits
// themselves with raw, else the model's own scoring activation on each
// logit when it has one (act), else a softmax (a sigmoid for a single
// logit).
func scores(logits []float32, raw bool, act modelrt.Activation) []float32 {
	switch {
	case raw:
		return slices.Clone(logits)
	case act != "":
		return modelrt.Scores(logits, act)
	case len(logits) == 1:
		return []float32{float32(1 / (1 + math.Exp(-float64(logits[0]))))}
	}
	return modelrt.Predict(logits, nil).Probs
}

func (s *Server) predict(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != Classifier && s.info.Kind != CrossEncoder {
		return nil, s.wrongKind("a classifier")
	}
	req, e := decodePredict(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	logits, e := s.infer(ctx, req.Inputs, req.Truncate, t)
	if e != nil {
		return nil, e
	}
	if e := finite(logits); e != nil {
		return nil, e
	}
	out := make([][]prediction, len(logits))
	for i, row := range logits {
		for j, sc := range scores(row, req.RawScores, s.info.Scoring) {
			out[i] = append(out[i], prediction{Score: sc, Label: s.label(j)})
		}
		// Best first; equal scores keep label order.
		slices.SortStableFunc(out[i], func(a, b prediction) int { return cmp.Compare(b.Score, a.Score) })
	}
	if req.Single {
		return out[0], nil
	}
	return out, nil
}

// rank is TEI's rerank answer for one text.
type rank struct {
	Index int     `json:"index"`
	Text  *string `json:"text,omitempty"`
	Score float32 `json:"score"`
}

func (s *Server) rerank(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	if s.info.Kind != CrossEncoder {
		return nil, s.wrongKind("a re-ranker")
	}
	req, e := decodeRerank(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("texts", len(req.Texts)); e != nil {
		return nil, e
	}
	pairs := make([][]string, len(req.Texts))
	for i, text := range req.Texts {
		pairs[i] = []string{req.Query, text}
	}
	logits, e := s.infer(ctx, pairs, req.Truncate, t)
	if e != nil {
		return nil, e
	}
	if e := finite(logits); e != nil {
		return nil, e
	}
	ranks := make([]rank, len(logits))
	for i, row := range logits {
		ranks[i] = rank{Index: i, Score: scores(row[:1], req.RawScores, s.info.Scoring)[0]}
		if req.ReturnText {
			ranks[i].Text = &req.Texts[i]
		}
	}
	slices.SortStableFunc(ranks, func(a, b rank) int { return cmp.Compare(b.Score, a.Score) })
	return ranks, nil
}

// simpleToken is TEI's token of /tokenize. Text is the vocabulary entry;
// Start and Stop are the token's offsets in the text (see offsets).
type simpleToken struct {
	ID      int64  `json:"id"`
	Text    string `json:"text"`
	Special bool   `json:"special"`
	Start   *int   `json:"start"`
	Stop    *int   `json:"stop"`
}

// tokenText is position j's text, start and stop as TEI's /tokenize gives
// them: a special token has its own text and null start and stop; any
// other token the bytes text[start:stop] it came from (the tokenizers
// library's byte offsets; tokens that share a character share its bytes).
func tokenText(enc tokenizer.Encoding, j int, text, token string, special bool) (string, *int, *int) {
	if special {
		return token, nil, nil
	}
	o := enc.Offsets[j]
	return strings.ToValidUTF8(text[o.Start:o.End], "\uFFFD"), &o.Start, &o.End
}

func (s *Server) tokenize(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	req, e := decodeTokenize(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("inputs", len(req.Inputs)); e != nil {
		return nil, e
	}
	out := make([][]simpleToken, len(req.Inputs))
	t0 := time.Now()
	err := s.enc.do(ctx, func() {
		for i, text := range req.Inputs {
			enc := s.enc.full.EncodeWithOffsets(text)
			ids := enc.InputIDs
			lo, hi := 0, len(ids)
			if !req.AddSpecialTokens {
				lo, hi = s.enc.prefix, len(ids)-s.enc.suffix
			}
			out[i] = make([]simpleToken, 0, hi-lo)
			for j := lo; j < hi; j++ {
				tok, _ := s.enc.full.Token(int(ids[j]))
				special := j < s.enc.prefix || j >= len(ids)-s.enc.suffix
				piece, start, stop := tokenText(enc, j, text, tok, special)
				out[i] = append(out[i], simpleToken{ID: ids[j], Text: piece, Special: special, Start: start, Stop: stop})
				t.tokens++
			}
		}
	})
	t.tokenize = time.Since(t0)
	if err != nil {
		return nil, s.contextError(err)
	}
	return out, nil
}

// openAIResponse is OpenAI's (and TEI's /v1/embeddings) answer.
type openAIResponse struct {
	Object string            `json:"object"`
	Data   []openAIEmbedding `json:"data"`
	Model  string            `json:"model"`
	Usage  openAIUsage       `json:"usage"`
}

type openAIEmbedding struct {
	Object    string `json:"object"`
	Embedding any    `json:"embedding"` // []float32, or base64 of little-endian float32s
	Index     int    `json:"index"`
}

type openAIUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

func (s *Server) openAI(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	switch s.info.Kind {
	case Embedder:
	case SparseEmbedder:
		// OpenAI's embeddings are unit vectors: TEI refuses to normalise
		// a SPLADE model's, whatever the request.
		return nil, errSparseNormalize
	default:
		return nil, s.wrongKind("an embedding")
	}
	req, e := decodeOpenAI(body)
	if e != nil {
		return nil, e
	}
	if e := s.checkCount("input", len(req.Input)); e != nil {
		return nil, e
	}
	// OpenAI's embeddings are unit vectors.
	vecs, e := s.embedInputs(ctx, req.Input, nil, nil, false, true, t)
	if e != nil {
		return nil, e
	}
	if req.Dimensions != 0 && len(vecs) > 0 && req.Dimensions != len(vecs[0]) {
		return nil, badRequest(fmt.Sprintf("`dimensions` %d: the model's embeddings have %d", req.Dimensions, len(vecs[0])))
	}
	resp := openAIResponse{Object: "list", Model: s.cfg.ServedModelName, Usage: openAIUsage{t.tokens, t.tokens}}
	for i, v := range vecs {
		var emb any = v
		if req.Base64 {
			raw := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(raw)
		}
		resp.Data = append(resp.Data, openAIEmbedding{Object: "embedding", Embedding: emb, Index: i})
	}
	return resp, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, &apiError{http.StatusServiceUnavailable, "unhealthy", errUnhealthy}, false)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// infoResponse is TEI's /info, plus the kernel family.
type infoResponse struct {
	ModelID               string         `json:"model_id"`
	ModelSHA              *string        `json:"model_sha"`
	ModelDType            string         `json:"model_dtype"`
	ModelType             map[string]any `json:"model_type"`
	MaxConcurrentRequests int            `json:"max_concurrent_requests"`
	MaxInputLength        int            `json:"max_input_length"`
	MaxBatchTokens        int            `json:"max_batch_tokens"`
	MaxBatchRequests      *int           `json:"max_batch_requests"`
	MaxClientBatchSize    int            `json:"max_client_batch_size"`
	AutoTruncate          bool           `json:"auto_truncate"`
	TokenizationWorkers   int            `json:"tokenization_workers"`
	Version               string         `json:"version"`
	SHA                   *string        `json:"sha"`
	DockerLabel           *string        `json:"docker_label"`
	Kernel                string         `json:"kernel"`
}

func (s *Server) infoHandler(w http.ResponseWriter, r *http.Request) {
	resp := infoResponse{
		ModelID: s.cfg.ServedModelName, ModelDType: "int8",
		MaxConcurrentRequests: s.cfg.MaxConcurrentRequests, MaxInputLength: s.info.MaxSequence,
		MaxBatchTokens: s.cfg.MaxBatchTokens, MaxClientBatchSize: s.cfg.MaxClientBatchSize,
		AutoTruncate: s.cfg.AutoTruncate, TokenizationWorkers: s.cfg.TokenizationWorkers,
		Version: s.cfg.Version, Kernel: s.info.Kernel,
	}
	if s.cfg.MaxBatchRequests > 0 {
		resp.MaxBatchRequests = &s.cfg.MaxBatchRequests
	}
	switch s.info.Kind {
	case Embedder:
		resp.ModelType = map[string]any{"embedding": map[string]string{"pooling": cmp.Or(s.info.Pooling, "mean")}}
	case SparseEmbedder:
		// TEI's SPLADE model is an embedding model of pooling "splade",
		// which its clients (and its own POST /) tell it by.
		resp.ModelType = map[string]any{"embedding": map[string]string{"pooling": cmp.Or(s.info.Pooling, "splade")}}
	case QuestionAnswerer:
		// No labels: the two logits of every token are the start's and
		// the end's. The defaults are /answer's max_seq_len and doc_stride.
		opts := modelrt.QAOptions{}.Defaults(s.info.MaxSequence)
		resp.ModelType = map[string]any{string(s.info.Kind): map[string]int{"max_seq_len": opts.MaxSeqLen, "doc_stride": opts.DocStride}}
	default:
		id2label, label2id := map[string]string{}, map[string]int{}
		n := max(len(s.info.Labels), 1)
		for i := range n {
			id2label[strconv.Itoa(i)] = s.label(i)
			label2id[s.label(i)] = i
		}
		resp.ModelType = map[string]any{string(s.info.Kind): map[string]any{"id2label": id2label, "label2id": label2id}}
	}
	writeJSON(w, http.StatusOK, resp)
}
