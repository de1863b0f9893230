package exec

import (
	"fmt"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Compile lowers g into a Program (see the package comment). g must be a
// valid graph (Verify); Compile does not modify it, and reads its
// initializers only while compiling (weights are packed into the Program;
// the f32 constants it uses as they are, so g's initializers must not be
// modified while the Program is in use).
func Compile(g *compiler.Graph, opts Options) (*Program, error) {
	s, err := Lower(g)
	if err != nil {
		return nil, err
	}
	return NewProgram(s, opts)
}

// Lower translates g into a Schedule: pure data, with the weights packed;
// it starts no workers and touches no CPU permissions. g is read as for
// Compile.
func Lower(g *compiler.Graph) (*Schedule, error) {
	if g == nil {
		return nil, fmt.Errorf("exec: %w: nil graph", compiler.ErrInvalidRequest)
	}
	if err := g.Verify(); err != nil {
		return nil, err
	}
	w := workingCopy(g)
	if err := w.InferShapes(); err != nil {
		return nil, err
	}
	l := newLowering(w)
	for i, n := range w.Nodes {
		if err := l.lowerNode(i, n); err != nil {
			return nil, err
		}
	}
	p := l.p
	for _, v := range g.Inputs {
		p.inputs = append(p.inputs, v)
		p.inputSlots = append(p.inputSlots, l.slot(v.Name))
	}
	for _, v := range g.Outputs {
		p.outputs = append(p.outputs, v)
		p.outputSlots = append(p.outputSlots, l.slot(v.Name))
	}
	p.pack = planPacking(p) // packed.go
	return p, nil
}

// NewProgram binds s to a worker pool and a GEMM engine of opts and gives
// it its buffers. s must come from Lower and run in no other Program.
func NewProgram(s *Schedule, opts Options) (*Program, error) {
	if s == nil {
		return nil, fmt.Errorf("exec: %w: nil schedule", compiler.ErrInvalidRequest)
	}
	p := &Program{Schedule: s, padded: opts.Padded}
	p.bufs = p.newBuffers() // carved from the arena at the first Run (reuse.go)
	p.pool = pool.New(opts.Threads)
	e, err := qgemm.New(qgemm.Options{Pool: p.pool, ISA: opts.ISA, Variant: opts.Variant, SeparateEpilogue: opts.SeparateEpilogue, FinishOrder: opts.FinishOrder, Profile: opts.ProfileGEMM})
	if err != nil {
		p.pool.Close()
		return nil, err
	}
	p.engine = e
	return p, nil
}

// workingCopy shares g's nodes and initializers (read-only) but has its
// own Values, inputs and outputs, which InferShapes fills in.
func workingCopy(g *compiler.Graph) *compiler.Graph {
	w := compiler.NewGraph(g.Name)
	w.Opset, w.Nodes, w.Initializers, w.Meta = g.Opset, g.Nodes, g.Initializers, g.Meta
	for _, v := range g.Inputs {
		w.Inputs = append(w.Inputs, v.Clone())
	}
	for _, v := range g.Outputs {
		w.Outputs = append(w.Outputs, v.Clone())
	}
	for k, v := range g.Values {
		w.Values[k] = v.Clone()
	}
	return w
}

// use is one reading of a value: node index and input position.
type use struct{ node, input int }

type lowering struct {
	g      *compiler.Graph
	p      *Schedule
	source string

	slots    map[string]SlotID
	isInput  map[string]bool
	isOutput map[string]bool
	uses     map[string][]use

	// firstLN..lastLN (node indices) is the encoder, where every node
	// that reads an activation must have a runtime kernel; -1 when the
	// graph has no LayerNorm (LayerNormalization, sqc.LayerNormDual or
	// sqc.LayerNorm) of per-token rows. A LayerNorm of pooled rows
	// ([batch, hidden]: ModernBERT's classifier head) ends no encoder:
	// the pooling before it runs once per sequence.
	firstLN, lastLN int
	// activation marks the values computed from a LayerNorm's output
	// (through anything but Shape, whose output is only dims): the
	// per-token data a generic kernel would run slowly on.
	activation map[string]bool
}

func newLowering(g *compiler.Graph) *lowering {
	l := &lowering{
		g: g, source: g.Meta["source"],
		p:     &Schedule{name: g.Name, source: g.Meta["source"]},
		slots: map[string]SlotID{}, isInput: map[string]bool{}, isOutput: map[string]bool{},
		uses: map[string][]use{}, firstLN: -1, lastLN: -1, activation: map[string]bool{},
	}
	for _, v := range g.Inputs {
		l.isInput[v.Name] = true
	}
	for _, v := range g.Outputs {
		l.isOutput[v.Name] = true
	}
	for i, n := range g.Nodes {
		for j, in := range n.Inputs {
			if in != "" {
				l.uses[in] = append(l.uses[in], use{i, j})
			}
		}
		isLN := n.Op == "LayerNormalization" || n.Op == "sqc.LayerNormDual" || n.Op == "sqc.LayerNorm"
		if _, shape := l.info(n.Inputs[0]); isLN && (shape == nil || len(shape) >= 3) {
			if l.firstLN < 0 {
				l.firstLN = i
			}
			l.lastLN = i
		}
		if n.Op != "Shape" && (isLN || slices.ContainsFunc(n.Inputs, func(in string) bool { return l.activation[in] })) {
			for _, out := range n.Outputs {
				l.activation[out] = true
			}
		}
	}
	return l
}

// label names node i for errors.
func (l *lowering) label(i int) string {
	n := l.g.Nodes[i]
	if n.Name == "" {
		return fmt.Sprintf("node #%d (%s)", i, n.Op)
	}
	return fmt.Sprintf("node %q (%s)", n.Name, n.Op)
}

func (l *lowering) bad(i int, err error) error {
	return compiler.BadInput(l.source, l.label(i), err)
}

// info returns a value's dtype and (possibly symbolic) shape.
func (l *lowering) info(name string) (compiler.DType, compiler.Shape) {
	for _, v := range l.g.Inputs {
		if v.Name == name {
			return v.DType, v.Shape
		}
	}
	if t := l.g.Initializers[name]; t != nil {
		return t.DType, compiler.StaticShape(t.Shape...)
	}
	if v := l.g.Values[name]; v != nil {
		return v.DType, v.Shape
	}
	return compiler.Undefined, nil
}

func (l *lowering) dtype(name string) compiler.DType { dt, _ := l.info(name); return dt }

// allF32 reports whether every named value ("" for none) is f32.
func (l *lowering) allF32(names ...string) bool {
	for _, name := range names {
		if name != "" && l.dtype(name) != compiler.Float32 {
			return false
		}
	}
	return true
}

// constant returns the initializer named name when it is one (and not
// overridden by a graph input).
func (l *lowering) constant(name string) *compiler.Tensor {
	if name == "" || l.isInput[name] {
		return nil
	}
	return l.g.Initializers[name]
}

// slot returns the slot of a graph value, creating it on first use.
func (l *lowering) slot(name string) SlotID {
	if id, ok := l.slots[name]; ok {
		return id
	}
	dt, shape := l.info(name)
	s := &Slot{Name: name, DType: dt, Shape: shape}
	if dt == compiler.Uint8 && !l.isInput[name] && l.g.Initializers[name] == nil && shape != nil && len(shape) > 0 && shape[len(shape)-1].Known() {
		// A quantised activation: u8 rows padded to the GEMM's K block,
		// the form qgemm reads and its u8 epilogue writes.
		s.Shape = shape.Clone()
		s.Shape[len(shape)-1] = compiler.Dim{Size: int64(u8Row(int(shape[len(shape)-1].Size)))}
	}
	switch {
	case l.isInput[name]:
		s.Kind, s.Const = SlotInput, l.g.Initializers[name]
	case l.g.Initializers[name] != nil:
		s.Kind, s.Const = SlotConst, l.g.Initializers[name]
	}
	id := l.addSlot(s)
	l.slots[name] = id
	return id
}

// internal adds a buffer no graph value names.
func (l *lowering) internal(name string, dt compiler.DType, shape compiler.Shape) SlotID {
	return l.addSlot(&Slot{Name: name, Kind: SlotInternal, DType: dt, Shape: shape})
}

func (l *lowering) addSlot(s *Slot) SlotID {
	s.ID = SlotID(len(l.p.slots))
	l.p.slots = append(l.p.slots, s)
	return s.ID
}

func (l *lowering) emit(s Step) { l.p.steps = append(l.p.steps, s) }

// slowInEncoder reports whether node i, run on a generic kernel, would be
// per-token work inside the encoder: it lies between the first and last
// LayerNorm and reads an activation's data. Work on dims (Shape of an
// activation) and on values computed from the inputs alone (MPNet's
// relative position bias) runs there on generic kernels.
func (l *lowering) slowInEncoder(i int, n *compiler.Node) bool {
	return l.firstLN >= 0 && l.firstLN <= i && i <= l.lastLN && n.Op != "Shape" &&
		slices.ContainsFunc(n.Inputs, func(in string) bool { return l.activation[in] })
}

// lowerNode emits node i's steps.
func (l *lowering) lowerNode(i int, n *compiler.Node) error {
	native, err := l.native(i, n)
	if err != nil || native {
		return err
	}
	if l.slowInEncoder(i, n) {
		return l.bad(i, fmt.Errorf("%w: no runtime kernel for this form of %s on an activation inside the encoder (between the first and last LayerNormalization)", compiler.ErrUnsupportedOp, n.Op))
	}
	ins := make([]SlotID, len(n.Inputs))
	for j, in := range n.Inputs {
		ins[j] = NoSlot
		if in != "" {
			ins[j] = l.slot(in)
		}
	}
	outs := make([]SlotID, len(n.Outputs))
	for j, out := range n.Outputs {
		outs[j] = NoSlot
		if out != "" {
			outs[j] = l.slot(out)
		}
	}
	s, err := newOpStep(l.g, n, ins, outs)
	if err != nil {
		return l.bad(i, err)
	}
	l.emit(s)
	return nil
}

// native emits a runtime-kernel lowering of node i if there is one for its
// op and form, reporting whether it did.
func (l *lowering) native(i int, n *compiler.Node) (bool, error) {
	switch n.Op {
	case "sqc.QLinear":
		return true, l.qlinear(i, n)
	case "sqc.Quantize":
		return true, l.quantize(i, n) // quantize.go
	case "sqc.Linear":
		return l.linear(n), nil
	case "LayerNormalization":
		return l.layerNorm(n), nil
	case "sqc.LayerNorm":
		return true, l.layerNormU8(i, n)
	case "sqc.LayerNormDual":
		ok, err := l.layerNormDual(n) // layernorm_dual.go
		if err != nil {
			return true, l.bad(i, err)
		}
		return ok, nil
	case "sqc.Embeddings":
		return l.embeddings(n), nil
	case "sqc.Attention":
		return l.attention(n), nil
	case "sqc.AttentionMask":
		if l.dtype(n.Inputs[0]) != compiler.Int64 {
			return false, nil
		}
		l.emit(&AttentionMaskStep{node: node{n.Name}, Mask: l.slot(n.Inputs[0]), Out: l.slot(n.Outputs[0]),
			Fill: n.AttrFloat("fill", compiler.AttentionMaskDefaultFill)})
		return true, nil
	case "Add":
		if !l.allF32(n.Inputs...) || !l.suffixBroadcast(n.Inputs[0], n.Inputs[1]) {
			return false, nil
		}
		l.emit(&AddStep{node: node{n.Name}, A: l.slot(n.Inputs[0]), B: l.slot(n.Inputs[1]), Out: l.slot(n.Outputs[0])})
		return true, nil
	case "Mul":
		if !l.allF32(n.Inputs...) || !l.sameShape(n.Inputs[0], n.Inputs[1]) {
			return false, nil
		}
		l.emit(&MulStep{node: node{n.Name}, A: l.slot(n.Inputs[0]), B: l.slot(n.Inputs[1]), Out: l.slot(n.Outputs[0])})
		return true, nil
	case "sqc.Rotary":
		if !l.allF32(n.Inputs...) {
			return false, nil
		}
		l.emit(&RotaryStep{node: node{n.Name}, Heads: int(n.AttrInt("heads", 0)), TablesByPosition: compiler.RotaryTablesByPosition(n),
			X: l.slot(n.Inputs[0]), Cos: l.slot(n.Inputs[1]),
			Sin: l.slot(n.Inputs[2]), Out: l.slot(n.Outputs[0])})
		return true, nil
	case "sqc.DisentangledBias":
		slot := func(i int) SlotID {
			if i >= len(n.Inputs) || n.Inputs[i] == "" {
				return NoSlot
			}
			return l.slot(n.Inputs[i])
		}
		l.emit(&DisentangledBiasStep{node: node{n.Name}, Heads: int(n.AttrInt("heads", 0)), Divisor: n.AttrFloat("divisor", 1),
			Q: slot(0), PosKey: slot(1), C2P: slot(2), K: slot(3), PosQuery: slot(4), P2C: slot(5), Out: l.slot(n.Outputs[0])})
		return true, nil
	case "sqc.MaskedSum":
		if !l.allF32(n.Inputs[0]) || l.dtype(n.Inputs[1]) != compiler.Int64 {
			return false, nil
		}
		l.emit(&MaskedSumStep{node: node{n.Name}, KeepDims: n.AttrInt("keepdims", 0) == 1, X: l.slot(n.Inputs[0]), Mask: l.slot(n.Inputs[1]),
			Out: l.slot(n.Outputs[0])})
		return true, nil
	case "sqc.Gelu", "Tanh", "Relu", "sqc.Silu":
		a, ok := activationFor(n)
		if !ok || !l.allF32(n.Inputs[0]) {
			return false, nil
		}
		l.emit(&ActivationStep{node: node{n.Name}, Func: a.Func, X: l.slot(n.Inputs[0]), Out: l.slot(n.Outputs[0])})
		return true, nil
	case "Gather":
		_, shape := l.info(n.Inputs[0])
		axis := int(n.AttrInt("axis", 0))
		if shape == nil || !l.allF32(n.Inputs[0]) || l.dtype(n.Inputs[1]) != compiler.Int64 {
			return false, nil
		}
		if axis < 0 {
			axis += len(shape)
		}
		if axis < 0 || axis >= len(shape) {
			return false, nil
		}
		l.emit(&GatherStep{node: node{n.Name}, Data: l.slot(n.Inputs[0]), Indices: l.slot(n.Inputs[1]), Axis: axis, Out: l.slot(n.Outputs[0])})
		return true, nil
	}
	return false, nil
}

// sameShape reports whether a and b are proved to have one shape: of one
// rank, each dim the same size or symbol (MulStep takes no broadcast).
func (l *lowering) sameShape(a, b string) bool {
	_, sa := l.info(a)
	_, sb := l.info(b)
	if sa == nil || sb == nil || len(sa) != len(sb) {
		return false
	}
	for i := range sa {
		if sa[i] != sb[i] || (!sa[i].Known() && sa[i].Param == "") {
			return false
		}
	}
	return true
}

// suffixBroadcast reports whether Add(a, b) is a same-shape or suffix
// broadcast sum AddStep handles; unknown shapes are left to Run to check.
func (l *lowering) suffixBroadcast(a, b string) bool {
	_, sa := l.info(a)
	_, sb := l.info(b)
	if sa == nil || sb == nil {
		return true
	}
	return symSuffix(sb, sa) || symSuffix(sa, sb)
}

// symSuffix is isSuffix on symbolic shapes, true only when sure.
func symSuffix(small, big compiler.Shape) bool {
	for len(small) > 0 && small[0].Known() && small[0].Size == 1 {
		small = small[1:]
	}
	if len(small) > len(big) {
		return false
	}
	tail := big[len(big)-len(small):]
	for i, d := range small {
		e := tail[i]
		if !(d.Param != "" && d.Param == e.Param) && !(d.Known() && e.Known() && d.Size == e.Size) {
			return false
		}
	}
	return true
}

// u8Row is the bytes of a quantised activation row of k values: k padded
// to qgemm's K block (packed weights' Kp).
func u8Row(k int) int { return qgemm.RoundUp(k, qgemm.KBlock) }

func (l *lowering) qlinear(i int, n *compiler.Node) error {
	bad := func(format string, args ...any) error {
		return l.bad(i, fmt.Errorf("%w: "+format, append([]any{compiler.ErrMalformed}, args...)...))
	}
	w, ws := l.constant(n.Inputs[1]), l.constant(n.Inputs[2])
	if w == nil || ws == nil || w.DType != compiler.Int8 || len(w.Shape) != 2 || ws.DType != compiler.Float32 || ws.Len() != int(w.Shape[1]) {
		return bad("QLinear needs initializers w i8 [K, N] and w_scale f32 [N]")
	}
	var bias *compiler.Tensor
	if len(n.Inputs) > 3 && n.Inputs[3] != "" {
		if bias = l.constant(n.Inputs[3]); bias == nil || bias.DType != compiler.Float32 || bias.Len() != int(w.Shape[1]) {
			return bad("QLinear bias must be an f32 [N] initializer")
		}
	}
	if dt := l.dtype(n.Inputs[0]); dt != compiler.Uint8 {
		return bad("QLinear input is %s, want u8: run the quantisation passes (passes.QuantPipeline) before lowering", dt)
	}
	k, nOut := int(w.Shape[0]), int(w.Shape[1])
	packed, err := qgemm.PackB(w.I8, k, nOut)
	if err != nil {
		return l.bad(i, err)
	}
	dynamic := compiler.QLinearMode(n) == compiler.QLinearDynamic
	a, err := l.quantizedInput(n)
	if err != nil {
		return l.bad(i, err)
	}
	act, err := compiler.QLinearAct(n)
	if err != nil {
		return bad("%v", err)
	}
	s := &GEMMStep{
		node: node{n.Name}, Weight: n.Inputs[1], A: a.u8, RowScale: a.scales, RowZeroPoint: a.zeroPoints, Residual: NoSlot,
		Linear: qgemm.Linear{B: *packed, Act: act},
	}
	lin := &s.Linear
	if dynamic {
		lin.Scale = append([]float32(nil), ws.F32...)
	} else {
		scale := n.AttrFloat("act_scale", 0)
		lin.AZeroPoint = int32(n.AttrInt("act_zero_point", 0))
		lin.Scale = make([]float32, nOut)
		for j, v := range ws.F32 {
			lin.Scale[j] = scale * v
		}
	}
	if bias != nil {
		lin.Bias, s.BiasName = bias.F32, n.Inputs[3]
	}
	if len(n.Inputs) > 4 && n.Inputs[4] != "" {
		residual := n.Inputs[4]
		if l.dtype(residual) != compiler.Float32 {
			return bad("QLinear residual is %s, want f32", l.dtype(residual))
		}
		s.Residual = l.slot(residual)
		lin.MulResidual = compiler.QLinearMulResidual(n)
	}
	if scale, zp, ok := compiler.U8Output(n); ok { // passes.WriteU8Directly
		lin.OutKp, lin.OutInvScale, lin.OutZeroPoint = u8Row(nOut), 1/scale, zp
	}
	s.Out = l.slot(n.Outputs[0])
	l.emit(s)
	return nil
}

// linear lowers an f32 sqc.Linear with constant weights.
func (l *lowering) linear(n *compiler.Node) bool {
	w := l.constant(n.Inputs[1])
	if w == nil || w.DType != compiler.Float32 || len(w.Shape) != 2 || l.dtype(n.Inputs[0]) != compiler.Float32 {
		return false
	}
	s := &LinearF32Step{node: node{n.Name}, Weight: n.Inputs[1], X: l.slot(n.Inputs[0]), K: int(w.Shape[0]), N: int(w.Shape[1]), W: w.F32}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		b := l.constant(n.Inputs[2])
		if b == nil || b.DType != compiler.Float32 || b.Len() != s.N {
			return false
		}
		s.Bias, s.BiasName = b.F32, n.Inputs[2]
	}
	s.Out = l.slot(n.Outputs[0])
	l.emit(s)
	return true
}

