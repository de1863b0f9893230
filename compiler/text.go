package compiler

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The textual IR. `sqc inspect --graph` prints it and pass tests are
// written in it. Example:
//
//	graph "tiny" opset 14 {
//	  meta "model_type" = "bert"
//
//	  input %input_ids: i64[batch, sequence]
//
//	  init %w: f32[2, 3] = [1, 2, 3, 4, 5, 6]
//	  init %emb: f32[30522, 256] = elided("sha256:9f2c41d0a77e3b15")
//
//	  %y: f32[batch, sequence, 3] = MatMul(%x, %w) @/encoder/MatMul
//	  %z = Transpose(%y) {perm=[0, 2, 1]}
//	  %"onnx::Cast_5" = Constant() {value=tensor<f32[]> [-3.4028235e+38]}
//
//	  output %z: f32[batch, 3, sequence]
//	}
//
// Syntax, in order of appearance:
//   - Value names are written %name; names with characters other than
//     letters, digits and _ . - / are quoted: %"onnx::Mul_12". An omitted
//     optional input or output ("" in the IR) is written _.
//   - Types are dtype[dims]: dtypes as DType.String ("?" when unknown);
//     dims are sizes, symbolic names (quoted when not identifiers) or "?"
//     for unknown; [] is a scalar and [*] an unknown rank.
//   - Node lines list outputs, each with an optional ": type" (the
//     Graph.Values entry), then "=", the op (quoted if not an identifier),
//     the inputs in parentheses, attributes in braces sorted by name, and
//     the node name after "@" when it has one.
//   - Attribute values: 1 (int), 1.0 or 1e-12 (float: always has a "." or
//     exponent), "s" (string), [1, 2] (ints), [1.0, 2.5] (floats),
//     ["a"] (strings), ints[] / floats[] / strings[] for empty lists,
//     tensor<type> data (tensor).
//   - Tensor data is a flat row-major list. Tensors of more than
//     DefaultInlineLimit elements are abbreviated: splat(v) when every
//     element is v, arange(start, step) for an integer progression, and
//     otherwise elided("sha256:<16 hex digits>"), the first 64 bits of the
//     SHA-256 of the little-endian data. Parsing elided data fills the
//     tensor deterministically from the hash: floats uniform in [-1, 1),
//     i8/u8 over their whole range, i32/i64 in [0, 16) (valid as indices
//     into any table of 16 rows or more), bools at random. The parsed
//     tensor remembers the printed hash, so printing it again gives the
//     same text. Floats print with strconv's shortest form and parse back
//     bit for bit (NaN payloads excepted).
//   - # starts a comment that runs to the end of the line; layout is free.
//
// Printing is deterministic: meta, initializers and attributes sorted by
// name, nodes in graph order. Values entries for names no node produces
// are not printed.

// DefaultInlineLimit is the largest element count printed in full.
const DefaultInlineLimit = 64

// TextOptions controls printing.
type TextOptions struct {
	// InlineLimit is the largest element count printed in full; 0 means
	// DefaultInlineLimit, a negative value prints every tensor in full.
	InlineLimit int
}

// Text returns the textual form of g.
func (g *Graph) Text() string {
	var b strings.Builder
	_ = g.WriteTextOptions(&b, TextOptions{}) // strings.Builder never fails
	return b.String()
}

// WriteText writes the textual form of g to w.
func (g *Graph) WriteText(w io.Writer) error { return g.WriteTextOptions(w, TextOptions{}) }

// WriteTextOptions writes the textual form of g to w.
func (g *Graph) WriteTextOptions(w io.Writer, opts TextOptions) error {
	if opts.InlineLimit == 0 {
		opts.InlineLimit = DefaultInlineLimit
	}
	p := printer{w: bufio.NewWriter(w), opts: opts}
	p.graph(g)
	return p.w.Flush()
}

type printer struct {
	w    *bufio.Writer
	opts TextOptions
	// elided is the graph's Graph.elided: data the parser filled in for
	// an elided(...) prints as that text again.
	elided map[string]string
}

func (p *printer) s(parts ...string) {
	for _, s := range parts {
		p.w.WriteString(s)
	}
}

