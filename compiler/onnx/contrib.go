package onnx

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/blocks"
)

// ONNX Runtime's fused com.microsoft ops, as its transformer optimizer
// writes them into BERT-family models (optimum's model_O2.onnx and
// model_O3.onnx, or a session's optimized_model_filepath), are expanded
// here into the default-domain ops the exporters write for the same
// computation, through compiler/blocks: the fusion passes then find the
// GELUs, LayerNorms, Linears, attention and embeddings they find in a
// torch export, and nothing after the frontend knows the model came
// fused. Each expansion computes the op's documented result; where ONNX
// Runtime's kernel sums the same terms in another order (SkipLayerNorm's
// bias), the expansion takes the order the exporters write, which the
// fusions expect and which differs from the kernel's by float32 rounding
// only.
//
// The optional outputs ONNX Runtime uses in training (LayerNorm's mean and
// inverse deviation) and the key/value cache of decoder attention are
// refused when something reads them; so are attributes that change the
// computation beyond what is expanded (unidirectional attention, rotary
// embeddings, batch transposes).

// contribDomain is ONNX Runtime's op domain.
const contribDomain = "com.microsoft"

// contribExpanders are the com.microsoft ops sqc reads, by op type.
var contribExpanders = map[string]func(e *contribExpander, n *compiler.Node) error{
	"FusedMatMul":             (*contribExpander).fusedMatMul,
	"FusedGemm":               (*contribExpander).fusedGemm,
	"Gelu":                    geluOf((*blocks.Builder).GeluErf),
	"BiasGelu":                geluOf((*blocks.Builder).GeluErf),
	"FastGelu":                geluOf((*blocks.Builder).GeluTanh),
	"QuickGelu":               (*contribExpander).quickGelu,
	"SkipLayerNormalization":  (*contribExpander).skipLayerNorm,
	"EmbedLayerNormalization": (*contribExpander).embedLayerNorm,
	"Attention":               (*contribExpander).attention,
	"MultiHeadAttention":      (*contribExpander).multiHeadAttention,
	"LayerNormalization":      (*contribExpander).layerNorm,
	"MatMulNBits":             (*contribExpander).matMulNBits,
	"MatMulBnb4":              (*contribExpander).matMulBnb4,
	"DynamicQuantizeMatMul":   (*contribExpander).dynamicQuantizeMatMul,
	"MatMulIntegerToFloat":    (*contribExpander).matMulIntegerToFloat,
}

// isContribOp reports whether sqc expands op of domain com.microsoft.
func isContribOp(domain, op string) bool {
	return domain == contribDomain && contribExpanders[op] != nil
}

// contribOp is the IR op name a com.microsoft node carries between reading
// and expansion: its domain-qualified name, which no op table entry has.
func contribOp(op string) string { return contribDomain + "." + op }

// contribExpander rewrites a graph's com.microsoft nodes in place.
type contribExpander struct {
	g   *compiler.Graph
	b   blocks.Builder
	bad func(object string, err error) error
	// producer and readers index the graph as read (before expansion).
	producer map[string]*compiler.Node
	readers  map[string][]*compiler.Node
	outputs  map[string]bool           // graph outputs
	dtypes   map[string]compiler.DType // dtype's results
}

// errContrib wraps what is wrong with a com.microsoft node: a use of it
// the expansion does not compute (ErrUnsupportedFeature).
var errContrib = fmt.Errorf("%w: ONNX Runtime op", ErrUnsupportedFeature)

// expansionFamilies are the kinds of node the expander rewrites: each
// family's nodes carry prefix + op type between reading and expansion, and
// the ops of each family that a graph held are noted in g.Meta under meta
// (`sqc inspect` shows them).
var expansionFamilies = []struct {
	prefix, meta string
	expanders    map[string]func(*contribExpander, *compiler.Node) error
}{
	{contribDomain + ".", "expanded_com.microsoft", contribExpanders},
	{functionPrefix, "expanded_onnx_functions", functionExpanders},
}

