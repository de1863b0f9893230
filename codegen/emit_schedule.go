package codegen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/compiler/exec"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// Import paths of the runtime packages generated code calls.
const (
	pkgModelrt   = "github.com/sqc-dev/sqc/runtime/modelrt"
	pkgNN        = "github.com/sqc-dev/sqc/runtime/nn"
	pkgQgemm     = "github.com/sqc-dev/sqc/runtime/qgemm"
	pkgPool      = "github.com/sqc-dev/sqc/runtime/pool"
	pkgTokenizer = "github.com/sqc-dev/sqc/runtime/tokenizer"
)

// extentCode is the Go expression of an extent in the schedule, whose
// run-time sizes are the locals batch, seq and tokens (= batch*seq).
func extentCode(e extent) *jen.Statement {
	var factors []string
	seqs := e.Seq
	switch {
	case e.Batch && seqs > 0:
		factors, seqs = append(factors, "tokens"), seqs-1
	case e.Batch:
		factors = append(factors, "batch")
	}
	for range seqs {
		factors = append(factors, "seq")
	}
	if len(factors) == 0 {
		return jen.Lit(e.Elems)
	}
	v := jen.Id(factors[0])
	for _, f := range factors[1:] {
		v = v.Op("*").Id(f)
	}
	if e.Elems != 1 {
		v = v.Op("*").Lit(e.Elems)
	}
	return v
}

// slotExtentCode is the Go expression of slot id's extent: a token-wise
// slot (exec.Schedule.TokenWise) has rows, not tokens, rows of a packed
// batch (the local rows; see scheduleFile).
func (pl *plan) slotExtentCode(id exec.SlotID, e extent) *jen.Statement {
	if e.Batch && e.Seq == 1 && pl.prog.TokenWise(id) {
		v := jen.Id("rows")
		if e.Elems != 1 {
			v = v.Op("*").Lit(e.Elems)
		}
		return v
	}
	return extentCode(e)
}

// slotCode is the slice expression of a slot at the run-time sizes.
func (pl *plan) slotCode(id exec.SlotID) *jen.Statement {
	if id == exec.NoSlot {
		return jen.Nil()
	}
	s := pl.slots[id]
	switch s.home {
	case homeInput:
		return jen.Id("ws").Dot(s.input).Index(jen.Empty(), pl.slotExtentCode(id, s.extent))
	case homeWeight:
		w := jen.Id("m").Dot("w").Dot(s.weight.Field)
		if s.extent == (extent{Elems: len(s.weight.F32)}) {
			return w
		}
		return w.Index(jen.Empty(), extentCode(s.extent))
	case homeConst:
		return int64sLit(s.consts)
	case homeArena:
		return jen.Id("ws").Dot(arenaViews[s.dtype]).Index(jen.Lit(s.off), jen.Empty()).Index(jen.Empty(), pl.slotExtentCode(id, s.extent))
	case homeTensor: // a generic op's result (plan_ops.go)
		if field, ok := dataField(s.dtype); ok {
			return jen.Id(s.tensor).Dot(field)
		}
	}
	panic(fmt.Sprintf("codegen: slot %q has no home", s.name)) // newPlan rejects such programs
}

func (pl *plan) rowsCode(id exec.SlotID) *jen.Statement {
	return pl.slotExtentCode(id, pl.slots[id].rows())
}

// f32Arg is the generated weights' field holding v, or nil for no v.
func (pl *plan) f32Arg(from string, v []float32) *jen.Statement {
	if v == nil {
		return jen.Nil()
	}
	return jen.Id("m").Dot("w").Dot(pl.f32Weight(from, v).Field)
}

// returnIfErr returns the zero values and call's error, if any.
func returnIfErr(call *jen.Statement, zero ...jen.Code) *jen.Statement {
	return jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(append(zero, jen.Err())...))
}

