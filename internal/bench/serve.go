package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sqc-dev/sqc/compiler"
)

// The worker protocol of the shared peer harness (../shared/bench/peers,
// coord.py): JSON lines on stdin and stdout.
//
//	worker -> {"ready": true, "system": "sqc", "modes": [...], "env": {...}, "load_s": s}
//	coord  -> {"op": "run", "mode": M, "batch": B, "seq": S, "n": N}   worker -> {"ms": [t1, ..., tN]}
//	coord  -> {"op": "run", ..., "lengths": [L1, ..., LB]}          (sqc's extension, see Request.Lengths)
//	coord  -> {"op": "check"}                                          worker -> {"acc": {mode: {...}}}
//	coord  -> {"op": "quit"}                                           worker -> {"bye": true}
//
// ms are wall-clock milliseconds of N complete forward passes, each timed
// alone, on inputs prepared (once per shape) before timing. A request the
// worker cannot serve gets {"error": "..."} and the worker carries on.

// Request is one coordinator message.
type Request struct {
	Op    string `json:"op"`
	Mode  string `json:"mode,omitempty"`
	Batch int    `json:"batch,omitempty"`
	Seq   int    `json:"seq,omitempty"`
	N     int    `json:"n,omitempty"`
	// Lengths, an extension of sqc's coordinator (internal/bench/realbatch),
	// gives each sequence's real token count: the batch is padded to Seq
	// under the attention mask, as a tokenizer pads real sentences, and
	// sqc runs it padding-free. Batch, if given, must be len(Lengths);
	// Seq, if 0, is the longest length. Workers that do not know the field
	// (the peer harness's) ignore it and run the whole batch x seq, which
	// is what padding each batch to its longest costs them.
	Lengths []int `json:"lengths,omitempty"`
}

// Hello is the worker's first line.
type Hello struct {
	Ready  bool           `json:"ready"`
	System string         `json:"system"`
	Modes  []string       `json:"modes"`
	Env    map[string]any `json:"env"`
	LoadS  float64        `json:"load_s"`
}

// Reply is any later line; exactly one field is set.
type Reply struct {
	Ms    []float64      `json:"ms,omitempty"`
	Acc   map[string]any `json:"acc,omitempty"`
	Bye   bool           `json:"bye,omitempty"`
	Error string         `json:"error,omitempty"`
}

// MaxRunsPerRequest bounds a run request's n, so that a typo cannot keep
// the worker busy for hours.
const MaxRunsPerRequest = 10000

// InputSeed seeds the token ids of timed inputs.
const InputSeed = 7

// WorkerMode is one mode the worker offers and the engine that runs it.
type WorkerMode struct {
	Name   string
	Engine Engine
}

// Worker serves the peer harness's protocol for one model.
type Worker struct {
	System string // "sqc"
	Model  *Model // makes the inputs
	Modes  []WorkerMode
	Env    map[string]any
	Load   time.Duration // model build time, reported as load_s
	// Check, if set, answers {"op": "check"}: accuracy figures by mode.
	// Without it the answer is an empty object.
	Check func() (map[string]any, error)
	// Log, if set, receives one line per failed request (stderr in the
	// CLI: stdout carries only the protocol).
	Log io.Writer

	inputs map[string]map[string]*compiler.Tensor // by fmt.Sprint(batch, seq, lengths)
}

// Serve sends the hello line, then answers requests from r until quit or
// end of input. It returns an error only when writing fails or r fails.
func (w *Worker) Serve(r io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out) // one object per line
	modes := make([]string, len(w.Modes))
	for i, m := range w.Modes {
		modes[i] = m.Name
	}
	env := w.Env
	if env == nil {
		env = map[string]any{}
	}
	if err := enc.Encode(Hello{Ready: true, System: w.System, Modes: modes, Env: env, LoadS: w.Load.Seconds()}); err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var req Request
		var rep Reply
		if err := json.Unmarshal(line, &req); err != nil {
			rep.Error = fmt.Sprintf("bad request %q: %v", truncate(string(line), 80), err)
		} else {
			rep = w.answer(req)
		}
		if rep.Error != "" && w.Log != nil {
			fmt.Fprintf(w.Log, "sqc worker: %s\n", rep.Error)
		}
		if err := w.encode(enc, rep); err != nil {
			return err
		}
		if rep.Bye {
			return nil
		}
	}
	return sc.Err()
}

