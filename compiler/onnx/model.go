package onnx

import (
	"fmt"
	"strconv"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/onnx/internal/onnxpb"
)

// builder turns one decoded ModelProto into a compiler.Graph.
type builder struct {
	file   string
	opts   Options
	ext    *externalData
	opsets map[string]int64 // by domain; the default domain is ""
	// widened counts what was read widened to float32 (float16.go).
	widened widenings
}

func (b *builder) bad(object string, err error) error { return compiler.BadInput(b.file, object, err) }

func (b *builder) model(m *onnxpb.ModelProto) (*compiler.Graph, error) {
	gp := m.GetGraph()
	if gp == nil {
		return nil, b.bad("", fmt.Errorf("%w: no graph in the ModelProto (is this an ONNX model?)", compiler.ErrMalformed))
	}
	if err := b.readOpsets(m); err != nil {
		return nil, err
	}
	// Unsupported ops are reported before a missing default opset: a model
	// of, say, only ai.onnx.preview.training ops is better told that.
	if err := b.checkOps(gp); err != nil {
		return nil, err
	}
	if err := b.checkDefaultOpset(); err != nil {
		return nil, err
	}
	g := compiler.NewGraph(gp.GetName())
	g.Opset = b.opsets[""]
	b.meta(g, m)
	if len(gp.GetSparseInitializer()) > 0 {
		return nil, b.bad("", fmt.Errorf("%w: %d sparse initializer(s)", ErrUnsupportedFeature, len(gp.GetSparseInitializer())))
	}
	if err := b.initializers(g, gp); err != nil {
		return nil, err
	}
	if err := b.values(g, gp); err != nil {
		return nil, err
	}
	if err := b.nodes(g, gp); err != nil {
		return nil, err
	}
	if err := b.order(g, gp); err != nil {
		return nil, err
	}
	if err := b.expandContrib(g); err != nil {
		return nil, err
	}
	if len(b.widened) > 0 {
		g.Meta["widened_to_float32"] = b.widened.String()
	}
	return g, nil
}

// readOpsets records opset_import by domain and checks the default one.
func (b *builder) readOpsets(m *onnxpb.ModelProto) error {
	b.opsets = map[string]int64{}
	for _, op := range m.GetOpsetImport() {
		domain := op.GetDomain()
		if isDefaultDomain(domain) {
			domain = ""
		}
		if _, dup := b.opsets[domain]; dup {
			return b.bad("", fmt.Errorf("%w: opset_import lists domain %q twice", compiler.ErrMalformed, op.GetDomain()))
		}
		if op.GetVersion() <= 0 {
			return b.bad("", fmt.Errorf("%w: opset_import gives domain %q version %d", compiler.ErrMalformed, op.GetDomain(), op.GetVersion()))
		}
		b.opsets[domain] = op.GetVersion()
	}
	return nil
}

// checkDefaultOpset requires an opset for the default domain within the
// supported range.
func (b *builder) checkDefaultOpset() error {
	opset, ok := b.opsets[""]
	if !ok {
		return b.bad("", fmt.Errorf("%w: the model imports no opset for the default ONNX domain", compiler.ErrMalformed))
	}
	if !b.opts.AllowAnyOpset && (opset < MinOpset || opset > MaxOpset) {
		return b.bad("", fmt.Errorf("%w: the model uses ONNX opset %d; sqc supports opsets %d to %d (re-export the model with opset_version in that range)",
			ErrUnsupportedOpset, opset, MinOpset, MaxOpset))
	}
	return nil
}

// checkOps reports every node whose op sqc does not support, all at once.
func (b *builder) checkOps(gp *onnxpb.GraphProto) error {
	var bad []UnsupportedNode
	for i, np := range gp.GetNode() {
		if supportedOp(np.GetDomain(), np.GetOpType()) {
			continue
		}
		domain := np.GetDomain()
		if isDefaultDomain(domain) {
			domain = ""
		}
		bad = append(bad, UnsupportedNode{Node: nodeName(i, np), Op: np.GetOpType(), Domain: domain, Opset: b.opsets[domain]})
	}
	if len(bad) > 0 {
		return b.bad("", &UnsupportedOpsError{Nodes: bad})
	}
	return nil
}

func (b *builder) meta(g *compiler.Graph, m *onnxpb.ModelProto) {
	set := func(k, v string) {
		if v != "" {
			g.Meta[k] = v
		}
	}
	set("source", b.file)
	set("producer", m.GetProducerName())
	set("producer_version", m.GetProducerVersion())
	set("graph_name", m.GetGraph().GetName())
	if m.IrVersion != nil {
		set("ir_version", strconv.FormatInt(m.GetIrVersion(), 10))
	}
	for _, kv := range m.GetMetadataProps() {
		if kv.GetKey() != "" {
			set("onnx."+kv.GetKey(), kv.GetValue())
		}
	}
}