// scheduleFile emits forward: one statement per Program step, with a
// cancellation check before every GEMM and attention.
func (g *gen) scheduleFile() (*jen.File, error) {
	pl := g.pl
	f := newFile(g.opts.Package)
	body := []jen.Code{jen.Id("tokens").Op(":=").Id("batch").Op("*").Id("seq")}
	if pl.prog.PackingReason() == "" {
		// rows is the token-wise buffers' row count: the real tokens of a
		// packed batch (offsets non-nil), else every padded position.
		body = append(body,
			jen.Id("rows").Op(":=").Id("tokens"),
			jen.If(jen.Id("offsets").Op("!=").Nil()).Block(jen.Id("rows").Op("=").Id("offsets").Index(jen.Id("batch"))))
	}
	for i, st := range pl.prog.Steps() {
		cmt := fmt.Sprintf("#%d %s: %s", i, st.Call(), st.Source())
		if s, ok := st.(*exec.OpStep); ok { // runtime/ops's generic kernel (emit_ops.go)
			code, err := g.opStepCode(i, s)
			if err != nil {
				return nil, err
			}
			body = append(append(body, jen.Comment(cmt)), code...)
			continue
		}
		code, err := g.stepCode(st)
		if err != nil {
			return nil, err
		}
		// The statement must call what the step calls: a step whose
		// Call changed in compiler/exec is caught here, not by wrong bits.
		if want := callee(st.Call()); !strings.Contains(fmt.Sprintf("%#v", code), want) {
			return nil, fmt.Errorf("codegen: step #%d (node %q) calls %s, but codegen emits %s: codegen is out of date with compiler/exec",
				i, st.Source(), st.Call(), strings.SplitN(fmt.Sprintf("%#v", code), "(", 2)[0])
		}
		switch st.(type) {
		case *exec.GEMMStep, *exec.AttentionStep:
			body = append(body, returnIfErr(jen.Id("ctx").Dot("Err").Call()))
		}
		body = append(body, jen.Comment(cmt), code)
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Comment("forward runs the schedule on the first batch sequences of ws's inputs, each")
	f.Comment("padded to seq tokens, leaving the outputs in ws's arena. Each statement is one")
	f.Comment("step of the lowered exec.Program (numbered as `sqc inspect` lists it), with")
	f.Comment("constant shapes and arena offsets planned for MaxBatch x MaxSequence. With")
	f.Comment("offsets (nn.PackedOffsets of the sequences' lengths; nil when the schedule")
	f.Comment("cannot pack) the batch runs packed: token-wise buffers hold the real tokens")
	f.Comment("only, sequence b at rows offsets[b] .. offsets[b+1]-1 (compiler/exec packed.go).")
	f.Func().Params(jen.Id("m").Op("*").Id("Model")).Id("forward").Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("ws").Op("*").Id("workspace"), jen.List(jen.Id("batch"), jen.Id("seq")).Int(),
		jen.Id("offsets").Index().Int(),
	).Error().Block(body...)
	return f, nil
}