// encode writes rep; an acc reply is written even when empty ({"acc": {}}).
func (w *Worker) encode(enc *json.Encoder, rep Reply) error {
	if rep.Acc != nil {
		return enc.Encode(struct {
			Acc map[string]any `json:"acc"`
		}{rep.Acc})
	}
	return enc.Encode(rep)
}

func (w *Worker) answer(req Request) Reply {
	switch req.Op {
	case "run":
		ms, err := w.run(req)
		if err != nil {
			return Reply{Error: err.Error()}
		}
		return Reply{Ms: ms}
	case "check":
		acc := map[string]any{}
		if w.Check != nil {
			var err error
			if acc, err = w.Check(); err != nil {
				return Reply{Error: "check: " + err.Error()}
			}
		}
		return Reply{Acc: acc}
	case "quit":
		return Reply{Bye: true}
	}
	return Reply{Error: fmt.Sprintf("unknown op %q (want run, check or quit)", req.Op)}
}

func (w *Worker) run(req Request) ([]float64, error) {
	var eng Engine
	for _, m := range w.Modes {
		if m.Name == req.Mode {
			eng = m.Engine
		}
	}
	if eng == nil {
		return nil, fmt.Errorf("run: unknown mode %q", req.Mode)
	}
	n := req.N
	if n == 0 {
		n = 1
	}
	if n < 0 || n > MaxRunsPerRequest {
		return nil, fmt.Errorf("run: n = %d, want 1..%d", n, MaxRunsPerRequest)
	}
	batch, seq, err := req.shape()
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	in, err := w.inputsFor(batch, seq, req.Lengths)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	ms := make([]float64, n)
	for i := range ms {
		t := time.Now()
		if _, err := eng.Run(in); err != nil {
			return nil, fmt.Errorf("run %s %dx%d: %w", req.Mode, batch, seq, err)
		}
		ms[i] = float64(time.Since(t).Nanoseconds()) / 1e6
	}
	return ms, nil
}

// shape is the batch and sequence of a run request, checked against its
// lengths.
func (req Request) shape() (batch, seq int, err error) {
	batch, seq = req.Batch, req.Seq
	if req.Lengths == nil {
		return batch, seq, nil
	}
	if len(req.Lengths) == 0 {
		return 0, 0, errors.New("lengths is empty")
	}
	if batch == 0 {
		batch = len(req.Lengths)
	}
	if batch != len(req.Lengths) {
		return 0, 0, fmt.Errorf("batch %d with %d lengths", batch, len(req.Lengths))
	}
	if seq == 0 {
		seq = slices.Max(req.Lengths)
	}
	return batch, seq, nil
}

// maxCachedInputs bounds the worker's input cache: a real-length run asks
// for one batch shape per batch of its sentences (SST-2's dev set: 28).
const maxCachedInputs = 256

// inputsFor returns the (cached) inputs of one shape; lengths nil means
// full sequences.
func (w *Worker) inputsFor(batch, seq int, lengths []int) (map[string]*compiler.Tensor, error) {
	if w.Model == nil {
		return nil, errors.New("worker has no model")
	}
	key := fmt.Sprint(batch, seq, lengths)
	if in, ok := w.inputs[key]; ok {
		return in, nil
	}
	var in map[string]*compiler.Tensor
	var err error
	if lengths == nil {
		in, err = w.Model.Inputs(batch, seq, InputSeed)
	} else {
		in, err = w.Model.InputsWithLengths(lengths, seq, InputSeed)
	}
	if err != nil {
		return nil, err
	}
	if w.inputs == nil || len(w.inputs) >= maxCachedInputs {
		w.inputs = map[string]map[string]*compiler.Tensor{}
	}
	w.inputs[key] = in
	return in, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
