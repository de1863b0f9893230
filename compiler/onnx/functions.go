package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
)

// Newer ONNX opsets define some ops of the default domain as functions of
// older ones: Gelu (opset 20), which torch.onnx's dynamo exporter (the
// default of torch.onnx.export since torch 2.9, which writes opset 20
// by default) writes for every F.gelu, and Attention (opset 23), which it
// writes for F.scaled_dot_product_attention from opset 23 on. sqc reads
// them by expanding each into the ops of its ONNX definition, through the
// same expander as ONNX Runtime's com.microsoft ops (contrib.go): the
// fusion passes then find the GELU and the attention they find in any
// other export. What the expansion does not compute (a key/value cache,
// causal or soft-capped attention) is refused naming the node. Split,
// Clip and ReduceL2, which are not function ops, are expanded the same
// way, into the ops they are made of (split.go, clip_l2.go).

// functionPrefix marks, between reading and expansion, a default-domain
// node that is expanded: its op is functionPrefix + op type, which no op
// table entry has.
const functionPrefix = "ai.onnx.function."

// functionExpanders are the default-domain function ops sqc expands.
var functionExpanders = map[string]func(e *contribExpander, n *compiler.Node) error{
	"Gelu":      (*contribExpander).onnxGelu,
	"Attention": (*contribExpander).onnxAttention,
	"Split":     (*contribExpander).onnxSplit,
	"Clip":      (*contribExpander).onnxClip,
	"ReduceL2":  (*contribExpander).onnxReduceL2,
}

// isFunctionOp reports whether sqc expands op of the given domain as an
// ONNX function op.
func isFunctionOp(domain, op string) bool {
	return isDefaultDomain(domain) && functionExpanders[op] != nil
}

// functionOp is the IR op name of an expanded default-domain node until
// expansion.
func functionOp(op string) string { return functionPrefix + op }

// onnxGelu: Gelu(X) with approximate "none" (erf) or "tanh".
func (e *contribExpander) onnxGelu(n *compiler.Node) error {
	if err := need(n, 0); err != nil {
		return err
	}
	switch a := n.AttrString("approximate", "none"); a {
	case "none":
		e.finish(n, e.b.GeluErf(n.Inputs[0], scope(n)))
	case "tanh":
		e.finish(n, e.b.GeluTanh(n.Inputs[0], scope(n)))
	default:
		return fmt.Errorf("%w: approximate %q (ONNX defines \"none\" and \"tanh\")", compiler.ErrMalformed, a)
	}
	return nil
}

// errFunction wraps a use of an ONNX function op that the expansion does
// not compute.
var errFunction = fmt.Errorf("%w: ONNX function op", ErrUnsupportedFeature)