func (g *gen) stepCode(st exec.Step) (*jen.Statement, error) {
	pl := g.pl
	sc := pl.slotCode
	switch s := st.(type) {
	case *exec.QuantizeStep:
		return jen.Qual(pkgNN, "QuantizeU8Parallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), jen.Lit(s.Kp), sc(s.X), jen.Lit(s.K), pl.rowsCode(s.X), jen.Lit(s.K),
			jen.Lit(s.InvScale), jen.Lit(s.ZeroPoint)), nil
	case *exec.QuantizeRowsStep:
		return jen.Qual(pkgNN, "QuantizeRowsU8Parallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), jen.Lit(s.Kp), sc(s.X), jen.Lit(s.K), pl.rowsCode(s.X), jen.Lit(s.K),
			sc(s.Scales), sc(s.ZeroPoints)), nil
	case *exec.GEMMStep:
		io := jen.Dict{jen.Id("A"): sc(s.A), jen.Id("Rows"): pl.rowsCode(s.A)}
		for name, id := range map[string]exec.SlotID{"RowScale": s.RowScale, "RowZeroPoint": s.RowZeroPoint, "Residual": s.Residual} {
			if id != exec.NoSlot {
				io[jen.Id(name)] = sc(id)
			}
		}
		if s.Linear.OutKp > 0 {
			io[jen.Id("OutU8")] = sc(s.Out)
		} else {
			io[jen.Id("OutF32")] = sc(s.Out)
		}
		// gemmKernel (kernels_*.go) gives the package's own kernel for this Kp.
		kernel, linear, ioArg := jen.Id(gemmKernelFunc).Call(jen.Lit(s.Linear.B.Kp)), jen.Op("&").Id("m").Dot("w").Dot(g.pl.paramField[s]),
			jen.Op("&").Qual(pkgQgemm, "LinearIO").Values(io)
		if n := s.Norm; n != nil { // the LayerNorm of the output, inside the GEMM
			return returnIfErr(jen.Qual(pkgNN, "LinearLayerNorm").Call(jen.Id("m").Dot("gemm"), kernel, linear, ioArg,
				jen.Op("&").Id("m").Dot("w").Dot(g.pl.paramField[n]), jen.Op("&").Qual(pkgNN, "LayerNormOutputs").Values(pl.normOutputs(n)))), nil
		}
		return returnIfErr(jen.Id("m").Dot("gemm").Dot("Linear").Call(kernel, linear, ioArg)), nil
	case *exec.LinearF32Step:
		return jen.Qual(pkgNN, "LinearF32").Call(jen.Id("m").Dot("pool"), sc(s.Out), jen.Lit(s.N), sc(s.X), jen.Lit(s.K), pl.rowsCode(s.X),
			jen.Lit(s.K), jen.Lit(s.N), pl.f32Arg(s.Weight, s.W), pl.f32Arg(s.BiasName, s.Bias)), nil
	case *exec.LayerNormStep:
		// nn.LayerNorm, LayerNormU8 or LayerNormDual (s.Call): the u8
		// output and its quantisation, with its own gamma and beta if dual.
		n := s.Params.N
		args := []jen.Code{jen.Id("m").Dot("pool"), sc(s.Out), jen.Lit(n)}
		if s.OutU8 != exec.NoSlot {
			args = append(args, sc(s.OutU8), jen.Lit(s.Kp))
		}
		args = append(args, sc(s.X), jen.Lit(n), pl.rowsCode(s.X), jen.Op("&").Id("m").Dot("w").Dot(g.pl.paramField[s]))
		if s.GammaU8 != nil {
			args = append(args, pl.f32Arg(s.GammaU8Name, s.GammaU8), pl.f32Arg(s.BetaU8Name, s.BetaU8))
		}
		if s.OutU8 != exec.NoSlot {
			args = append(args, jen.Lit(s.InvScale), jen.Lit(s.ZeroPoint))
		}
		return jen.Qual(pkgNN, strings.TrimPrefix(s.Call(), "nn.")).Call(args...), nil
	case *exec.AttentionStep:
		q := pl.slots[s.Q]
		width := attentionWidth(s, q)
		// exec's AttentionStep.run: strides of the operands' rows, and
		// for a packed QKV, K and V at column offsets of Q's buffer.
		stride, kArg, vArg := width, sc(s.K), sc(s.V)
		if s.Packed {
			lay := exec.PackedAttentionLayout(q.width)
			stride = lay.Stride
			kArg, vArg = sc(s.Q).Index(jen.Lit(lay.KOffset), jen.Empty()), sc(s.Q).Index(jen.Lit(lay.VOffset), jen.Empty())
		}
		// A packed batch's dims (nn.AttentionPacked) have no sizes: offsets
		// gives each sequence's.
		packed := jen.Dict{
			jen.Id("Heads"): jen.Lit(s.Heads), jen.Id("HeadDim"): jen.Lit(width / s.Heads), jen.Id("Scale"): jen.Lit(s.Scale),
			jen.Id("QStride"): jen.Lit(stride), jen.Id("KStride"): jen.Lit(stride), jen.Id("VStride"): jen.Lit(stride), jen.Id("OutStride"): jen.Lit(s.OutStride(width)),
		}
		dims := maps.Clone(packed)
		dims[jen.Id("Batch")], dims[jen.Id("SeqQ")], dims[jen.Id("SeqK")] = jen.Id("batch"), jen.Id("seq"), jen.Id("seq")
		for _, addend := range []struct {
			id     exec.SlotID
			fields [3]string
		}{
			{s.Mask, [3]string{"MaskBatchStride", "MaskHeadStride", "MaskRowStride"}},
			{s.Bias, [3]string{"BiasBatchStride", "BiasHeadStride", "BiasRowStride"}},
		} {
			if addend.id == exec.NoSlot {
				continue
			}
			strides, err := pl.maskStrides(pl.slots[addend.id], s.Heads)
			if err != nil {
				return nil, err
			}
			for i, name := range addend.fields {
				if strides[i] != (extent{}) {
					dims[jen.Id(name)] = extentCode(strides[i])
					if addend.id == s.Bias {
						// A packed batch's bias is the padded batch's
						// (exec's runVarlen): each sequence reads its corner.
						packed[jen.Id(name)] = extentCode(strides[i])
					}
				}
			}
		}
		// nn.Attention or nn.AttentionInt8 (the latter on the GEMM engine's
		// kernels; nn.AttentionInt8U8 writing u8, with the quantisation's
		// parameters last), and their packed forms; with a bias, their
		// Biased forms, which take it after the mask (the packed ones,
		// which have no mask, after V).
		name := strings.TrimPrefix(s.Call(), "nn.")
		packedName, packedBias := name+"Packed", []jen.Code(nil)
		if s.Bias != exec.NoSlot {
			packedName, packedBias = strings.TrimSuffix(name, "Biased")+"PackedBiased", []jen.Code{sc(s.Bias)}
		}
		var trailing []jen.Code
		if s.OutKp > 0 {
			trailing = []jen.Code{jen.Lit(s.OutInvScale), jen.Lit(s.OutZeroPoint)}
		}
		leading := func() []jen.Code { // the pool, the GEMM engine for INT8, the scratch
			if s.Int8 {
				return []jen.Code{jen.Id("m").Dot("pool"), jen.Id("m").Dot("gemm"), jen.Id("ws").Dot("attn")}
			}
			return []jen.Code{jen.Id("m").Dot("pool"), jen.Id("ws").Dot("attn")}
		}
		addends := []jen.Code{sc(s.Mask)}
		if s.Bias != exec.NoSlot {
			addends = append(addends, sc(s.Bias))
		}
		call := jen.Qual(pkgNN, name).Call(slices.Concat(leading(), []jen.Code{sc(s.Out), sc(s.Q), kArg, vArg}, addends,
			[]jen.Code{jen.Op("&").Qual(pkgNN, "AttentionDims").Values(dims)}, trailing)...)
		return pl.packedOr(s.Q, call, jen.Qual(pkgNN, packedName).Call(slices.Concat(leading(), []jen.Code{sc(s.Out), sc(s.Q), kArg.Clone(), vArg.Clone()}, packedBias,
			[]jen.Code{jen.Op("&").Qual(pkgNN, "AttentionDims").Values(packed), jen.Id("offsets")}, trailing)...)), nil
	case *exec.AttentionMaskStep:
		return jen.Qual(pkgNN, "AttentionMask").Call(sc(s.Out), sc(s.Mask), jen.Lit(s.Fill)), nil
	case *exec.AddStep:
		a, b := s.A, s.B
		if !suffixOf(pl.slots[b], pl.slots[a]) {
			// exec swaps at run time when B does not broadcast over A;
			// a + b = b + a bit for bit.
			a, b = b, a
		}
		return jen.Qual(pkgNN, "AddParallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(a), sc(b)), nil
	case *exec.MaskedSumStep:
		x := pl.slots[s.X]
		if len(x.shape) != 3 || !x.shape[2].Known() {
			return nil, fmt.Errorf("codegen: masked sum of %s (node %q) is not [batch, seq, hidden]", x.shape, s.Node)
		}
		hidden := jen.Lit(x.width)
		return pl.packedOr(s.X,
			jen.Qual(pkgNN, "MaskedSumParallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.X), sc(s.Mask), jen.Id("batch"), jen.Id("seq"), hidden),
			jen.Qual(pkgNN, "MaskedSumPacked").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.X), sc(s.Mask), jen.Id("seq"), hidden.Clone(), jen.Id("offsets"))), nil
	case *exec.MulStep:
		return jen.Qual(pkgNN, "MulParallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.A), sc(s.B)), nil
	case *exec.RotaryStep:
		// exec's RotaryStep.run: X [batch, seq, heads*d] of the padded
		// batch, the tables' batch 1 or X's.
		x, cos := pl.slots[s.X], pl.slots[s.Cos]
		if len(x.shape) != 3 || !x.shape[2].Known() || s.Heads <= 0 || x.width%s.Heads != 0 || len(cos.shape) != 3 {
			return nil, fmt.Errorf("codegen: rotary embedding of %s with table %s (node %q) is not [batch, seq, heads*d] with [1 or batch, seq, d]", x.shape, cos.shape, s.Node)
		}
		tables := jen.Code(jen.Id("batch"))
		if cos.shape[0].Known() && cos.shape[0].Size == 1 {
			tables = jen.Lit(1)
		}
		dims := jen.Dict{jen.Id("Batch"): jen.Id("batch"), jen.Id("Seq"): jen.Id("seq"), jen.Id("Heads"): jen.Lit(s.Heads),
			jen.Id("HeadSize"): jen.Lit(x.width / s.Heads), jen.Id("TableBatch"): tables}
		call := jen.Qual(pkgNN, "RotaryParallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.X), sc(s.Cos), sc(s.Sin),
			jen.Op("&").Qual(pkgNN, "RotaryDims").Values(dims))
		// A packed batch: each sequence from row 0 of the tables, computed
		// at the padded length (exec's RotaryStep.run).
		packed := jen.Dict{jen.Id("Batch"): jen.Len(jen.Id("offsets")).Op("-").Lit(1), jen.Id("Seq"): jen.Id("seq"), jen.Id("Heads"): jen.Lit(s.Heads),
			jen.Id("HeadSize"): jen.Lit(x.width / s.Heads), jen.Id("TableBatch"): jen.Lit(1)}
		return pl.packedOr(s.X, call, jen.Qual(pkgNN, "RotaryPacked").Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.X), sc(s.Cos), sc(s.Sin),
			jen.Op("&").Qual(pkgNN, "RotaryDims").Values(packed), jen.Id("offsets"))), nil
	case *exec.DisentangledBiasStep:
		// exec's DisentangledBiasStep.run, its scratch in ws.attn: the
		// padded batch, or a packed one filling each sequence's corner of
		// the padded bias (which packed attention reads).
		rowsID := s.Q
		if rowsID == exec.NoSlot {
			rowsID = s.K
		}
		x := pl.slots[rowsID]
		tableID := s.PosKey
		if tableID == exec.NoSlot { // p2c alone
			tableID = s.PosQuery
		}
		rows := pl.slots[tableID]
		dims := func(batch jen.Code) jen.Dict {
			return jen.Dict{jen.Id("Batch"): batch, jen.Id("Seq"): jen.Id("seq"), jen.Id("Heads"): jen.Lit(s.Heads),
				jen.Id("HeadDim"): jen.Lit(x.width / s.Heads), jen.Id("Rows"): jen.Lit(int(rows.shape[0].Size)),
				jen.Id("QStride"): jen.Lit(x.width), jen.Id("KStride"): jen.Lit(x.width), jen.Id("Divisor"): jen.Lit(s.Divisor)}
		}
		args := func() []jen.Code {
			return []jen.Code{jen.Id("m").Dot("pool"), jen.Id("ws").Dot("attn"), sc(s.Out), sc(s.Q), sc(s.PosKey), sc(s.C2P), sc(s.K), sc(s.PosQuery), sc(s.P2C)}
		}
		call := returnIfErr(jen.Qual(pkgNN, "DisentangledBias").Call(append(args(), jen.Op("&").Qual(pkgNN, "DisentangledDims").Values(dims(jen.Id("batch"))))...))
		packed := returnIfErr(jen.Qual(pkgNN, "DisentangledBiasPacked").Call(append(args(),
			jen.Op("&").Qual(pkgNN, "DisentangledDims").Values(dims(jen.Len(jen.Id("offsets")).Op("-").Lit(1))), jen.Id("offsets"))...))
		return pl.packedOr(rowsID, call, packed), nil
	case *exec.ActivationStep:
		fn := s.Activation().NN
		if fn == "" {
			return nil, fmt.Errorf("codegen: activation %q (node %q)", s.Func, s.Node)
		}
		return jen.Qual(pkgNN, fn).Call(jen.Id("m").Dot("pool"), sc(s.Out), sc(s.X)), nil
	case *exec.EmbedStep:
		types := jen.Nil()
		if s.TypeIDs != exec.NoSlot {
			types = sc(s.TypeIDs)
		}
		params := jen.Op("&").Id("m").Dot("w").Dot(g.pl.paramField[s])
		return pl.packedOr(s.Out,
			returnIfErr(jen.Qual(pkgNN, "EmbedSumParallel").Call(jen.Id("m").Dot("pool"), sc(s.Out), params, sc(s.IDs), types, jen.Id("batch"), jen.Id("seq"))),
			returnIfErr(jen.Qual(pkgNN, "EmbedSumPacked").Call(jen.Id("m").Dot("pool"), sc(s.Out), params.Clone(), sc(s.IDs), types.Clone(), jen.Id("seq"), jen.Id("offsets")))), nil
	case *exec.GatherStep:
		outer, dim, inner, err := pl.gatherDims(s)
		if err != nil {
			return nil, err
		}
		return pl.packedOr(s.Data,
			returnIfErr(jen.Qual(pkgNN, "Gather").Call(sc(s.Out), sc(s.Data), extentCode(outer), extentCode(dim), jen.Lit(inner), sc(s.Indices))),
			returnIfErr(jen.Qual(pkgNN, "GatherPacked").Call(sc(s.Out), sc(s.Data), jen.Lit(inner), jen.Id("offsets"), sc(s.Indices)))), nil
	}
	return nil, fmt.Errorf("codegen: no emitter for step %s (%T)", st.Call(), st)
}

