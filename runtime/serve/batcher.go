package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// errBatcherClosed answers sequences submitted after Close.
var errBatcherClosed = errors.New("the server is shutting down")

// request is one HTTP request's sequences in the batcher. Only the
// batcher goroutine writes out, err and finished, before closing done.
type request struct {
	ctx      context.Context
	out      [][]float32
	left     int // sequences not computed yet
	err      error
	finished bool
	done     chan struct{}
	pass     *pass // the last pass that took some of its sequences (under batcher.mu)

	submitted        time.Time
	started, stopped time.Time // first forward pass that computed part of it, last
}

// pass is one forward pass's context: cancelled when every request with
// sequences in it has gone, so nobody waits for the pass any more. The
// handler waiting on a request notices its end (submit's select) and
// counts it out under batcher.mu; a context.AfterFunc per request and
// pass would do the same with a registration and an allocation each.
type pass struct {
	ctx    context.Context
	cancel context.CancelFunc
	live   int // requests in the pass whose context has not ended (under batcher.mu)
}

// entry is one sequence waiting for a forward pass.
type entry struct {
	req    *request
	i      int // index of the sequence in req
	enc    tokenizer.Encoding
	queued time.Time
}

// batcher merges the sequences of concurrent requests into forward
// passes, run one at a time on its own goroutine (the model uses every
// core for one pass; while it runs, the next batch gathers).
type batcher struct {
	model     Model
	maxTokens int
	maxSeqs   int
	maxWait   time.Duration
	maxBatch  int  // the model's chunk size, for the padding figure
	packed    bool // the model computes real tokens only (Info.Packed)
	noTypes   bool
	m         *metrics

	mu           sync.Mutex
	queue        []*entry
	queuedTokens int
	closed       bool
	wake         chan struct{} // capacity 1: "the queue changed"
	stopped      chan struct{}
}

func newBatcher(model Model, info Info, cfg *Config, m *metrics) *batcher {
	b := &batcher{
		model: model, maxTokens: cfg.MaxBatchTokens, maxSeqs: cfg.MaxBatchRequests, maxWait: cfg.MaxWait,
		maxBatch: info.MaxBatch, packed: info.Packed, noTypes: info.TypeVocab <= 1, m: m,
		wake: make(chan struct{}, 1), stopped: make(chan struct{}),
	}
	if b.maxSeqs <= 0 {
		b.maxSeqs = int(^uint(0) >> 1)
	}
	go b.loop()
	return b
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// submit queues encs and waits for their outputs, or for ctx to end.
func (b *batcher) submit(ctx context.Context, encs []tokenizer.Encoding) (*request, error) {
	r := &request{ctx: ctx, out: make([][]float32, len(encs)), left: len(encs), done: make(chan struct{}), submitted: time.Now()}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errBatcherClosed
	}
	wasEmpty := len(b.queue) == 0
	entries := make([]entry, len(encs))
	for i, e := range encs {
		entries[i] = entry{req: r, i: i, enc: e, queued: r.submitted}
		b.queue = append(b.queue, &entries[i])
		b.queuedTokens += e.Len()
	}
	// The loop needs waking only when its wait changes: the queue was
	// empty (nothing to wait for) or is now full. Otherwise it is asleep
	// until the oldest entry's MaxWait, or running a pass, after which it
	// looks at the queue anyway; a wake-up per request would cost a
	// goroutine switch each.
	wake := wasEmpty || b.queuedTokens >= b.maxTokens || len(b.queue) >= b.maxSeqs
	b.m.queueDepth.Set(float64(len(b.queue)))
	b.mu.Unlock()
	if wake {
		b.signal()
	}
	select {
	case <-r.done:
		return r, r.err
	case <-ctx.Done():
		b.leave(r)
		return nil, ctx.Err()
	}
}

// leave counts r, whose context has ended, out of the pass computing its
// sequences; the last request to leave a pass cancels it. Its queued
// sequences are dropped when they reach the head of the queue.
func (b *batcher) leave(r *request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := r.pass; p != nil {
		r.pass = nil
		if p.live--; p.live == 0 {
			p.cancel()
		}
	}
}

// close lets the queued sequences run, then stops the batcher.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.stopped
}

