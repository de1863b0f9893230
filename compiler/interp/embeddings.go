package interp

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// sqc.Embeddings (compiler/ops_sqc_embed.go) is computed the way the
// unfused graph computes it — Gathers, then float32 Adds in the order
// (word + type) + position (positions_first: (word + position) + type), the position ids 0..seq-1 or, with
// padding_idx, RoBERTa's Equal/Not/Cast/CumSum/Mul/Add chain — so fusing
// the chain changes no bits.
func init() {
	sqcKernels["sqc.Embeddings"] = sqcKernel("sqc.Embeddings", embeddings)
}

func embeddings(c *call) ([]*compiler.Tensor, error) {
	ids, word := c.in[0], c.in[1]
	var pos *compiler.Tensor // nil: no position term
	if len(c.in) > 2 {
		pos = c.in[2]
	}
	var typeIDs, typ *compiler.Tensor
	if len(c.in) == 5 {
		typeIDs, typ = c.in[3], c.in[4] // typeIDs nil: type 0 for every token
	}
	pad, padded := compiler.EmbeddingsPaddingIdx(c.node)
	positionsFirst := compiler.EmbeddingsPositionsFirst(c.node)
	if len(ids.Shape) != 2 || ids.DType != compiler.Int64 {
		return nil, fmt.Errorf("%w: Embeddings ids %s%v, want i64 [batch, seq]", compiler.ErrShapeMismatch, ids.DType, ids.Shape)
	}
	if len(word.Shape) != 2 || word.DType != compiler.Float32 || pos != nil && (len(pos.Shape) != 2 || pos.DType != compiler.Float32) {
		return nil, fmt.Errorf("%w: Embeddings tables must be f32 [rows, hidden]", compiler.ErrShapeMismatch)
	}
	batch, seq, h := ids.Shape[0], ids.Shape[1], word.Shape[1]
	if pos != nil && (pos.Shape[1] != h || (!padded && seq > pos.Shape[0])) {
		return nil, fmt.Errorf("%w: Embeddings of %d tokens with position table %v (hidden %d)", compiler.ErrShapeMismatch, seq, pos.Shape, h)
	}
	row := func(table *compiler.Tensor, id int64, what string) ([]float32, error) {
		rows := table.Shape[0]
		if id < 0 {
			id += rows // Gather's rule: negative ids count from the end
		}
		if id < 0 || id >= rows {
			return nil, fmt.Errorf("%w: %s id %d outside [0, %d)", compiler.ErrInvalidRequest, what, id, rows)
		}
		return table.F32[id*h : (id+1)*h], nil
	}
	sum := make([]float32, batch*seq*h)
	for b := range batch {
		count := int64(0) // the non-padding ids so far (the CumSum)
		for s := range seq {
			out := sum[(b*seq+s)*h:][:h]
			w, err := row(word, ids.I64[b*seq+s], "token")
			if err != nil {
				return nil, err
			}
			copy(out, w)
			posID := int64(s)
			if padded {
				posID = pad // (cumsum · mask) + padding_idx
				if ids.I64[b*seq+s] != pad {
					count++
					posID += count
				}
			}
			var p []float32 // no position term without a table
			if pos != nil {
				if p, err = row(pos, posID, "position"); err != nil {
					return nil, err
				}
			}
			if positionsFirst && p != nil {
				addTo(out, p)
			}
			if typ != nil {
				typeID := int64(0)
				if typeIDs != nil {
					typeID = typeIDs.I64[b*seq+s]
				}
				t, err := row(typ, typeID, "token type")
				if err != nil {
					return nil, err
				}
				addTo(out, t)
			}
			if !positionsFirst && p != nil {
				addTo(out, p)
			}
		}
	}
	return []*compiler.Tensor{ops.FromSlice([]int64{batch, seq, h}, sum)}, nil
}

// addTo adds x to out elementwise, in float32 as the unfused Add does.
func addTo(out, x []float32) {
	for i := range out {
		out[i] += x[i]
	}
}