// layerNorm lowers LayerNormalization over the last axis with constant
// [N] scale and bias and only its first output used.
func (l *lowering) layerNorm(n *compiler.Node) bool {
	if n.AttrInt("stash_type", 1) != 1 {
		return false
	}
	_, shape := l.info(n.Inputs[0])
	if axis := n.AttrInt("axis", -1); shape != nil && axis != -1 && axis != int64(len(shape)-1) {
		return false
	}
	for _, out := range n.Outputs[1:] {
		if out != "" && (len(l.uses[out]) > 0 || l.isOutput[out]) {
			return false
		}
	}
	s, ok := l.layerNormStep(n)
	if !ok {
		return false
	}
	s.Out = l.slot(n.Outputs[0])
	l.emit(s)
	return true
}

// layerNormStep is the LayerNormStep of a LayerNormalization or
// sqc.LayerNorm n with no output slots yet, or false when the runtime
// kernel cannot run it (layerNormParams).
func (l *lowering) layerNormStep(n *compiler.Node) (*LayerNormStep, bool) {
	beta := ""
	if len(n.Inputs) > 2 {
		beta = n.Inputs[2]
	}
	params, ok := l.layerNormParams(n.Inputs[0], n.Inputs[1], beta, n.AttrFloat("epsilon", 1e-5))
	if !ok {
		return nil, false
	}
	if params.Beta == nil {
		beta = ""
	}
	return &LayerNormStep{node: node{n.Name}, X: l.slot(n.Inputs[0]), Out: NoSlot, OutU8: NoSlot, GammaName: n.Inputs[1], BetaName: beta, Params: params}, true
}

