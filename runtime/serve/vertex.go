package serve

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
)

// vertexResponse is Vertex AI's prediction response: one prediction per
// instance, in order.
type vertexResponse struct {
	Predictions []any `json:"predictions"`
}

// vertex answers POST /vertex, Google Vertex AI's prediction protocol as
// TEI serves it: {"instances": [request, ...]} → {"predictions":
// [answer, ...]}. An instance that decodes as a /rerank request (it has
// "query" and "texts") is one; any other is a request of the model's own
// endpoint (Server.own, what POST / answers as). Each is answered by that
// endpoint's handler, from its bytes, so its prediction is exactly the
// answer that endpoint gives it alone.
//
// The instances run concurrently, their sequences batched with each
// other's and other requests'. When one fails, the request fails with
// its error, status and body as its endpoint answers them; of several
// failing instances, the first in order, as TEI reports the first error
// of its instances in order. A failure cancels the instances after it
// (their errors could not be reported), never those before it, so which
// error is answered does not depend on timing.
func (s *Server) vertex(ctx context.Context, body []byte, t *timings) (any, *apiError) {
	instances, e := decodeVertex(body)
	if e != nil {
		return nil, e
	}
	release, e := s.admitInstances(len(instances))
	if e != nil {
		return nil, e
	}
	defer release()
	own := s.own()
	preds := make([]any, len(instances))
	errs := make([]*apiError, len(instances))
	times := make([]timings, len(instances))
	ctxs := make([]context.Context, len(instances))
	cancels := make([]context.CancelFunc, len(instances))
	for i := range instances {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	// A handler's panic is a bug, which net/http recovers from in the
	// request's own goroutine (the server lives on); in an instance's it
	// would end the process, so it is raised again in the request's.
	var (
		panicOnce sync.Once
		panicked  any
	)
	var wg sync.WaitGroup
	for i, inst := range instances {
		h := own
		if _, bad := decodeRerank(inst); bad == nil {
			h = s.rerank
		}
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					panicOnce.Do(func() { panicked = fmt.Sprintf("/vertex instance %d: %v\n%s", i, v, debug.Stack()) })
					errs[i] = &apiError{http.StatusInternalServerError, "panic", errBackend}
				}
				if errs[i] != nil {
					for _, cancel := range cancels[i+1:] {
						cancel()
					}
				}
			}()
			preds[i], errs[i] = h(ctxs[i], inst, &times[i])
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	// The instances ran side by side: the request's tokens are theirs
	// summed, its times the longest of theirs.
	for _, it := range times {
		t.tokens += it.tokens
		t.tokenize, t.queue, t.run = max(t.tokenize, it.tokenize), max(t.queue, it.queue), max(t.run, it.run)
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return vertexResponse{Predictions: preds}, nil
}

// admitInstances admits a /vertex request's instances after its first
// (the endpoint admitted the request) as requests of their own: n
// instances take n of the MaxConcurrentRequests places, as n requests
// would, and the request gets 429 when the server has not that many
// free, as TEI's instances each take its permits. More instances than
// the server ever admits at once is a 413: no retry could succeed.
func (s *Server) admitInstances(n int) (release func(), e *apiError) {
	if n > s.cfg.MaxConcurrentRequests {
		return nil, &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%d instances > maximum allowed concurrent requests %d: each instance is admitted as a request", n, s.cfg.MaxConcurrentRequests), errValidation}
	}
	taken := 0
	release = func() {
		for range taken {
			<-s.admit
		}
	}
	for taken < n-1 {
		select {
		case s.admit <- struct{}{}:
			taken++
		default:
			release()
			return nil, overloaded()
		}
	}
	return release, nil
}
