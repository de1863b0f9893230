package interp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/ops"
)

// Tensor builders for tests: shape first, then the values.
func f32(shape []int64, v ...float32) *compiler.Tensor { return ops.FromSlice(shape, v) }
func f64(shape []int64, v ...float64) *compiler.Tensor { return ops.FromSlice(shape, v) }
func i64(shape []int64, v ...int64) *compiler.Tensor   { return ops.FromSlice(shape, v) }
func i32(shape []int64, v ...int32) *compiler.Tensor   { return ops.FromSlice(shape, v) }
func u8(shape []int64, v ...uint8) *compiler.Tensor    { return ops.FromSlice(shape, v) }
func bools(shape []int64, v ...bool) *compiler.Tensor  { return ops.FromSlice(shape, v) }

// sh is a shape literal.
func sh(d ...int64) []int64 { return append([]int64{}, d...) }

// Attribute builders.
func aInt(v int64) compiler.Attr     { return compiler.Attr{Kind: compiler.AttrInt, Int: v} }
func aFloat(v float32) compiler.Attr { return compiler.Attr{Kind: compiler.AttrFloat, Float: v} }
func aInts(v ...int64) compiler.Attr { return compiler.Attr{Kind: compiler.AttrInts, Ints: v} }
func aStr(v string) compiler.Attr    { return compiler.Attr{Kind: compiler.AttrString, String: v} }
func aTensor(t *compiler.Tensor) compiler.Attr {
	return compiler.Attr{Kind: compiler.AttrTensor, Tensor: t}
}

type attrs = map[string]compiler.Attr

// nodeGraph builds a one-node graph: inputs become graph inputs x0, x1, ...
// (a nil input is an omitted optional input ""), and the node's nOut
// outputs y0, y1, ... are the graph outputs.
func nodeGraph(op string, opset int64, at attrs, nOut int, inputs ...*compiler.Tensor) (*compiler.Graph, map[string]*compiler.Tensor) {
	g := compiler.NewGraph("test")
	g.Opset = opset
	n := &compiler.Node{Name: "n0", Op: op, Attrs: at}
	feed := map[string]*compiler.Tensor{}
	for i, t := range inputs {
		if t == nil {
			n.Inputs = append(n.Inputs, "")
			continue
		}
		name := fmt.Sprintf("x%d", i)
		n.Inputs = append(n.Inputs, name)
		g.Inputs = append(g.Inputs, &compiler.Value{Name: name, DType: t.DType})
		feed[name] = t
	}
	for i := range nOut {
		name := fmt.Sprintf("y%d", i)
		n.Outputs = append(n.Outputs, name)
		g.Outputs = append(g.Outputs, &compiler.Value{Name: name})
	}
	g.Nodes = []*compiler.Node{n}
	return g, feed
}

// runOp runs one node through New and Run and returns its outputs in order.
func runOp(op string, opset int64, at attrs, nOut int, inputs ...*compiler.Tensor) ([]*compiler.Tensor, error) {
	g, feed := nodeGraph(op, opset, at, nOut, inputs...)
	res, err := Run(g, feed, &Options{Threads: 3})
	if err != nil {
		return nil, err
	}
	out := make([]*compiler.Tensor, nOut)
	for i := range out {
		out[i] = res[fmt.Sprintf("y%d", i)]
	}
	return out, nil
}

// opCase is one table-driven op test: the outputs want (compared with
// tolerance tol for floats, exactly otherwise), or an error wrapping
// wantErr.
type opCase struct {
	name    string
	op      string
	opset   int64 // 0: newest semantics
	attrs   attrs
	in      []*compiler.Tensor
	want    []*compiler.Tensor
	wantErr error
	tol     float64
}

func runCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nOut := max(len(c.want), 1)
			got, err := runOp(c.op, c.opset, c.attrs, nOut, c.in...)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want one wrapping %v", err, c.wantErr)
				}
				if !errors.Is(err, compiler.ErrBadInput) {
					t.Errorf("error %v does not wrap ErrBadInput", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				if msg := diff(got[i], w, c.tol); msg != "" {
					t.Errorf("output %d: %s", i, msg)
				}
			}
		})
	}
}

// diff describes how got differs from want ("" when they match): dtype,
// shape, and values within tol for floats (NaN equals NaN), exact otherwise.
func diff(got, want *compiler.Tensor, tol float64) string {
	if got == nil {
		return "missing"
	}
	if err := got.Check(); err != nil {
		return err.Error()
	}
	if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) {
		return fmt.Sprintf("got %s%v, want %s%v", got.DType, got.Shape, want.DType, want.Shape)
	}
	if !ops.IsFloat(want.DType) {
		if !slices.Equal(got.I64, want.I64) || !slices.Equal(got.I32, want.I32) || !slices.Equal(got.I8, want.I8) ||
			!slices.Equal(got.U8, want.U8) || !slices.Equal(got.Bool, want.Bool) {
			return fmt.Sprintf("got %v, want %v", ops.Float64s(got), ops.Float64s(want))
		}
		return ""
	}
	g, w := ops.Float64s(got), ops.Float64s(want)
	for i := range w {
		same := g[i] == w[i] || (math.IsNaN(g[i]) && math.IsNaN(w[i]))
		if !same {
			same = math.Abs(g[i]-w[i]) <= tol*math.Max(1, math.Abs(w[i]))
		}
		if !same {
			return fmt.Sprintf("element %d: got %v, want %v (all: %v vs %v)", i, g[i], w[i], g, w)
		}
	}
	return ""
}