// expandContrib replaces every com.microsoft node and every expanded ONNX
// function op of g (in topological order) by its default-domain expansion,
// keeping the node's place and output names, and notes the ops it
// expanded in g.Meta.
func (b *builder) expandContrib(g *compiler.Graph) error {
	family := func(n *compiler.Node) int {
		for i, f := range expansionFamilies {
			if strings.HasPrefix(n.Op, f.prefix) {
				return i
			}
		}
		return -1
	}
	if !slices.ContainsFunc(g.Nodes, func(n *compiler.Node) bool { return family(n) >= 0 }) {
		return nil
	}
	e := &contribExpander{g: g, bad: b.bad, producer: map[string]*compiler.Node{}, readers: map[string][]*compiler.Node{}, outputs: map[string]bool{}}
	e.b = blocks.Builder{G: g, Fresh: g.Namer().Fresh}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				e.producer[o] = n
			}
		}
		for _, in := range n.Inputs {
			e.readers[in] = append(e.readers[in], n)
		}
	}
	for _, o := range g.Outputs {
		e.outputs[o.Name] = true
	}
	nodes := g.Nodes
	g.Nodes = make([]*compiler.Node, 0, len(nodes))
	expanded := make([]map[string]int, len(expansionFamilies))
	defer func() {
		for i, counts := range expanded {
			if len(counts) == 0 {
				continue
			}
			var parts []string
			for _, op := range slices.Sorted(maps.Keys(counts)) {
				parts = append(parts, fmt.Sprintf("%s %d", op, counts[op]))
			}
			g.Meta[expansionFamilies[i].meta] = strings.Join(parts, ", ")
		}
	}()
	for _, n := range nodes {
		fi := family(n)
		if fi < 0 {
			g.Nodes = append(g.Nodes, n)
			continue
		}
		f := expansionFamilies[fi]
		op := strings.TrimPrefix(n.Op, f.prefix)
		if expanded[fi] == nil {
			expanded[fi] = map[string]int{}
		}
		expanded[fi][op]++
		var err error
		if len(n.Outputs) == 0 || n.Outputs[0] == "" {
			err = fmt.Errorf("%w: the node has no output 0", compiler.ErrMalformed)
		} else {
			err = f.expanders[op](e, n)
		}
		if err != nil {
			// com.microsoft ops keep their domain in the message; ONNX's own
			// are named as the file names them.
			return b.bad("node "+n.Name+" ("+strings.TrimPrefix(n.Op, functionPrefix)+")", err)
		}
	}
	return nil
}