// layerNormParams returns the parameters of a LayerNorm of the f32 value x
// over its last dim, of static size N, with the constant f32 [N] gamma and
// beta ("" for none), or false when the runtime kernel cannot run it.
func (l *lowering) layerNormParams(x, gamma, beta string, eps float32) (nn.LayerNormParams, bool) {
	dt, shape := l.info(x)
	g := l.constant(gamma)
	if dt != compiler.Float32 || shape == nil || len(shape) == 0 || !shape[len(shape)-1].Known() ||
		g == nil || g.DType != compiler.Float32 {
		return nn.LayerNormParams{}, false
	}
	size := int(shape[len(shape)-1].Size)
	if g.Len() != size {
		return nn.LayerNormParams{}, false
	}
	p := nn.LayerNormParams{N: size, Gamma: g.F32, Epsilon: eps}
	if beta != "" {
		b := l.constant(beta)
		if b == nil || b.DType != compiler.Float32 || b.Len() != size {
			return nn.LayerNormParams{}, false
		}
		p.Beta = b.F32
	}
	return p, true
}

// layerNormU8 lowers sqc.LayerNorm (passes.WriteU8Directly) to the
// LayerNormStep running nn.LayerNormU8: y_u8 as u8 rows of the QLinears'
// padded K, and y in f32 too unless it is omitted.
func (l *lowering) layerNormU8(i int, n *compiler.Node) error {
	s, ok := l.layerNormStep(n)
	if !ok {
		return l.bad(i, fmt.Errorf("%w: sqc.LayerNorm needs f32 x [..., N] with N known and constant f32 [N] scale and bias", compiler.ErrMalformed))
	}
	scale, zp, _ := compiler.U8Output(n)
	s.Kp, s.InvScale, s.ZeroPoint, s.OutU8 = u8Row(s.Params.N), 1/scale, zp, l.slot(n.Outputs[0])
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		s.Out = l.slot(n.Outputs[1])
	}
	if err := l.emitLayerNorm(n, s); err != nil {
		return l.bad(i, err)
	}
	return nil
}