func (b *batcher) loop() {
	defer close(b.stopped)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, p, wait, done := b.take()
		if done {
			return
		}
		if batch != nil {
			b.run(batch, p)
			continue
		}
		var fire <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-b.wake:
		case <-fire:
		}
		if wait > 0 && !timer.Stop() {
			select { // drain a fire that raced with the wake
			case <-timer.C:
			default:
			}
		}
	}
}

// take returns the next batch, and the pass that computes it, when one
// is due: the queue holds a full batch, or its oldest sequence has waited
// MaxWait, or the batcher is closing. Otherwise it says how long to wait
// (0: until woken); done means closed and empty.
func (b *batcher) take() (batch []*entry, p *pass, wait time.Duration, done bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropAbandoned()
	if len(b.queue) == 0 {
		return nil, nil, 0, b.closed
	}
	full := b.queuedTokens >= b.maxTokens || len(b.queue) >= b.maxSeqs
	if wait := time.Until(b.queue[0].queued.Add(b.maxWait)); !full && !b.closed && wait > 0 {
		return nil, nil, wait, false
	}
	p = &pass{}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	tokens := 0
	for len(b.queue) > 0 {
		e := b.queue[0]
		if len(batch) > 0 && (tokens+e.enc.Len() > b.maxTokens || len(batch) >= b.maxSeqs) {
			break
		}
		b.pop()
		if e.req.finished || e.req.ctx.Err() != nil {
			continue
		}
		batch = append(batch, e)
		tokens += e.enc.Len()
		// A request whose context ends from here on is counted out by
		// leave, under b.mu; one that ended before was skipped above.
		if e.req.pass != p {
			e.req.pass = p
			p.live++
		}
	}
	b.m.queueDepth.Set(float64(len(b.queue)))
	return batch, p, 0, false
}

func (b *batcher) pop() {
	b.queuedTokens -= b.queue[0].enc.Len()
	b.queue[0] = nil
	b.queue = b.queue[1:]
}

// dropAbandoned removes the sequences at the head of the queue whose
// request is over (its client went away, or another of its sequences
// failed), so they neither run nor count as waiting.
func (b *batcher) dropAbandoned() {
	for len(b.queue) > 0 && (b.queue[0].req.finished || b.queue[0].req.ctx.Err() != nil) {
		b.m.dropped.Inc()
		b.pop()
	}
}

// run computes one forward pass and hands each request its outputs.
func (b *batcher) run(batch []*entry, p *pass) {
	mb := modelrt.Batch{InputIDs: make([][]int64, len(batch)), AttentionMask: make([][]int64, len(batch))}
	if !b.noTypes {
		mb.TokenTypeIDs = make([][]int64, len(batch))
	}
	tokens := 0
	for k, e := range batch {
		mb.InputIDs[k], mb.AttentionMask[k] = e.enc.InputIDs, e.enc.AttentionMask
		if mb.TokenTypeIDs != nil {
			mb.TokenTypeIDs[k] = e.enc.TokenTypeIDs
		}
		tokens += e.enc.Len()
	}
	defer p.cancel()
	start := time.Now()
	for _, e := range batch {
		if e.req.started.IsZero() {
			e.req.started = start
		}
	}
	outs, err := b.safeRun(p.ctx, mb)
	took := time.Since(start)
	if err == nil && len(outs) != len(batch) {
		err = fmt.Errorf("model returned %d outputs for %d sequences", len(outs), len(batch))
	}
	computed := tokens
	if !b.packed {
		computed = modelrt.PaddedTokens(&mb, modelrt.ChunkOrder(nil, &mb, b.maxBatch), b.maxBatch)
	}
	b.m.observeBatch(len(batch), tokens, computed, took)
	now := time.Now()
	for k, e := range batch {
		r := e.req
		if r.finished {
			continue
		}
		if err != nil {
			r.err, r.finished, r.stopped = err, true, now
			close(r.done)
			continue
		}
		r.out[e.i] = outs[k]
		if r.left--; r.left == 0 {
			r.finished, r.stopped = true, now
			close(r.done)
		}
	}
}

// safeRun is the model's Run, with a panic turned into an error: one bad
// pass must not take the server down.
func (b *batcher) safeRun(ctx context.Context, mb modelrt.Batch) (outs [][]float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, fmt.Errorf("model panicked: %v", p)
		}
	}()
	return b.model.Run(ctx, mb)
}