func (b *builder) initializers(g *compiler.Graph, gp *onnxpb.GraphProto) error {
	for i, tp := range gp.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			return b.bad(fmt.Sprintf("initializer #%d", i), fmt.Errorf("%w: initializer has no name", compiler.ErrMalformed))
		}
		if _, dup := g.Initializers[name]; dup {
			return b.bad("initializer "+name, fmt.Errorf("%w: two initializers are named %q", compiler.ErrDuplicate, name))
		}
		t, err := decodeTensor(tp, b.ext)
		if err != nil {
			return b.bad("initializer "+name, err)
		}
		b.widened.note(tp.GetDataType(), widenedTensor)
		if !b.opts.AllowNonFinite {
			if at := firstNonFinite(t); at >= 0 {
				return b.bad("initializer "+name, fmt.Errorf("%w: element %d of %s%v is %v", compiler.ErrNonFinite, at, t.DType, t.Shape, floatAt(t, at)))
			}
		}
		g.Initializers[name] = t
	}
	return nil
}

func floatAt(t *compiler.Tensor, i int) float64 {
	if t.DType == compiler.Float32 {
		return float64(t.F32[i])
	}
	return t.F64[i]
}

// values converts graph inputs (less those backed by initializers),
// outputs and value_info.
func (b *builder) values(g *compiler.Graph, gp *onnxpb.GraphProto) error {
	seen := map[string]bool{}
	for _, vi := range gp.GetInput() {
		if seen[vi.GetName()] {
			return b.bad("input "+vi.GetName(), fmt.Errorf("%w: graph input %q is listed twice", compiler.ErrDuplicate, vi.GetName()))
		}
		seen[vi.GetName()] = true
		if _, isWeight := g.Initializers[vi.GetName()]; isWeight {
			continue // an input with a default value: sqc treats it as a weight
		}
		v, err := b.value(vi, "input")
		if err != nil {
			return err
		}
		g.Inputs = append(g.Inputs, v)
	}
	seen = map[string]bool{}
	for _, vi := range gp.GetOutput() {
		if seen[vi.GetName()] {
			return b.bad("output "+vi.GetName(), fmt.Errorf("%w: graph output %q is listed twice", compiler.ErrDuplicate, vi.GetName()))
		}
		seen[vi.GetName()] = true
		v, err := b.value(vi, "output")
		if err != nil {
			return err
		}
		g.Outputs = append(g.Outputs, v)
	}
	for _, vi := range gp.GetValueInfo() {
		if vi.GetType() == nil {
			continue // a name without type information says nothing
		}
		v, err := b.value(vi, "value_info")
		if err != nil {
			return err
		}
		if _, dup := g.Values[v.Name]; dup {
			return b.bad("value_info "+v.Name, fmt.Errorf("%w: value_info lists %q twice", compiler.ErrDuplicate, v.Name))
		}
		g.Values[v.Name] = v
	}
	return nil
}

// value converts a ValueInfoProto of tensor type.
func (b *builder) value(vi *onnxpb.ValueInfoProto, kind string) (*compiler.Value, error) {
	name := vi.GetName()
	if name == "" {
		return nil, b.bad(kind, fmt.Errorf("%w: graph %s has no name", compiler.ErrMalformed, kind))
	}
	object := kind + " " + name
	typ := vi.GetType()
	if typ == nil {
		return nil, b.bad(object, fmt.Errorf("%w: no type", compiler.ErrMalformed))
	}
	tt := typ.GetTensorType()
	if tt == nil {
		return nil, b.bad(object, fmt.Errorf("%w: %s type; sqc handles dense tensors only", ErrUnsupportedFeature, typeKind(typ)))
	}
	dt, err := dtypeFromONNX(tt.GetElemType())
	if err != nil {
		return nil, b.bad(object, err)
	}
	b.widened.note(tt.GetElemType(), widenedValue)
	v := &compiler.Value{Name: name, DType: dt}
	if sp := tt.GetShape(); sp != nil {
		v.Shape = make(compiler.Shape, len(sp.GetDim()))
		for i, d := range sp.GetDim() {
			switch x := d.GetValue().(type) {
			case *onnxpb.TensorShapeProto_Dimension_DimValue:
				if x.DimValue < 0 {
					return nil, b.bad(object, fmt.Errorf("%w: negative dimension %d at axis %d", compiler.ErrMalformed, x.DimValue, i))
				}
				v.Shape[i] = compiler.Dim{Size: x.DimValue}
			case *onnxpb.TensorShapeProto_Dimension_DimParam:
				v.Shape[i] = compiler.Dim{Size: -1, Param: x.DimParam}
			default:
				v.Shape[i] = compiler.Dim{Size: -1}
			}
		}
	}
	return v, nil
}

func typeKind(t *onnxpb.TypeProto) string {
	switch t.GetValue().(type) {
	case *onnxpb.TypeProto_SequenceType:
		return "sequence"
	case *onnxpb.TypeProto_MapType:
		return "map"
	case *onnxpb.TypeProto_OptionalType:
		return "optional"
	case *onnxpb.TypeProto_SparseTensorType:
		return "sparse tensor"
	}
	return "unknown"
}

// nodeName is the node's name, or "#index" for an unnamed node.
func nodeName(i int, np *onnxpb.NodeProto) string {
	if np.GetName() != "" {
		return np.GetName()
	}
	return "#" + strconv.Itoa(i)
}

func nodeObject(i int, np *onnxpb.NodeProto) string {
	return fmt.Sprintf("node %s (%s)", nodeName(i, np), np.GetOpType())
}
