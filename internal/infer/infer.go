// Package infer turns user inputs (texts or token ids) into padded batches
// for an encoder graph, runs them through an Executor (the FP32 interpreter
// or the INT8 engine), and splits the outputs back into one result per
// input, in input order. Padding never changes a result: every input's
// outputs are those of running it alone (up to float rounding of the
// masked positions, which the attention mask zeroes).
package infer

import (
	"context"
	"fmt"
	"sort"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/runtime/tokenizer"
)

// Executor runs a graph on one batch of named input tensors.
type Executor interface {
	Run(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error)

// Run calls f.
func (f ExecutorFunc) Run(inputs map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) {
	return f(inputs)
}

// Interpreter adapts the FP32 reference interpreter's Run to Executor.
func Interpreter(run func(map[string]*compiler.Tensor, *interp.Options) (map[string]*compiler.Tensor, error)) Executor {
	return ExecutorFunc(func(in map[string]*compiler.Tensor) (map[string]*compiler.Tensor, error) { return run(in, nil) })
}

// Encoded is one tokenized input.
type Encoded struct {
	IDs, Mask, TypeIDs []int64
}

// Encode tokenizes texts (or takes the ids of pre-tokenized examples).
func Encode(tok *tokenizer.Tokenizer, exs []dataio.Example) ([]Encoded, error) {
	out := make([]Encoded, len(exs))
	for i, ex := range exs {
		if ex.HasIDs {
			e := Encoded{IDs: ex.IDs, Mask: ex.Mask, TypeIDs: ex.TypeIDs}
			if e.Mask == nil {
				e.Mask = ones(len(e.IDs))
			}
			if e.TypeIDs == nil {
				e.TypeIDs = make([]int64, len(e.IDs))
			}
			out[i] = e
			continue
		}
		if tok == nil {
			return nil, fmt.Errorf("line %d: text input needs a vocabulary (vocab.txt beside the model, or --vocab)", ex.Line)
		}
		enc := tok.Encode(ex.Text)
		out[i] = Encoded{IDs: enc.InputIDs, Mask: enc.AttentionMask, TypeIDs: enc.TokenTypeIDs}
	}
	return out, nil
}

func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// Result is the outputs for one input: output name -> values of that
// input's slice of the output (batch dimension removed; a sequence
// dimension is cut to the input's own length).
type Result map[string]*compiler.Tensor

// Options control batching.
type Options struct {
	BatchSize int // inputs per executor call (default 32)
	// SortByLength groups inputs of similar length into one batch so
	// padding costs little; results still come back in input order.
	SortByLength bool
	// Progress, if set, is called after each batch with the inputs done.
	Progress func(done, total int)
}

// Run executes all inputs in batches and returns results in input order.
func Run(ctx context.Context, g *compiler.Graph, ex Executor, inputs []Encoded, opts Options) ([]Result, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 32
	}
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	if opts.SortByLength {
		sort.SliceStable(order, func(a, b int) bool { return len(inputs[order[a]].IDs) < len(inputs[order[b]].IDs) })
	}
	results := make([]Result, len(inputs))
	for start := 0; start < len(order); start += opts.BatchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+opts.BatchSize, len(order))
		idx := order[start:end]
		feeds, seq, err := MakeBatch(g, inputs, idx)
		if err != nil {
			return nil, err
		}
		outs, err := ex.Run(feeds)
		if err != nil {
			return nil, err
		}
		for bi, i := range idx {
			r := Result{}
			for _, o := range g.Outputs {
				t, ok := outs[o.Name]
				if !ok {
					return nil, fmt.Errorf("executor returned no output %q", o.Name)
				}
				r[o.Name] = SliceRow(t, bi, seq, len(inputs[i].IDs))
			}
			results[i] = r
		}
		if opts.Progress != nil {
			opts.Progress(end, len(order))
		}
	}
	return results, nil
}

// MakeBatch builds the graph's input tensors for inputs[idx...], right-
// padded to the longest; it returns the padded sequence length.
func MakeBatch(g *compiler.Graph, inputs []Encoded, idx []int) (map[string]*compiler.Tensor, int, error) {
	seq := 0
	for _, i := range idx {
		seq = max(seq, len(inputs[i].IDs))
	}
	if seq == 0 {
		return nil, 0, compiler.BadInput("", "input_ids", fmt.Errorf("%w: empty input", compiler.ErrInvalidRequest))
	}
	b := int64(len(idx))
	feeds := map[string]*compiler.Tensor{}
	for _, in := range g.Inputs {
		t := compiler.NewTensor(compiler.Int64, b, int64(seq))
		for bi, i := range idx {
			var src []int64
			switch in.Name {
			case "input_ids":
				src = inputs[i].IDs
			case "attention_mask":
				src = inputs[i].Mask
			case "token_type_ids":
				src = inputs[i].TypeIDs
			default:
				return nil, 0, fmt.Errorf("model input %q is not one sqc knows how to feed (input_ids, attention_mask, token_type_ids)", in.Name)
			}
			if len(src) != len(inputs[i].IDs) {
				return nil, 0, compiler.BadInput("", in.Name, fmt.Errorf("%w: %d entries for %d input ids", compiler.ErrInvalidRequest, len(src), len(inputs[i].IDs)))
			}
			copy(t.I64[bi*seq:], src)
		}
		if in.DType == compiler.Int32 {
			t32 := compiler.NewTensor(compiler.Int32, b, int64(seq))
			for j, v := range t.I64 {
				t32.I32[j] = int32(v)
			}
			t = t32
		}
		feeds[in.Name] = t
	}
	return feeds, seq, nil
}

// SliceRow extracts batch row bi of t; when dimension 1 is the padded
// sequence length, it is cut to n (the input's own length).
func SliceRow(t *compiler.Tensor, bi, seq, n int) *compiler.Tensor {
	if len(t.Shape) == 0 {
		return t
	}
	shape := append([]int64(nil), t.Shape[1:]...)
	rowElems := compiler.NumElements(shape)
	keep := rowElems
	if len(shape) >= 2 && shape[0] == int64(seq) {
		keep = rowElems / int64(seq) * int64(n)
		shape[0] = int64(n)
	}
	out := &compiler.Tensor{DType: t.DType, Shape: shape}
	lo := int64(bi) * rowElems
	switch t.DType {
	case compiler.Float32:
		out.F32 = append([]float32(nil), t.F32[lo:lo+keep]...)
	case compiler.Int64:
		out.I64 = append([]int64(nil), t.I64[lo:lo+keep]...)
	default:
		// Outputs of encoders are f32; other dtypes are copied whole.
		return t
	}
	return out
}