// packedOr is call, or where slot id is token-wise, packed when the batch
// runs packed (offsets non-nil) and call when it does not.
func (pl *plan) packedOr(id exec.SlotID, call, packed *jen.Statement) *jen.Statement {
	if !pl.prog.TokenWise(id) {
		return call
	}
	return jen.If(jen.Id("offsets").Op("!=").Nil()).Block(packed).Else().Block(call)
}

// normOutputs are the nn.LayerNormOutputs of a LayerNorm run inside a
// GEMM, as exec's LayerNormStep.bindOutputs makes them.
func (pl *plan) normOutputs(s *exec.LayerNormStep) jen.Dict {
	d := jen.Dict{}
	if s.Out != exec.NoSlot {
		d[jen.Id("F32")], d[jen.Id("F32Stride")] = pl.slotCode(s.Out), jen.Lit(s.Params.N)
	}
	if s.OutU8 != exec.NoSlot {
		d[jen.Id("U8")], d[jen.Id("U8Stride")] = pl.slotCode(s.OutU8), jen.Lit(s.Kp)
		d[jen.Id("InvScale")] = jen.Lit(s.InvScale)
		if s.ZeroPoint != 0 {
			d[jen.Id("ZeroPoint")] = jen.Lit(s.ZeroPoint)
		}
		if s.GammaU8 != nil {
			d[jen.Id("GammaU8")] = pl.f32Arg(s.GammaU8Name, s.GammaU8)
			if s.BetaU8 != nil {
				d[jen.Id("BetaU8")] = pl.f32Arg(s.BetaU8Name, s.BetaU8)
			}
		}
	}
	return d
}

