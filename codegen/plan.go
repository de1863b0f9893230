package codegen

import (
	"fmt"
	"go/token"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/modelrt"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// A plan places every buffer of an exec.Schedule for the generated
// package: activations in its one arena at the constant offsets of
// exec.PlanMemory (seen as float32, u8 and int32 views of the same bytes), the token inputs in the workspace's int64 arrays,
// constants in the weights struct. Sizes are planned for the compiled
// maximum batch and sequence; at run time each buffer is the prefix its
// actual size needs.
type plan struct {
	prog             *exec.Schedule
	maxBatch, maxSeq int
	batch, seq       string // the symbolic dimension names of the token inputs

	slots   []*slotPlan // by exec.SlotID
	weights []*weight   // in order of first use
	byKey   map[any]*weight
	fields  map[string]bool

	// params are the weights struct fields holding the constant
	// parameters of the LayerNorm (nn.LayerNormParams), embedding
	// (nn.Embeddings) and GEMM steps (qgemm.Linear), in step order
	// (addParams); paramField is a step's field, paramCount counts the
	// fields of each name prefix.
	params     []paramSet
	paramField map[exec.Step]string
	paramCount map[string]int

	inputs  []*slotPlan // graph inputs, graph order
	outputs []*slotPlan // graph outputs, graph order

	arenaBytes int64 // exec.PlanMemory's arena
	vocab      int   // rows of the token embedding table
	typeVocab  int   // rows of the token type table (0: none)
	maxHeadDim int
	// int8Attention: some attention step is INT8 (its scratch is
	// nn.AttentionInt8ScratchLen's).
	int8Attention bool
	// relativeRows is the most relative embedding rows of a
	// DisentangledBias step (0: none), whose scratch is
	// nn.DisentangledScratchLen's.
	relativeRows int
}

// extent is a buffer's length in elements: Elems, times the batch size
// if Batch, times the sequence length Seq times (0, 1, or 2 for a
// [.., seq, seq] buffer such as MPNet's position bias).
type extent struct {
	Batch bool
	Seq   int
	Elems int
}

// maxSeqPower is the most sequence dims a buffer may have.
const maxSeqPower = 2

// Max is the extent at the given batch size and sequence length.
func (e extent) Max(batch, seq int) int {
	n := e.Elems
	if e.Batch {
		n *= batch
	}
	for range e.Seq {
		n *= seq
	}
	return n
}

type home uint8

const (
	homeNone   home = iota // not used by any emitted step
	homeArena              // a range of one of the workspace's arenas
	homeInput              // the workspace's ids, mask or types
	homeWeight             // a constant
	homeConst              // a small int64 constant, emitted as a literal
	homeTensor             // an *ops.Tensor local of forward: the result of a generic op (OpStep)
)

// arenaViews are the workspace's fields that view the arena as each dtype
// an activation may have; a slot is read through its dtype's view.
var arenaViews = map[compiler.DType]string{compiler.Float32: "f32", compiler.Uint8: "u8", compiler.Int32: "i32"}

// slotPlan is where one exec slot lives.
type slotPlan struct {
	id     exec.SlotID
	name   string
	home   home
	dtype  compiler.DType
	shape  compiler.Shape
	extent extent
	width  int // innermost dimension

	off int // in elements of its dtype's view of the arena (arenaViews)

	input  string // homeInput: "ids", "mask" or "types"
	weight *weight
	consts []int64 // homeConst
	tensor string  // homeTensor: the local's name
	// copyOut: a generic op computes this graph output, and its statement
	// copies the result into the slot's arena buffer.
	copyOut bool

	def, last int
}

func (s *slotPlan) rows() extent {
	e := s.extent
	if s.width > 0 {
		e.Elems /= s.width
	}
	return e
}

// weightKind is the element type of a constant.
type weightKind uint8

// Constant kinds.
const (
	weightF32    weightKind = iota // []float32
	weightPacked                   // qgemm.PackedB
	weightInt                      // Tensor, of a dtype in intWeights (constants of generic ops)
)

// intWeights are the integer dtypes of generic ops' constants that
// weights.bin holds: their Go element type, the modelrt.Weights method that
// decodes them and the WeightsWriter call that writes them.
var intWeights = map[compiler.DType]struct {
	elem, read string
	write      func(*modelrt.WeightsWriter, *compiler.Tensor) int
}{
	compiler.Int64: {"int64", "I64", func(w *modelrt.WeightsWriter, t *compiler.Tensor) int { return w.I64(t.I64) }},
	compiler.Int32: {"int32", "I32", func(w *modelrt.WeightsWriter, t *compiler.Tensor) int { return w.I32(t.I32) }},
	compiler.Int8:  {"int8", "I8", func(w *modelrt.WeightsWriter, t *compiler.Tensor) int { return w.I8(t.I8) }},
}

// weight is one constant the generated package embeds.
type weight struct {
	Field  string // Go field in the generated weights struct
	From   string // the initializer (or derivation) it comes from
	Kind   weightKind
	F32    []float32
	Packed *qgemm.PackedB
	// Tensor is a generic op's constant of kind weightInt.
	Tensor *compiler.Tensor
	// Offsets in weights.bin, set when the file is written.
	Off, ColSumOff int
}

// newPlan places p's slots for batches of up to maxBatch sequences of up
// to maxSeq tokens.
func newPlan(p *exec.Schedule, maxBatch, maxSeq int) (*plan, error) {
	if maxBatch < 1 || maxSeq < 1 {
		return nil, fmt.Errorf("%w: codegen: maximum batch %d and sequence %d must be >= 1", compiler.ErrInvalidRequest, maxBatch, maxSeq)
	}
	pl := &plan{prog: p, maxBatch: maxBatch, maxSeq: maxSeq, byKey: map[any]*weight{}, fields: map[string]bool{},
		paramField: map[exec.Step]string{}, paramCount: map[string]int{}}
	for _, s := range p.Slots() {
		pl.slots = append(pl.slots, &slotPlan{id: s.ID, name: s.Name, dtype: s.DType, shape: s.Shape, def: -1, last: -1})
	}
	if err := pl.placeInputs(); err != nil {
		return nil, err
	}
	steps := p.Steps()
	for i, st := range steps {
		if err := pl.step(i, st); err != nil {
			return nil, err
		}
	}
	for _, id := range p.OutputSlots() {
		s := pl.slots[id]
		if s.home != homeArena || s.dtype != compiler.Float32 {
			return nil, fmt.Errorf("%w: codegen: output %q is not a float32 value the schedule computes", compiler.ErrUnsupportedOp, s.name)
		}
		s.last = len(steps)
		pl.outputs = append(pl.outputs, s)
	}
	if pl.vocab == 0 {
		return nil, fmt.Errorf("%w: codegen: the model has no token embedding lookup", compiler.ErrUnsupportedOp)
	}
	if err := pl.placeArena(); err != nil {
		return nil, err
	}
	return pl, nil
}

// placeInputs maps the graph inputs onto the workspace's int64 arrays.
func (pl *plan) placeInputs() error {
	roles := map[string]string{"input_ids": "ids", "attention_mask": "mask", "token_type_ids": "types"}
	for _, id := range pl.prog.InputSlots() {
		s := pl.slots[id]
		role, ok := roles[s.name]
		if !ok {
			return fmt.Errorf("%w: codegen: graph input %q: a generated package feeds input_ids, attention_mask and token_type_ids only", compiler.ErrUnsupportedOp, s.name)
		}
		if s.dtype != compiler.Int64 || len(s.shape) != 2 || s.shape[0].Param == "" || s.shape[1].Param == "" {
			return fmt.Errorf("%w: codegen: graph input %q is %s%s, want i64[batch, sequence]", compiler.ErrUnsupportedOp, s.name, s.dtype, s.shape)
		}
		if pl.batch == "" {
			pl.batch, pl.seq = s.shape[0].Param, s.shape[1].Param
		} else if s.shape[0].Param != pl.batch || s.shape[1].Param != pl.seq {
			return fmt.Errorf("%w: codegen: graph inputs disagree on the batch and sequence dimensions", compiler.ErrUnsupportedOp)
		}
		s.home, s.input, s.width = homeInput, role, 1
		s.extent = extent{Batch: true, Seq: 1, Elems: 1}
		pl.inputs = append(pl.inputs, s)
	}
	if !pl.hasInput("ids") {
		return fmt.Errorf("%w: codegen: the graph has no input_ids input", compiler.ErrUnsupportedOp)
	}
	return nil
}

func (pl *plan) hasInput(role string) bool {
	return slices.ContainsFunc(pl.inputs, func(s *slotPlan) bool { return s.input == role })
}

// extentOf is the extent and row width of a symbolic shape.
func (pl *plan) extentOf(shape compiler.Shape) (extent, int, bool) {
	if len(shape) == 0 {
		return extent{Elems: 1}, 1, shape != nil
	}
	e := extent{Elems: 1}
	for _, d := range shape {
		switch {
		case d.Param != "" && d.Param == pl.batch && !e.Batch:
			e.Batch = true
		case d.Param != "" && d.Param == pl.seq && e.Seq < maxSeqPower:
			e.Seq++
		case d.Known():
			e.Elems *= int(d.Size)
		default:
			return extent{}, 0, false
		}
	}
	w := 1
	if last := shape[len(shape)-1]; last.Known() {
		w = int(last.Size)
	}
	return e, w, true
}

// use marks slot id as used by step i, placing it on first use: an
// activation goes to the arena of its dtype, a constant to the weights.
func (pl *plan) use(i int, id exec.SlotID, st exec.Step) (*slotPlan, error) {
	if id == exec.NoSlot {
		return nil, nil
	}
	s := pl.slots[id]
	if s.home == homeNone {
		slot := pl.prog.Slots()[id]
		switch slot.Kind {
		case exec.SlotConst:
			_, generic := st.(*exec.OpStep)
			if err := pl.placeConst(s, slot.Const, generic); err != nil {
				return nil, fmt.Errorf("codegen: step #%d %s (node %q): %w", i, st.Call(), st.Source(), err)
			}
		default:
			e, w, ok := pl.extentOf(s.shape)
			if !ok {
				return nil, fmt.Errorf("%w: codegen: step #%d %s (node %q): buffer %q has shape %s; only the batch and sequence dimensions may vary",
					compiler.ErrUnsupportedOp, i, st.Call(), st.Source(), s.name, s.shape)
			}
			if _, ok := arenaViews[s.dtype]; !ok {
				return nil, fmt.Errorf("%w: codegen: buffer %q is %s", compiler.ErrUnsupportedOp, s.name, s.dtype)
			}
			s.home, s.extent, s.width = homeArena, e, w
		}
	}
	if s.home == homeArena || s.home == homeTensor {
		if s.def < 0 {
			s.def = i
		}
		s.last = max(s.last, i)
	}
	return s, nil
}

// placeConst makes a constant slot a weight (float32) or a literal (a
// few int64, such as the index of the first token); other integer
// constants of a generic op (plan_ops.go) are weights of their own.
func (pl *plan) placeConst(s *slotPlan, t *compiler.Tensor, generic bool) error {
	_, isInt := intWeights[t.DType]
	switch {
	case t.DType == compiler.Float32:
		s.home = homeWeight
		s.weight = pl.f32Weight(s.name, t.F32)
	case t.DType == compiler.Int64 && len(t.I64) <= 64:
		s.home, s.consts = homeConst, t.I64
	case generic && isInt:
		s.home, s.weight = homeWeight, &weight{Kind: weightInt, Tensor: t, From: s.name, Field: goName(s.name, false, pl.fields)}
		pl.weights = append(pl.weights, s.weight)
	case generic:
		return fmt.Errorf("%w: constant %q is %s%v: generated packages embed f32, i64, i32 and i8 constants", compiler.ErrUnsupportedOp, s.name, t.DType, t.Shape)
	default:
		return fmt.Errorf("%w: constant %q is %s%v", compiler.ErrUnsupportedOp, s.name, t.DType, t.Shape)
	}
	s.extent, s.width, _ = pl.extentOf(compiler.StaticShape(t.Shape...))
	return nil
}

// f32Weight returns the weight holding v (one per distinct slice).
func (pl *plan) f32Weight(from string, v []float32) *weight {
	type key struct {
		p *float32
		n int
	}
	var k any = from
	if len(v) > 0 {
		k = key{&v[0], len(v)}
	}
	if w, ok := pl.byKey[k]; ok {
		return w
	}
	w := &weight{Kind: weightF32, F32: v, From: from, Field: goName(from, false, pl.fields)}
	pl.byKey[k] = w
	pl.weights = append(pl.weights, w)
	return w
}

func (pl *plan) packedWeight(from string, b *qgemm.PackedB) *weight {
	if w, ok := pl.byKey[b]; ok {
		return w
	}
	w := &weight{Kind: weightPacked, Packed: b, From: from, Field: goName(from, false, pl.fields)}
	pl.byKey[b] = w
	pl.weights = append(pl.weights, w)
	return w
}

// goName turns a value name into a Go identifier unique in used: its
// runs of ASCII letters and digits in camel case, exported
// ("last_hidden_state" becomes "LastHiddenState") or not
// ("encoder.layer.0.attention.self.query.weight.T" becomes
// "encoderLayer0AttentionSelfQueryWeightT"). A leading digit gets the
// prefix "Out" (exported) or "w", as does (unexported) a keyword; a name
// without letters or digits is "Output" or "w".
func goName(from string, exported bool, used map[string]bool) string {
	prefix, firstCase := "w", unicode.ToLower
	if exported {
		prefix, firstCase = "Out", unicode.ToUpper
	}
	var b strings.Builder
	up := false
	for _, r := range from {
		switch {
		case r >= utf8.RuneSelf || !unicode.IsLetter(r) && !unicode.IsDigit(r):
			up = true
			continue
		case b.Len() == 0 && unicode.IsDigit(r):
			b.WriteString(prefix)
		case b.Len() == 0:
			r = firstCase(r)
		case up:
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		up = false
	}
	name := b.String()
	switch {
	case name == "" && exported:
		name = "Output"
	case name == "" || token.IsKeyword(name):
		name = prefix + strings.ToUpper(name[:min(1, len(name))]) + name[min(1, len(name)):]
	}
	base := name
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	used[name] = true
	return name
}

// placeArena gives every arena slot the offset of exec.PlanMemory's plan
// of the schedule at the compiled bounds: the one plan the in-process
// engine and `sqc inspect` use too. Each buffer the generated code slices
// must lie within its planned bytes, and its lifetime here (first to last
// statement touching it) within the plan's, or the plan's sharing would
// not hold for the code emitted; both are checked.
func (pl *plan) placeArena() error {
	mp, err := exec.PlanMemory(pl.prog, pl.maxBatch, pl.maxSeq)
	if err != nil {
		return fmt.Errorf("codegen: %w", err)
	}
	pl.arenaBytes = mp.ArenaBytes
	for _, s := range pl.slots {
		if s.home != homeArena || s.def < 0 {
			continue
		}
		ps, ok := mp.Slot(s.id)
		size := int64(s.dtype.Size())
		if !ok || int64(s.extent.Max(pl.maxBatch, pl.maxSeq))*size > ps.Bytes || s.def < ps.First || s.last > ps.Last || ps.Offset%size != 0 {
			return fmt.Errorf("%w: codegen: buffer %q (steps %d-%d, %d elements) does not fit its place in the memory plan %+v",
				compiler.ErrInternal, s.name, s.def, s.last, s.extent.Max(pl.maxBatch, pl.maxSeq), ps)
		}
		s.off = int(ps.Offset / size)
	}
	return nil
}