// onnxAttention: Attention(Q, K, V[, attn_mask]) of opset 23, encoder
// attention: Y = softmax(Q·√s · (Kᵀ·√s) + bias)·V per head, s the scale
// attribute or 1/√(head size), bias the float mask as it is or a boolean
// mask as 0 where true and -inf where false (ONNX's definition). Q, K and V
// are [batch, heads, seq, head size], or [batch, seq, hidden] with
// q_num_heads and kv_num_heads given (the heads split and merged back).
// The scaled product is written as ONNX's definition and transformers'
// SDPA export write it, which FuseAttention takes. The mask broadcasts as
// opset 23 defines it (opset 24's padding of a shorter mask is not read:
// MaxOpset is 23). Grouped-query attention (fewer K/V heads than Q heads)
// is refused: for 3-D inputs here, for 4-D ones by shape inference of the
// Q·Kᵀ product, except the one-K/V-head case, which broadcasting computes
// as ONNX's repetition does.
func (e *contribExpander) onnxAttention(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	for i, what := range []string{"past_key", "past_value", "nonpad_kv_seqlen"} {
		if input(n, 4+i) != "" {
			return fmt.Errorf("%w: input %d (%s) is given; sqc compiles encoder attention without a key/value cache", errFunction, 4+i, what)
		}
	}
	if err := e.refuseOutputs(n, 1, "the key/value cache or the attention scores"); err != nil {
		return err
	}
	if n.AttrInt("is_causal", 0) != 0 {
		return fmt.Errorf("%w: is_causal=1 (decoder attention); sqc compiles encoders", errFunction)
	}
	if c := n.AttrFloat("softcap", 0); c != 0 {
		return fmt.Errorf("%w: softcap=%g is not supported", errFunction, c)
	}
	s := scope(n)
	q, k, v := n.Inputs[0], n.Inputs[1], n.Inputs[2]
	rank := e.rank(q)
	switch rank {
	case 4:
	case 3:
		hq, hkv := n.AttrInt("q_num_heads", 0), n.AttrInt("kv_num_heads", 0)
		if hq <= 0 || hkv <= 0 {
			return fmt.Errorf("%w: 3-D Q, K and V need q_num_heads and kv_num_heads", compiler.ErrMalformed)
		}
		if hq != hkv {
			return fmt.Errorf("%w: grouped-query attention (q_num_heads %d, kv_num_heads %d); sqc compiles encoders", errFunction, hq, hkv)
		}
		split := func(x, part string, heads int64) string {
			r := e.b.Op("Reshape", s+"/"+part+"_heads", x, e.b.Ints(fmt.Sprintf("const.i64.[0,0,%d,-1]", heads), 0, 0, heads, -1))
			return e.b.OpAttrs("Transpose", s+"/"+part+"_split", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 2, 1, 3)}, r)
		}
		q, k, v = split(q, "query", hq), split(k, "key", hkv), split(v, "value", hkv)
	default:
		return fmt.Errorf("%w: the rank of Q (%s) is not 3 or 4 as far as the file states", errFunction, q)
	}
	var scale string
	if a, ok := n.Attrs["scale"]; ok && a.Kind == compiler.AttrFloat {
		scale = e.b.Scalar(s+"/scale_value", a.Float)
	} else {
		// 1/√(head size), the head size read from Q's last dim (constant
		// once shapes are known: FoldConstants folds it).
		last := e.b.Op("Slice", s+"/head_size", e.b.Op("Shape", s+"/query_shape", q), e.b.Ints("const.i64.[-1]", -1), e.b.Ints("const.i64.[max]", math.MaxInt64))
		scale = e.b.Op("Div", s+"/scale", e.b.Scalar("const.one", 1), e.b.Op("Sqrt", s+"/sqrt_head_size", e.b.CastFloat(last, s+"/head_size_f32")))
	}
	sqrtScale := e.b.Op("Sqrt", s+"/sqrt_scale", scale)
	kT := e.b.OpAttrs("Transpose", s+"/key_transposed", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 1, 3, 2)}, k)
	scores := e.b.Op("MatMul", s+"/scores", e.b.Op("Mul", s+"/query_scaled", q, sqrtScale), e.b.Op("Mul", s+"/key_scaled", kT, sqrtScale))
	if mask := input(n, 3); mask != "" {
		bias := mask
		switch dt := e.dtype(mask); dt {
		case compiler.Bool:
			bias = e.b.Op("Where", s+"/mask_bias", mask, e.b.Scalar("const.zero", 0), e.b.Scalar("const.-inf", float32(math.Inf(-1))))
		case compiler.Float32:
		default:
			return fmt.Errorf("%w: attn_mask %s is %v as far as the file states; sqc reads a bool or float32 mask", errFunction, mask, dt)
		}
		scores = e.b.Op("Add", s+"/masked_scores", scores, bias)
	}
	y := e.b.Op("MatMul", s+"/context", e.b.Softmax(scores, s+"/probs"), v)
	if rank == 3 {
		y = e.b.Op("Reshape", s+"/merged", e.b.OpAttrs("Transpose", s+"/context_transposed", map[string]compiler.Attr{"perm": compiler.IntsAttr(0, 2, 1, 3)}, y),
			e.b.Ints("const.i64.[0,0,-1]", 0, 0, -1))
	}
	e.finish(n, y)
	return nil
}

// dtype is value name's dtype as the file states it: an initializer, a
// graph input or value_info, or what the op table's dtype rule gives for
// the node that made it from its inputs' dtypes (compiler.Undefined where
// none of these tells, as for an output of a node not yet expanded).
// Results are kept in e.dtypes, so shared chains are walked once.
func (e *contribExpander) dtype(name string) compiler.DType {
	if dt, ok := e.dtypes[name]; ok {
		return dt
	}
	dt := e.statedDType(name)
	if p := e.producer[name]; dt == compiler.Undefined && p != nil {
		if def, ok := compiler.LookupOp(p.Op); ok {
			in := make([]compiler.DType, len(p.Inputs))
			for i, x := range p.Inputs {
				if x != "" {
					in[i] = e.dtype(x)
				}
			}
			// A rule violation leaves that output Undefined: the verifier
			// reports it after loading.
			out, _ := def.InferDTypes(p, in)
			if i := slices.Index(p.Outputs, name); i >= 0 && i < len(out) {
				dt = out[i]
			}
		}
	}
	if e.dtypes == nil {
		e.dtypes = map[string]compiler.DType{}
	}
	e.dtypes[name] = dt
	return dt
}

// statedDType is name's dtype where the file declares it: an initializer,
// a graph input or value_info.
func (e *contribExpander) statedDType(name string) compiler.DType {
	if t, ok := e.g.Initializers[name]; ok {
		return t.DType
	}
	if v := e.g.Values[name]; v != nil && v.DType != compiler.Undefined {
		return v.DType
	}
	for _, v := range e.g.Inputs {
		if v.Name == name {
			return v.DType
		}
	}
	return compiler.Undefined
}