// callee is how the generated code spells a step's Call: qgemm.GEMM is
// the Engine method m.gemm.Linear (with the package's own kernel for the
// step's Kp, if any), every other call is nn.Name(.
func callee(call string) string {
	if call == "qgemm.GEMM" {
		return "m.gemm.Linear("
	}
	return call + "("
}

// suffixOf reports whether b's elements repeat over a's leading
// dimensions as nn.Add requires: the same extent, or b's variable
// dimensions a trailing part of a's ([seq, H] in [batch, seq, H], [H] in
// anything of row width H).
func suffixOf(b, a *slotPlan) bool {
	if b.extent == a.extent {
		return true
	}
	if b.width != a.width || b.extent.Batch {
		return false
	}
	if b.extent.Seq > 0 {
		return a.extent.Seq == b.extent.Seq && b.extent.Elems == a.extent.Elems
	}
	return b.extent.Elems == a.width
}

// actCode names a GEMM epilogue activation as qgemm spells it: "Act" and
// its String's words, separated by underscores, with capitals ("gelu":
// qgemm.ActGelu, "gelu_tanh": qgemm.ActGeluTanh).
func actCode(a qgemm.Act) *jen.Statement {
	name := "Act"
	for _, w := range strings.Split(a.String(), "_") {
		name += strings.ToUpper(w[:1]) + w[1:]
	}
	return jen.Qual(pkgQgemm, name)
}