// emitLayerNorm emits the one step of a LayerNorm node, or, when the node
// runs inside its producer (compiler.InProducer), makes it the Norm of the
// GEMMStep writing its input.
func (l *lowering) emitLayerNorm(n *compiler.Node, s *LayerNormStep) error {
	if !compiler.InProducer(n) {
		l.emit(s)
		return nil
	}
	for j := len(l.p.steps) - 1; j >= 0; j-- {
		g, ok := l.p.steps[j].(*GEMMStep)
		if !ok || g.Out != s.X {
			continue
		}
		if g.Norm != nil || g.Linear.OutKp > 0 || g.Linear.B.N != s.Params.N {
			break
		}
		g.Norm = s
		if s.Out != NoSlot {
			// x is read by this LayerNorm alone and is no graph output (the
			// verifier's in_producer form), so the GEMM writes its rows
			// where the LayerNorm's f32 output goes and each row block is
			// normalised in place (nn.LinearLayerNorm allows it): one
			// buffer of the rows fewer in the arena, and the normalised
			// rows written over lines the GEMM has just brought into the
			// worker's cache rather than into lines fetched for them.
			g.Out, s.X = s.Out, s.Out
		}
		return nil
	}
	return fmt.Errorf("%w: in_producer, but no f32 GEMM of %d columns writes its input (the verifier checks this)", compiler.ErrInternal, s.Params.N)
}