func (p *printer) graph(g *Graph) {
	p.elided = g.elided
	p.s("graph ", strconv.Quote(g.Name), " opset ", strconv.FormatInt(g.Opset, 10), " {\n")
	// Sections (meta, inputs, initializers, nodes, outputs) are separated
	// by one blank line; empty sections leave no trace.
	printed, open := false, false
	line := func(parts ...string) {
		if !open && printed {
			p.s("\n")
		}
		open, printed = true, true
		p.s("  ")
		p.s(parts...)
		p.s("\n")
	}
	endSection := func() { open = false }
	for _, k := range sortedKeys(g.Meta) {
		line("meta ", strconv.Quote(k), " = ", strconv.Quote(g.Meta[k]))
	}
	endSection()
	for _, v := range g.Inputs {
		line("input ", valueRef(v.Name), ": ", typeString(v.DType, v.Shape))
	}
	endSection()
	for _, name := range g.InitializerNames() {
		t := g.Initializers[name]
		if t == nil {
			line("init ", valueRef(name), ": nil")
			continue
		}
		line("init ", valueRef(name), ": ", typeString(t.DType, StaticShape(t.Shape...)), " = ", p.data(t))
	}
	endSection()
	typed := map[string]bool{} // annotate each value once, at its first producer
	for _, n := range g.Nodes {
		line(p.node(g, n, typed))
	}
	endSection()
	for _, v := range g.Outputs {
		line("output ", valueRef(v.Name), ": ", typeString(v.DType, v.Shape))
	}
	p.s("}\n")
}

func (p *printer) node(g *Graph, n *Node, typed map[string]bool) string {
	var b strings.Builder
	for i, o := range n.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		if o == "" {
			b.WriteString("_")
			continue
		}
		b.WriteString(valueRef(o))
		if v := g.Values[o]; v != nil && (v.DType != Undefined || v.Shape != nil) && !typed[o] {
			b.WriteString(": " + typeString(v.DType, v.Shape))
			typed[o] = true
		}
	}
	if len(n.Outputs) > 0 {
		b.WriteString(" = ")
	}
	b.WriteString(opName(n.Op) + "(")
	for i, in := range n.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		if in == "" {
			b.WriteString("_")
		} else {
			b.WriteString(valueRef(in))
		}
	}
	b.WriteString(")")
	if len(n.Attrs) > 0 {
		b.WriteString(" {")
		for i, name := range sortedAttrNames(n.Attrs) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(attrName(name) + "=" + p.attr(n.Attrs[name]))
		}
		b.WriteString("}")
	}
	if n.Name != "" {
		b.WriteString(" " + nodeNameRef(n.Name))
	}
	return b.String()
}

func (p *printer) attr(a Attr) string {
	switch a.Kind {
	case AttrInt:
		return strconv.FormatInt(a.Int, 10)
	case AttrFloat:
		return attrFloat(a.Float)
	case AttrString:
		return strconv.Quote(a.String)
	case AttrInts:
		if len(a.Ints) == 0 {
			return "ints[]"
		}
		return list(len(a.Ints), func(i int) string { return strconv.FormatInt(a.Ints[i], 10) })
	case AttrFloats:
		if len(a.Floats) == 0 {
			return "floats[]"
		}
		return list(len(a.Floats), func(i int) string { return attrFloat(a.Floats[i]) })
	case AttrStrings:
		if len(a.Strings) == 0 {
			return "strings[]"
		}
		return list(len(a.Strings), func(i int) string { return strconv.Quote(a.Strings[i]) })
	case AttrTensor:
		if a.Tensor == nil {
			return "tensor<nil>"
		}
		return "tensor<" + typeString(a.Tensor.DType, StaticShape(a.Tensor.Shape...)) + "> " + p.data(a.Tensor)
	}
	return "?" // not parseable: Verify reports the bad kind
}

func list(n int, elem func(i int) string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(elem(i))
	}
	b.WriteString("]")
	return b.String()
}

// data renders a tensor's contents, abbreviated when large.
func (p *printer) data(t *Tensor) string {
	n := t.Len()
	switch {
	case p.opts.InlineLimit < 0 || n <= p.opts.InlineLimit || t.Check() != nil:
		return list(n, func(i int) string { return elemString(t, i) })
	case allEqual(t):
		return "splat(" + elemString(t, 0) + ")"
	}
	if start, step, ok := progression(t); ok {
		return "arange(" + strconv.FormatInt(start, 10) + ", " + strconv.FormatInt(step, 10) + ")"
	}
	h := contentHash(t)
	if printed, ok := p.elided[h]; ok {
		h = printed
	}
	return "elided(" + strconv.Quote(h) + ")"
}

func elemString(t *Tensor, i int) string {
	switch t.DType {
	case Float32:
		return floatString(float64(t.F32[i]), 32)
	case Float64:
		return floatString(t.F64[i], 64)
	case Bool:
		return strconv.FormatBool(t.Bool[i])
	}
	return strconv.FormatInt(tensorInt(t, i), 10)
}