// input is n's input i, "" when absent.
func input(n *compiler.Node, i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

// used reports whether value name is read by a node or is a graph output.
func (e *contribExpander) used(name string) bool {
	return name != "" && (e.outputs[name] || len(e.readers[name]) > 0)
}

// refuseOutputs fails if any of n's outputs from index from on is used.
func (e *contribExpander) refuseOutputs(n *compiler.Node, from int, what string) error {
	for i := from; i < len(n.Outputs); i++ {
		if e.used(n.Outputs[i]) {
			return fmt.Errorf("%w: output %d (%s, %s) is read; sqc computes only the op's main output", errContrib, i, n.Outputs[i], what)
		}
	}
	return nil
}

// need fails unless n has its inputs at the given indices.
func need(n *compiler.Node, idx ...int) error {
	for _, i := range idx {
		if input(n, i) == "" {
			return fmt.Errorf("%w: input %d is missing", compiler.ErrMalformed, i)
		}
	}
	return nil
}

// finish names the expansion's result value as n's output 0.
func (e *contribExpander) finish(n *compiler.Node, value string) {
	e.b.Rename(value, n.Outputs[0])
}

// scope is the name stem of an expansion's nodes.
func scope(n *compiler.Node) string {
	if n.Name != "" {
		return n.Name
	}
	return n.Outputs[0]
}

// rank finds the rank of value name from what the file states: an
// initializer, a graph input or value_info shape, or the op that made it
// (Transpose's perm, Reshape to a constant shape, and the ops that keep
// their input's rank). It returns -1 where none of these tells.
func (e *contribExpander) rank(name string) int {
	for range 64 {
		if name == "" {
			return -1
		}
		if t, ok := e.g.Initializers[name]; ok {
			return len(t.Shape)
		}
		if v := e.g.Values[name]; v != nil && v.Shape != nil {
			return len(v.Shape)
		}
		for _, v := range e.g.Inputs {
			if v.Name == name && v.Shape != nil {
				return len(v.Shape)
			}
		}
		n := e.producer[name]
		if n == nil {
			return -1
		}
		switch {
		case n.Op == "Transpose" && n.Attrs["perm"].Kind == compiler.AttrInts:
			return len(n.Attrs["perm"].Ints)
		case n.Op == "Reshape":
			if t := e.constant(input(n, 1)); t != nil && len(t.Shape) == 1 {
				return int(t.Shape[0])
			}
			return -1
		case n.Op == "MatMul":
			// [.., m, k]·[k, n] keeps the rank of its first operand.
			if w := e.constant(input(n, 1)); w == nil || len(w.Shape) != 2 {
				return -1
			}
			name = input(n, 0)
		case n.Op == contribOp("EmbedLayerNormalization") && n.Outputs[0] == name:
			// [batch, seq] ids give [batch, seq, hidden] embeddings.
			if r := e.rank(input(n, 0)); r >= 0 {
				return r + 1
			}
			return -1
		case slices.Contains(rankKeepingOps, n.Op) && n.Outputs[0] == name:
			name = input(n, 0)
		default:
			return -1
		}
	}
	return -1
}

// constant is the value of name when the file gives it: an initializer or
// a Constant node's value; nil otherwise.
func (e *contribExpander) constant(name string) *compiler.Tensor {
	if t, ok := e.g.Initializers[name]; ok {
		return t
	}
	if n := e.producer[name]; n != nil && n.Op == "Constant" {
		return n.Attrs["value"].Tensor
	}
	return nil
}

// rankKeepingOps give an output 0 of their input 0's rank (the contrib ops
// among them as they read before expansion).
var rankKeepingOps = []string{"Cast", "Add", "Sub", "Mul", "Div", "Softmax", "Relu", "Tanh", "Erf", "Sigmoid", "Identity", "LayerNormalization",
	contribOp("SkipLayerNormalization"), contribOp("LayerNormalization"), contribOp("BiasGelu"), contribOp("FastGelu"), contribOp("Gelu"),
	contribOp("QuickGelu"), contribOp("Attention"), contribOp("MultiHeadAttention"), functionOp("Gelu"), functionOp("Attention")}

// swapLast transposes the last two axes of x, whose rank must be known.
func (e *contribExpander) swapLast(n *compiler.Node, x, which string) (string, error) {
	r := e.rank(x)
	if r < 2 {
		return "", fmt.Errorf("%w: %s=1 needs the rank of %s, which the file does not state (no value_info, initializer or shaping op before it)", errContrib, which, x)
	}
	perm := make([]int64, r)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[r-1], perm[r-2] = perm[r-2], perm[r-1]
	return e.b.OpAttrs("Transpose", scope(n)+"/"+which, map[string]compiler.Attr{"perm": compiler.IntsAttr(perm...)}, x), nil
}

// fusedMatMul: Y = alpha · op(A)·op(B), op transposing the last two axes
// where transA / transB is set.
func (e *contribExpander) fusedMatMul(n *compiler.Node) error {
	if err := need(n, 0, 1); err != nil {
		return err
	}
	if n.AttrInt("transBatchA", 0) != 0 || n.AttrInt("transBatchB", 0) != 0 {
		return fmt.Errorf("%w: transBatchA/transBatchB are not supported", errContrib)
	}
	a, bm := n.Inputs[0], n.Inputs[1]
	var err error
	if n.AttrInt("transA", 0) != 0 {
		if a, err = e.swapLast(n, a, "transA"); err != nil {
			return err
		}
	}
	if n.AttrInt("transB", 0) != 0 {
		if bm, err = e.swapLast(n, bm, "transB"); err != nil {
			return err
		}
	}
	y := e.b.Op("MatMul", scope(n)+"/MatMul", a, bm)
	if alpha := n.AttrFloat("alpha", 1); alpha != 1 {
		y = e.b.Op("Mul", scope(n)+"/alpha", y, e.b.Scalar(fmt.Sprintf("%s/alpha_value", scope(n)), alpha))
	}
	e.finish(n, y)
	return nil
}

// fusedGemm: Gemm followed by the activation its attribute names.
func (e *contribExpander) fusedGemm(n *compiler.Node) error {
	if err := need(n, 0, 1); err != nil {
		return err
	}
	attrs := map[string]compiler.Attr{}
	for _, k := range []string{"alpha", "beta", "transA", "transB"} {
		if a, ok := n.Attrs[k]; ok {
			attrs[k] = a
		}
	}
	act := n.AttrString("activation", "")
	if act != "" && act != "Relu" && act != "Tanh" && act != "Sigmoid" {
		return fmt.Errorf("%w: activation %q (sqc reads Relu, Tanh and Sigmoid)", errContrib, act)
	}
	inputs := slices.Clone(n.Inputs)
	y := e.b.OpAttrs("Gemm", scope(n)+"/Gemm", attrs, inputs...)
	if act != "" {
		y = e.b.Op(act, scope(n)+"/"+act, y)
	}
	e.finish(n, y)
	return nil
}

// geluOf expands Gelu(X), BiasGelu(A, B) = Gelu(A + B) (form: GELU's erf
// form) and FastGelu(X[, bias]) (its tanh form).
func geluOf(form func(b *blocks.Builder, x, scope string) string) func(*contribExpander, *compiler.Node) error {
	return func(e *contribExpander, n *compiler.Node) error {
		x, err := e.biased(n)
		if err != nil {
			return err
		}
		e.finish(n, form(&e.b, x, scope(n)))
		return nil
	}
}

// quickGelu: X · sigmoid(alpha · X), alpha 1.702 by default.
func (e *contribExpander) quickGelu(n *compiler.Node) error {
	if err := need(n, 0); err != nil {
		return err
	}
	x := n.Inputs[0]
	alpha := e.b.Scalar(scope(n)+"/alpha_value", n.AttrFloat("alpha", 1.702))
	s := e.b.Op("Sigmoid", scope(n)+"/Sigmoid", e.b.Op("Mul", scope(n)+"/scaled", x, alpha))
	e.finish(n, e.b.Op("Mul", scope(n)+"/gelu", x, s))
	return nil
}

// biased is input 0 plus input 1 where the op has one (a bias).
func (e *contribExpander) biased(n *compiler.Node) (string, error) {
	if err := need(n, 0); err != nil {
		return "", err
	}
	if input(n, 1) == "" {
		return n.Inputs[0], nil
	}
	return e.b.Op("Add", scope(n)+"/bias_add", n.Inputs[0], n.Inputs[1]), nil
}

// The epsilons ONNX Runtime's fused LayerNorms take when the attribute is
// absent (its contrib op schemas; the default-domain LayerNormalization's
// is ONNX's 1e-5).
const (
	skipLayerNormEpsilon  = 1e-12
	embedLayerNormEpsilon = 1e-12
)

// layerNormOf emits LayerNormalization over the last axis of x; a missing
// beta becomes zeros as wide as gamma.
func (e *contribExpander) layerNormOf(n *compiler.Node, x, gamma, beta string, epsilon float32) (string, error) {
	if beta == "" {
		t, ok := e.g.Initializers[gamma]
		if !ok || len(t.Shape) != 1 {
			return "", fmt.Errorf("%w: without beta, gamma %s must be a 1-D initializer", errContrib, gamma)
		}
		beta = e.b.Fresh(scope(n) + "/zero_beta")
		e.g.Initializers[beta] = compiler.NewTensor(compiler.Float32, t.Shape[0])
	}
	return e.b.LayerNorm(x, gamma, beta, scope(n)+"/LayerNormalization", epsilon), nil
}

// layerNorm: ONNX Runtime's LayerNormalization registered in its own
// domain (older optimizer outputs), as the default-domain op.
func (e *contribExpander) layerNorm(n *compiler.Node) error {
	if err := need(n, 0, 1); err != nil {
		return err
	}
	if axis := n.AttrInt("axis", -1); axis != -1 && int(axis) != e.rank(n.Inputs[0])-1 {
		return fmt.Errorf("%w: axis %d (sqc normalises over the last axis)", errContrib, axis)
	}
	if err := e.refuseOutputs(n, 1, "mean and inverse deviation"); err != nil {
		return err
	}
	y, err := e.layerNormOf(n, n.Inputs[0], n.Inputs[1], input(n, 2), n.AttrFloat("epsilon", 1e-5))
	if err != nil {
		return err
	}
	e.finish(n, y)
	return nil
}

// skipLayerNorm: SkipLayerNormalization(input, skip, gamma[, beta[,
// bias]]) = LayerNorm(input + skip + bias). Output 3, when used, is the sum.
// The bias is added to whichever of input and skip a MatMul made (the
// projection it is the bias of), before the other: the order of a torch
// export, whose Linear adds its bias before the residual.
func (e *contribExpander) skipLayerNorm(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	for i := 1; i < min(3, len(n.Outputs)); i++ {
		if e.used(n.Outputs[i]) {
			return fmt.Errorf("%w: output %d (%s, the mean or inverse deviation) is read; sqc computes the normalised output and the sum", errContrib, i, n.Outputs[i])
		}
	}
	x, skip := n.Inputs[0], n.Inputs[1]
	if bias := input(n, 4); bias != "" {
		if p := e.producer[skip]; p != nil && p.Op == "MatMul" && (e.producer[x] == nil || e.producer[x].Op != "MatMul") {
			x, skip = skip, x
		}
		x = e.b.Op("Add", scope(n)+"/bias_add", x, bias)
	}
	sum := e.b.Op("Add", scope(n)+"/skip_add", x, skip)
	if len(n.Outputs) > 3 && e.used(n.Outputs[3]) {
		sum = e.b.Rename(sum, n.Outputs[3])
	}
	y, err := e.layerNormOf(n, sum, n.Inputs[2], input(n, 3), n.AttrFloat("epsilon", skipLayerNormEpsilon))
	if err != nil {
		return err
	}
	e.finish(n, y)
	return nil
}

// embedLayerNorm: EmbedLayerNormalization(input_ids, segment_ids,
// word_embedding, position_embedding, segment_embedding, gamma, beta[,
// mask[, position_ids]]) = LayerNorm((word[ids] + position[position_ids]) +
// segment[segment_ids]), positions 0..seq-1 without position_ids: the sum
// in ONNX Runtime's order, which FuseEmbeddings fuses as it is
// (positions_first).
// Output 1 (mask_index) is the mask's per-sequence count of ones; the
// Attention nodes reading it take the mask itself instead (attention).
// Output 2, when used, is the sum before the LayerNorm.
func (e *contribExpander) embedLayerNorm(n *compiler.Node) error {
	if err := need(n, 0, 2, 3, 5, 6); err != nil {
		return err
	}
	s := scope(n)
	ids := e.uncastIDs(n.Inputs[0])
	sum := e.b.Gather(n.Inputs[2], ids, s+"/word_embeddings")
	var positions string
	if pids := input(n, 8); pids != "" {
		positions = e.b.Gather(n.Inputs[3], pids, s+"/position_embeddings")
	} else {
		positions = e.b.PositionRows(n.Inputs[3], ids, s+"/position_embeddings")
	}
	sum = e.b.Op("Add", s+"/add_positions", sum, positions)
	if seg, table := input(n, 1), input(n, 4); seg != "" && table != "" {
		sum = e.b.Op("Add", s+"/add_segments", sum, e.b.Gather(table, e.uncastIDs(seg), s+"/segment_embeddings"))
	}
	if len(n.Outputs) > 2 && e.used(n.Outputs[2]) {
		sum = e.b.Rename(sum, n.Outputs[2])
	}
	y, err := e.layerNormOf(n, sum, n.Inputs[5], n.Inputs[6], n.AttrFloat("epsilon", embedLayerNormEpsilon))
	if err != nil {
		return err
	}
	e.finish(n, y)
	if len(n.Outputs) > 1 && e.maskIndexReadElsewhere(n.Outputs[1]) {
		mask := input(n, 7)
		if mask == "" {
			return fmt.Errorf("%w: output 1 (mask_index) is read but the node has no mask input", errContrib)
		}
		// The count of ones per sequence, int32 [batch].
		m := e.b.OpAttrs("Cast", s+"/mask_i32", map[string]compiler.Attr{"to": compiler.IntAttr(compiler.Int32.ONNX())}, mask)
		var count string
		if e.g.Opset >= 13 {
			count = e.b.OpAttrs("ReduceSum", s+"/mask_index", map[string]compiler.Attr{"keepdims": compiler.IntAttr(0)}, m, e.b.Ints("const.i64.[1]", 1))
		} else {
			count = e.b.OpAttrs("ReduceSum", s+"/mask_index", map[string]compiler.Attr{"keepdims": compiler.IntAttr(0), "axes": compiler.IntsAttr(1)}, m)
		}
		e.b.Rename(count, n.Outputs[1])
	}
	return nil
}

// uncastIDs looks through the Cast to int32 that ONNX Runtime's fused ops
// need in front of an int64 graph input (token ids, the attention mask):
// the expansion's Gather and mask arithmetic read the int64 values as
// they are, which the fusion passes recognise as the model's inputs. Ids
// and 0/1 masks fit int32, so the values do not change.
func (e *contribExpander) uncastIDs(name string) string {
	c := e.producer[name]
	if c == nil || c.Op != "Cast" || c.AttrInt("to", 0) != compiler.Int32.ONNX() {
		return name
	}
	for _, v := range e.g.Inputs {
		if v.Name == input(c, 0) && v.DType == compiler.Int64 {
			return v.Name
		}
	}
	return name
}

// maskIndexReadElsewhere reports whether an EmbedLayerNormalization's
// mask_index output is read by anything other than an Attention node (those
// take the mask itself).
func (e *contribExpander) maskIndexReadElsewhere(name string) bool {
	if name == "" {
		return false
	}
	if e.outputs[name] {
		return true
	}
	for _, r := range e.readers[name] {
		if r.Op != contribOp("Attention") || input(r, 3) != name {
			return true
		}
	}
	return false
}

// attentionMaskFill is the value ONNX Runtime's Attention adds to the
// scores of masked keys when mask_filter_value is not given.
const attentionMaskFill = -10000

// attention: ONNX Runtime's BERT self-attention, Attention(input, weights,
// bias, mask_index) {num_heads[, qkv_hidden_sizes, scale,
// mask_filter_value]}: Q, K and V are the three column blocks of input ·
// weights + bias (weights [in, hq+hk+hv], q first), each head a contiguous
// run of columns; softmax(Q·Kᵀ·scale + mask)·V per head, scale 1/√(head
// size) by default. The packed weights and bias are split into three
// initializers, so the expansion is the three Linears and eager attention
// of a torch export (FuseQKV joins them again after quantisation). The mask
// may be the [batch, keys] 0/1 mask itself (masked keys get
// mask_filter_value, -10000 by default) or an EmbedLayerNormalization's
// mask_index, whose count of ones is that same mask for the right-padded
// masks tokenizers give: the expansion reads the mask behind it.
func (e *contribExpander) attention(n *compiler.Node) error {
	if err := need(n, 0, 1); err != nil {
		return err
	}
	if n.AttrInt("unidirectional", 0) != 0 || n.AttrInt("do_rotary", 0) != 0 {
		return fmt.Errorf("%w: unidirectional or rotary attention (sqc compiles encoders)", errContrib)
	}
	if err := e.refuseDecoding(n, 4, "past", "attention_bias", "past_sequence_length"); err != nil {
		return err
	}
	heads := int(n.AttrInt("num_heads", 0))
	w := e.constant(n.Inputs[1])
	if heads <= 0 || w == nil || len(w.Shape) != 2 || w.DType != compiler.Float32 {
		return fmt.Errorf("%w: needs num_heads > 0 and weights as a float32 [in, 3·hidden] initializer", errContrib)
	}
	in, total := w.Shape[0], w.Shape[1]
	sizes := []int64{total / 3, total / 3, total / 3}
	if a, ok := n.Attrs["qkv_hidden_sizes"]; ok {
		sizes = a.Ints
	}
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != total || sizes[0] != sizes[1] || sizes[0] != sizes[2] || sizes[0]%int64(heads) != 0 || total%3 != 0 {
		return fmt.Errorf("%w: weights %v with qkv_hidden_sizes %v and %d heads: sqc needs Q, K and V of one width divisible by the heads", errContrib, w.Shape, sizes, heads)
	}
	hidden := sizes[0]
	headSize := int(hidden) / heads
	var bias *compiler.Tensor
	if name := input(n, 2); name != "" {
		bias = e.constant(name)
		if bias == nil || bias.DType != compiler.Float32 || len(bias.F32) != int(total) {
			return fmt.Errorf("%w: bias must be a float32 [%d] initializer", errContrib, total)
		}
	}
	s := scope(n)
	proj := [3]string{}
	for p, part := range []string{"query", "key", "value"} {
		wt := compiler.NewTensor(compiler.Float32, in, hidden)
		for r := range in {
			copy(wt.F32[r*hidden:(r+1)*hidden], w.F32[r*total+int64(p)*hidden:r*total+int64(p+1)*hidden])
		}
		wName := e.b.Fresh(s + "." + part + ".weight")
		e.g.Initializers[wName] = wt
		y := e.b.Op("MatMul", s+"."+part+"/MatMul", n.Inputs[0], wName)
		if bias != nil {
			bt := compiler.NewTensor(compiler.Float32, hidden)
			copy(bt.F32, bias.F32[int64(p)*hidden:int64(p+1)*hidden])
			bName := e.b.Fresh(s + "." + part + ".bias")
			e.g.Initializers[bName] = bt
			y = e.b.Op("Add", s+"."+part+"/Add", y, bName)
		}
		proj[p] = y
	}
	e.dropIfOnlyReader(n, n.Inputs[1], input(n, 2))
	return e.attend(n, proj, input(n, 3), heads, headSize)
}

// dropIfOnlyReader deletes the initializers named that n alone reads: the
// packed weights an expansion has split into new ones, which would
// otherwise be carried (and embedded) twice.
func (e *contribExpander) dropIfOnlyReader(n *compiler.Node, names ...string) {
	for _, name := range names {
		if _, ok := e.g.Initializers[name]; !ok || e.outputs[name] {
			continue
		}
		if rs := e.readers[name]; len(rs) > 0 && !slices.ContainsFunc(rs, func(r *compiler.Node) bool { return r != n }) {
			delete(e.g.Initializers, name)
		}
	}
}

// refuseDecoding fails if n has any of the decoder inputs named, from
// index first on, or reads its outputs after the first (the key/value
// cache).
func (e *contribExpander) refuseDecoding(n *compiler.Node, first int, names ...string) error {
	for i, what := range names {
		if input(n, first+i) != "" {
			return fmt.Errorf("%w: input %d (%s) is given; sqc compiles encoders without it", errContrib, first+i, what)
		}
	}
	return e.refuseOutputs(n, 1, "present key/value")
}

// attend finishes an attention node on its projected q, k and v: the
// mask bias of mask (attentionMask), the node's scale (1/√headSize
// unless its scale attribute says otherwise) and eager attention.
func (e *contribExpander) attend(n *compiler.Node, qkv [3]string, mask string, heads, headSize int) error {
	maskBias, err := e.attentionMask(n, mask)
	if err != nil {
		return err
	}
	s := scope(n)
	divisor := e.b.HeadDivisor(headSize)
	scaleOp := "Div"
	if a, ok := n.Attrs["scale"]; ok && a.Float != 0 {
		divisor, scaleOp = e.b.Scalar(s+"/scale_value", a.Float), "Mul"
	}
	e.finish(n, e.b.SelfAttention(s, qkv[0], qkv[1], qkv[2], scaleOp, divisor, maskBias, heads, headSize))
	return nil
}

// multiHeadAttention: MultiHeadAttention(query, key, value[, bias[,
// key_padding_mask]]) {num_heads[, scale, mask_filter_value]}, the
// optimizer's opt-in form of BERT attention: q, k, v the projections
// without their biases ([batch, seq, hidden] each), bias their three
// biases end to end, softmax(Q·Kᵀ·scale + mask)·V per head. The packed
// forms (query [batch, seq, heads, 3, head], key [batch, seq, heads, 2,
// head]) and the key/value cache are refused.
func (e *contribExpander) multiHeadAttention(n *compiler.Node) error {
	if err := need(n, 0, 1, 2); err != nil {
		return err
	}
	if n.AttrInt("unidirectional", 0) != 0 {
		return fmt.Errorf("%w: unidirectional attention (sqc compiles encoders)", errContrib)
	}
	if err := e.refuseDecoding(n, 5, "attention_bias", "past_key", "past_value", "past_sequence_length", "cache_indirection"); err != nil {
		return err
	}
	heads := int(n.AttrInt("num_heads", 0))
	if heads <= 0 {
		return fmt.Errorf("%w: needs num_heads > 0", errContrib)
	}
	for _, x := range n.Inputs[:3] {
		if r := e.rank(x); r != 3 {
			return fmt.Errorf("%w: query, key and value must be [batch, seq, hidden] each (%s: rank %s)", errContrib, x, rankText(r))
		}
	}
	qkv := [3]string(n.Inputs[:3])
	width := int64(-1)
	if name := input(n, 3); name != "" {
		bias := e.constant(name)
		if bias == nil || bias.DType != compiler.Float32 || len(bias.Shape) != 1 || bias.Shape[0]%3 != 0 {
			return fmt.Errorf("%w: bias must be a float32 [3·hidden] constant", errContrib)
		}
		width = bias.Shape[0] / 3
		s := scope(n)
		for p, part := range []string{"query", "key", "value"} {
			bt := compiler.NewTensor(compiler.Float32, width)
			copy(bt.F32, bias.F32[int64(p)*width:int64(p+1)*width])
			bName := e.b.Fresh(s + "." + part + ".bias")
			e.g.Initializers[bName] = bt
			qkv[p] = e.b.Op("Add", s+"."+part+"/Add", qkv[p], bName)
		}
		e.dropIfOnlyReader(n, name)
	}
	headSize, err := e.headSize(qkv[0], width, heads)
	if err != nil {
		return err
	}
	return e.attend(n, qkv, input(n, 4), heads, headSize)
}

// headSize is the width of one head of q: width/heads where the bias gave
// the width (> 0), else from q's declared last dimension or the weight of
// the MatMul that made it.
func (e *contribExpander) headSize(q string, width int64, heads int) (int, error) {
	if width <= 0 {
		if v := e.g.Values[q]; v != nil && len(v.Shape) == 3 && v.Shape[2].Known() {
			width = v.Shape[2].Size
		} else if p := e.producer[q]; p != nil && p.Op == "MatMul" {
			if w := e.constant(input(p, 1)); w != nil && len(w.Shape) == 2 {
				width = w.Shape[1]
			}
		}
	}
	if width <= 0 || width%int64(heads) != 0 {
		return 0, fmt.Errorf("%w: the query width (%d; from the bias, value_info or the projection's weight) must be known and divisible by %d heads", errContrib, width, heads)
	}
	return int(width) / heads, nil
}

// attentionMask is the additive mask bias of an attention node's mask
// (Attention's mask_index, MultiHeadAttention's key_padding_mask), "" for
// none. A 1-D mask_index (keys from the
// count on are masked) must be the count of ones of a [batch, keys] mask,
// as the optimizer writes it (ReduceSum over axis 1 of the cast mask, or
// EmbedLayerNormalization's output 1): for the right-padded masks
// tokenizers give that is the mask itself, which the expansion then reads.
func (e *contribExpander) attentionMask(n *compiler.Node, mask string) (string, error) {
	if mask == "" {
		return "", nil
	}
	if raw, ok := e.maskBehindCount(mask); ok {
		mask = raw
	} else if r := e.rank(mask); r != 2 {
		return "", fmt.Errorf("%w: mask_index %s must be the [batch, keys] 0/1 attention mask or its count of ones per sequence (ReduceSum over axis 1, or EmbedLayerNormalization's mask_index); its rank here: %s", errContrib, mask, rankText(r))
	}
	fill := float32(attentionMaskFill)
	if a, ok := n.Attrs["mask_filter_value"]; ok {
		fill = a.Float
	}
	if math.IsNaN(float64(fill)) {
		return "", fmt.Errorf("%w: mask_filter_value is NaN", errContrib)
	}
	return e.b.ExtendedMask(e.uncastIDs(mask), scope(n)+"/mask", e.b.Scalar(fmt.Sprintf("const.mask_fill.%g", fill), fill)), nil
}

// maskBehindCount returns the [batch, keys] mask whose per-row count of
// ones is value count: EmbedLayerNormalization's mask_index (its mask
// input), or ReduceSum(mask, axes [1], keepdims 0) of a rank-2 mask.
func (e *contribExpander) maskBehindCount(count string) (string, bool) {
	p := e.producer[count]
	switch {
	case p == nil:
		return "", false
	case p.Op == contribOp("EmbedLayerNormalization") && len(p.Outputs) > 1 && p.Outputs[1] == count:
		return input(p, 7), input(p, 7) != ""
	case p.Op == "ReduceSum" && p.AttrInt("keepdims", 1) == 0 && e.rank(input(p, 0)) == 2:
		axes := p.Attrs["axes"].Ints
		if t := e.constant(input(p, 1)); t != nil && t.DType == compiler.Int64 {
			axes = t.I64
		}
		if len(axes) == 1 && (axes[0] == 1 || axes[0] == -1) {
			return input(p, 0), true
		}
	}
	return "", false
}

func rankText(r int) string {
	if r < 0 {
		return "not stated in the file"
	}
	return fmt.Sprint(r)
}