func floatString(v float64, bits int) string {
	return strconv.FormatFloat(v, 'g', -1, bits)
}

// attrFloat prints a float attribute so it cannot be read as an int.
func attrFloat(f float32) string {
	s := floatString(float64(f), 32)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// allEqual reports whether every element of t has the same bits (so -0
// and 0 differ, and a splat round-trips exactly).
func allEqual(t *Tensor) bool {
	switch t.DType {
	case Float32:
		return allSame(t.F32, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })
	case Float64:
		return allSame(t.F64, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
	case Int64:
		return allSame(t.I64, func(a, b int64) bool { return a == b })
	case Int32:
		return allSame(t.I32, func(a, b int32) bool { return a == b })
	case Int8:
		return allSame(t.I8, func(a, b int8) bool { return a == b })
	case Uint8:
		return allSame(t.U8, func(a, b uint8) bool { return a == b })
	case Bool:
		return allSame(t.Bool, func(a, b bool) bool { return a == b })
	}
	return false
}

func allSame[E any](s []E, eq func(a, b E) bool) bool {
	for i := 1; i < len(s); i++ {
		if !eq(s[i], s[0]) {
			return false
		}
	}
	return true
}

// progression reports whether an integer tensor is start, start+step, ...
func progression(t *Tensor) (start, step int64, ok bool) {
	if t.DType == Bool || t.DType == Float32 || t.DType == Float64 || t.Len() < 2 {
		return 0, 0, false
	}
	start, step = tensorInt(t, 0), tensorInt(t, 1)-tensorInt(t, 0)
	for i := range t.Len() {
		if tensorInt(t, i) != start+int64(i)*step {
			return 0, 0, false
		}
	}
	return start, step, true
}

// contentHash is "sha256:" and the first 16 hex digits of the SHA-256 of
// the type and the little-endian data.
func contentHash(t *Tensor) string {
	h := sha256.New()
	io.WriteString(h, typeString(t.DType, StaticShape(t.Shape...)))
	size := t.DType.Size()
	buf := make([]byte, 0, 1<<16) // hashed in 64 KiB chunks
	for i := range t.Len() {
		switch t.DType {
		case Float32:
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t.F32[i]))
		case Float64:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(t.F64[i]))
		case Int64:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(t.I64[i]))
		case Int32:
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t.I32[i]))
		default:
			buf = append(buf, byte(tensorInt(t, i)))
		}
		if len(buf)+size > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:8])
}

func typeString(dt DType, s Shape) string {
	d := "?"
	if dt != Undefined {
		d = dt.String()
	}
	if s == nil {
		return d + "[*]"
	}
	parts := make([]string, len(s))
	for i, dim := range s {
		switch {
		case dim.Param != "":
			parts[i] = identOrQuoted(dim.Param, isIdentChar)
		case dim.Size < 0:
			parts[i] = "?"
		default:
			parts[i] = strconv.FormatInt(dim.Size, 10)
		}
	}
	return d + "[" + strings.Join(parts, ", ") + "]"
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || ('0' <= c && c <= '9') }

// isOpChar allows the dot of "sqc.Linear".
func isOpChar(c byte) bool { return isIdentChar(c) || c == '.' }

func isBareValueChar(c byte) bool {
	return isIdentChar(c) || c == '.' || c == '-' || c == '/'
}

// valueRef writes a value name after %: bare when every byte is a bare
// value character, else quoted.
func valueRef(name string) string {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return r > 127 || !isBareValueChar(byte(r)) }) >= 0 {
		return "%" + strconv.Quote(name)
	}
	return "%" + name
}

// nodeNameRef writes a node name after @, like a value name.
func nodeNameRef(name string) string { return "@" + valueRef(name)[1:] }

// identOrQuoted writes s bare when it is an identifier (bytes passing ok)
// that is not a keyword, else quoted.
func identOrQuoted(s string, ok func(byte) bool) string {
	if s == "" || !isIdentStart(s[0]) || isKeyword(s) {
		return strconv.Quote(s)
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return strconv.Quote(s)
		}
	}
	return s
}

// isKeyword reports words with a meaning of their own in the text; they
// are quoted where a name is meant.
func isKeyword(s string) bool {
	switch s {
	case "graph", "opset", "meta", "input", "output", "init", "_", "ints", "floats", "strings",
		"tensor", "nil", "splat", "arange", "elided", "true", "false", "NaN", "Inf":
		return true
	}
	return false
}

func opName(op string) string     { return identOrQuoted(op, isOpChar) }
func attrName(name string) string { return identOrQuoted(name, isIdentChar) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
