package compiler

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Parser of the textual IR (see text.go for the syntax).

// ParseError is a syntax error in textual IR, located by line and column
// (both from 1). It wraps ErrMalformed and, as every bad input does,
// matches ErrBadInput.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d:%d: %s", e.Line, e.Col, e.Msg) }

// Unwrap returns ErrMalformed.
func (e *ParseError) Unwrap() error { return ErrMalformed }

// Is makes a ParseError match ErrBadInput.
func (e *ParseError) Is(target error) bool { return target == ErrBadInput }

// ParseText parses the textual IR. It checks syntax and that tensor data
// fits its type; it does not verify the graph (call Verify).
func ParseText(src string) (*Graph, error) {
	p := &parser{lex: lexer{src: src, line: 1, col: 1}}
	p.next()
	g, err := p.graph()
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return nil, pe
		}
		return nil, err
	}
	g.elided = p.elided
	return g, nil
}

type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // graph, MatMul, sqc.Linear, batch
	tokNumber         // 12, -1, 1e-12, +Inf
	tokString         // "quoted"
	tokValue          // %name or %"name"; text is the name
	tokNode           // @name or @"name"; text is the name
	tokPunct          // one of [ ] ( ) { } < > = , : * ?
)

type token struct {
	kind      tokKind
	text      string
	line, col int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return strconv.Quote(t.text)
	case tokValue:
		return valueRef(t.text)
	case tokNode:
		return nodeNameRef(t.text)
	}
	return strconv.Quote(t.text)
}

type lexer struct {
	src       string
	pos       int
	line, col int
}

func (l *lexer) errorf(line, col int, format string, args ...any) error {
	return &ParseError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (l *lexer) advance(n int) {
	for range n {
		if l.src[l.pos] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.pos++
	}
}

// take consumes bytes while ok holds and returns them.
func (l *lexer) take(ok func(byte) bool) string {
	start := l.pos
	for l.pos < len(l.src) && ok(l.src[l.pos]) {
		l.advance(1)
	}
	return l.src[start:l.pos]
}

func (l *lexer) quoted(line, col int) (string, error) {
	q, err := strconv.QuotedPrefix(l.src[l.pos:])
	if err != nil || q[0] != '"' {
		return "", l.errorf(line, col, "unterminated or invalid string")
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", l.errorf(line, col, "invalid string %s", q)
	}
	l.advance(len(q))
	return s, nil
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == '#' {
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.advance(1)
			}
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		l.advance(1)
	}
	line, col := l.line, l.col
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, line: line, col: col}, nil
	}
	c := l.src[l.pos]
	switch {
	case c == '%' || c == '@':
		kind := tokValue
		if c == '@' {
			kind = tokNode
		}
		l.advance(1)
		if l.pos < len(l.src) && l.src[l.pos] == '"' {
			s, err := l.quoted(line, col)
			return token{kind: kind, text: s, line: line, col: col}, err
		}
		s := l.take(isBareValueChar)
		if s == "" {
			return token{}, l.errorf(line, col, "expected a name after %q", c)
		}
		return token{kind: kind, text: s, line: line, col: col}, nil
	case c == '"':
		s, err := l.quoted(line, col)
		return token{kind: tokString, text: s, line: line, col: col}, err
	case isIdentStart(c):
		return token{kind: tokIdent, text: l.take(isOpChar), line: line, col: col}, nil
	case c == '+' || c == '-' || c == '.' || ('0' <= c && c <= '9'):
		l.advance(1)
		rest := l.take(func(b byte) bool {
			// An exponent sign follows e/E; other signs end the number.
			return isIdentChar(b) || b == '.' ||
				((b == '+' || b == '-') && (l.src[l.pos-1] == 'e' || l.src[l.pos-1] == 'E'))
		})
		return token{kind: tokNumber, text: string(c) + rest, line: line, col: col}, nil
	case strings.IndexByte("[](){}<>=,:*?", c) >= 0:
		l.advance(1)
		return token{kind: tokPunct, text: string(c), line: line, col: col}, nil
	}
	return token{}, l.errorf(line, col, "unexpected character %q", c)
}

type parser struct {
	lex lexer
	tok token
	err error // first lexical error, reported at the next expect
	// elided maps the content hash of data filled in for elided(...) to
	// the hash the text gave (Graph.elided).
	elided map[string]string
}

func (p *parser) next() {
	if p.err != nil {
		p.tok = token{kind: tokEOF, line: p.tok.line, col: p.tok.col}
		return
	}
	t, err := p.lex.next()
	if err != nil {
		p.err = err
		p.tok = token{kind: tokEOF, line: t.line, col: t.col}
		return
	}
	p.tok = t
}

func (p *parser) errorf(format string, args ...any) error {
	if p.err != nil {
		return p.err
	}
	return &ParseError{Line: p.tok.line, Col: p.tok.col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) is(kind tokKind, text string) bool {
	return p.tok.kind == kind && p.tok.text == text
}

func (p *parser) punct(s string) bool { return p.is(tokPunct, s) }

// expect consumes the punctuation or keyword s.
func (p *parser) expect(kind tokKind, s string) error {
	if !p.is(kind, s) {
		return p.errorf("expected %q, found %s", s, p.tok)
	}
	p.next()
	return nil
}

func (p *parser) expectKind(kind tokKind, what string) (token, error) {
	if p.tok.kind != kind {
		return token{}, p.errorf("expected %s, found %s", what, p.tok)
	}
	t := p.tok
	p.next()
	return t, nil
}

// name reads an identifier or a quoted string (op and attribute names).
func (p *parser) name(what string) (string, error) {
	if p.tok.kind != tokIdent && p.tok.kind != tokString {
		return "", p.errorf("expected %s, found %s", what, p.tok)
	}
	t := p.tok
	if t.kind == tokIdent && isKeyword(t.text) {
		return "", p.errorf("expected %s, found keyword %s", what, t)
	}
	p.next()
	return t.text, nil
}

func (p *parser) graph() (*Graph, error) {
	if err := p.expect(tokIdent, "graph"); err != nil {
		return nil, err
	}
	name, err := p.expectKind(tokString, "graph name (a quoted string)")
	if err != nil {
		return nil, err
	}
	g := NewGraph(name.text)
	if err := p.expect(tokIdent, "opset"); err != nil {
		return nil, err
	}
	if g.Opset, err = p.int(); err != nil {
		return nil, err
	}
	if err := p.expect(tokPunct, "{"); err != nil {
		return nil, err
	}
	for !p.punct("}") {
		if err := p.statement(g); err != nil {
			return nil, err
		}
	}
	p.next()
	if p.tok.kind != tokEOF || p.err != nil {
		return nil, p.errorf("expected end of input after the graph, found %s", p.tok)
	}
	return g, nil
}

func (p *parser) statement(g *Graph) error {
	t := p.tok
	switch {
	case t.kind == tokEOF:
		return p.errorf("unexpected end of input: missing \"}\"")
	case p.is(tokIdent, "meta"):
		p.next()
		k, err := p.expectKind(tokString, "meta key (a quoted string)")
		if err != nil {
			return err
		}
		if err := p.expect(tokPunct, "="); err != nil {
			return err
		}
		v, err := p.expectKind(tokString, "meta value (a quoted string)")
		if err != nil {
			return err
		}
		if _, dup := g.Meta[k.text]; dup {
			return &ParseError{Line: k.line, Col: k.col, Msg: fmt.Sprintf("meta key %q repeated", k.text)}
		}
		g.Meta[k.text] = v.text
	case p.is(tokIdent, "input"), p.is(tokIdent, "output"):
		p.next()
		v, err := p.valueDecl()
		if err != nil {
			return err
		}
		if t.text == "input" {
			g.Inputs = append(g.Inputs, v)
		} else {
			g.Outputs = append(g.Outputs, v)
		}
	case p.is(tokIdent, "init"):
		p.next()
		return p.initializer(g)
	case t.kind == tokValue, p.is(tokIdent, "_"), t.kind == tokString, t.kind == tokIdent && !isKeyword(t.text):
		return p.node(g)
	default:
		return p.errorf("expected meta, input, init, a node, output or \"}\", found %s", t)
	}
	return nil
}

func (p *parser) valueDecl() (*Value, error) {
	name, err := p.expectKind(tokValue, "a value name (%name)")
	if err != nil {
		return nil, err
	}
	if err := p.expect(tokPunct, ":"); err != nil {
		return nil, err
	}
	dt, shape, err := p.typ()
	if err != nil {
		return nil, err
	}
	return &Value{Name: name.text, DType: dt, Shape: shape}, nil
}

// typ parses dtype[dims].
func (p *parser) typ() (DType, Shape, error) {
	dt := Undefined
	switch {
	case p.punct("?"):
		p.next()
	case p.tok.kind == tokIdent:
		d, err := ParseDType(p.tok.text)
		if err != nil {
			return 0, nil, p.errorf("%v", err)
		}
		dt = d
		p.next()
	default:
		return 0, nil, p.errorf("expected a dtype, found %s", p.tok)
	}
	if err := p.expect(tokPunct, "["); err != nil {
		return 0, nil, err
	}
	if p.punct("*") {
		p.next()
		return dt, nil, p.expect(tokPunct, "]")
	}
	shape := Shape{}
	for !p.punct("]") {
		if len(shape) > 0 {
			if err := p.expect(tokPunct, ","); err != nil {
				return 0, nil, err
			}
		}
		switch t := p.tok; {
		case p.punct("?"):
			shape = append(shape, unknownDim())
		case t.kind == tokIdent, t.kind == tokString:
			shape = append(shape, SymDim(t.text))
		case t.kind == tokNumber:
			v, err := strconv.ParseInt(t.text, 10, 64)
			if err != nil || v < 0 {
				return 0, nil, p.errorf("invalid dimension %s", t)
			}
			shape = append(shape, Dim{Size: v})
		default:
			return 0, nil, p.errorf("expected a dimension, found %s", t)
		}
		p.next()
	}
	p.next()
	return dt, shape, nil
}

func (p *parser) int() (int64, error) {
	t, err := p.expectKind(tokNumber, "an integer")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil {
		return 0, &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf("invalid integer %q", t.text)}
	}
	return v, nil
}

func (p *parser) initializer(g *Graph) error {
	name, err := p.expectKind(tokValue, "an initializer name (%name)")
	if err != nil {
		return err
	}
	if _, dup := g.Initializers[name.text]; dup {
		return &ParseError{Line: name.line, Col: name.col, Msg: fmt.Sprintf("initializer %s defined twice", valueRef(name.text))}
	}
	if err := p.expect(tokPunct, ":"); err != nil {
		return err
	}
	if p.is(tokIdent, "nil") {
		p.next()
		g.Initializers[name.text] = nil
		return nil
	}
	t, err := p.tensor()
	if err != nil {
		return err
	}
	g.Initializers[name.text] = t
	return nil
}

// tensor parses "type = data" (initializers) or "type data" (after
// tensor<...>, where the caller consumed the closing ">").
func (p *parser) tensor() (*Tensor, error) {
	line, col := p.tok.line, p.tok.col
	dt, shape, err := p.typ()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tokPunct, "="); err != nil {
		return nil, err
	}
	return p.tensorData(dt, shape, line, col)
}

// maxParsedElements bounds each tensor text may ask the parser to
// allocate (2^25 elements, 128 MiB of f32: BERT-base's 23M-element word
// embeddings fit), so hostile text cannot exhaust memory.
const maxParsedElements = 1 << 25

func (p *parser) tensorData(dt DType, shape Shape, line, col int) (*Tensor, error) {
	at := func(format string, args ...any) error {
		return &ParseError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
	}
	sizes, ok := shape.Static()
	if !ok || dt == Undefined {
		return nil, at("tensor type %s must have a dtype and known dims", typeString(dt, shape))
	}
	n := int64(1)
	for _, s := range sizes {
		if s != 0 && n > maxParsedElements/s {
			return nil, at("tensor %s is too large", typeString(dt, shape))
		}
		n *= s
	}
	if n > maxParsedElements {
		return nil, at("tensor %s is too large", typeString(dt, shape))
	}
	t := NewTensor(dt, sizes...)
	switch {
	case p.punct("["):
		p.next()
		i := int64(0)
		for !p.punct("]") {
			if i > 0 {
				if err := p.expect(tokPunct, ","); err != nil {
					return nil, err
				}
			}
			if i >= n {
				return nil, p.errorf("too many elements for %s (%d)", typeString(dt, shape), n)
			}
			if err := p.element(t, int(i)); err != nil {
				return nil, err
			}
			i++
		}
		if i != n {
			return nil, p.errorf("%s needs %d elements, found %d", typeString(dt, shape), n, i)
		}
		p.next()
	case p.is(tokIdent, "splat"):
		p.next()
		if err := p.expect(tokPunct, "("); err != nil {
			return nil, err
		}
		one := NewTensor(dt, 1)
		if err := p.element(one, 0); err != nil {
			return nil, err
		}
		for i := range int(n) {
			copyElement(t, i, one, 0)
		}
		if err := p.expect(tokPunct, ")"); err != nil {
			return nil, err
		}
	case p.is(tokIdent, "arange"):
		p.next()
		if dt == Float32 || dt == Float64 || dt == Bool {
			return nil, p.errorf("arange needs an integer dtype, not %s", dt)
		}
		if err := p.expect(tokPunct, "("); err != nil {
			return nil, err
		}
		start, err := p.int()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tokPunct, ","); err != nil {
			return nil, err
		}
		step, err := p.int()
		if err != nil {
			return nil, err
		}
		for i := range int(n) {
			setInt(t, i, start+int64(i)*step)
		}
		if n > 0 && (tensorInt(t, int(n-1)) != start+(n-1)*step || tensorInt(t, 0) != start) {
			return nil, p.errorf("arange(%d, %d) overflows %s", start, step, dt)
		}
		if err := p.expect(tokPunct, ")"); err != nil {
			return nil, err
		}
	case p.is(tokIdent, "elided"):
		p.next()
		if err := p.expect(tokPunct, "("); err != nil {
			return nil, err
		}
		h, err := p.expectKind(tokString, "a content hash (a quoted string)")
		if err != nil {
			return nil, err
		}
		fillElided(t, h.text)
		if p.elided == nil {
			p.elided = map[string]string{}
		}
		p.elided[contentHash(t)] = h.text
		if err := p.expect(tokPunct, ")"); err != nil {
			return nil, err
		}
	default:
		return nil, p.errorf("expected tensor data ([...], splat, arange or elided), found %s", p.tok)
	}
	return t, nil
}

// element parses one tensor element into t[i].
func (p *parser) element(t *Tensor, i int) error {
	tok := p.tok
	bad := func() error { return p.errorf("invalid %s element %s", t.DType, tok) }
	switch t.DType {
	case Bool:
		if tok.kind != tokIdent || (tok.text != "true" && tok.text != "false") {
			return bad()
		}
		t.Bool[i] = tok.text == "true"
	case Float32, Float64:
		if tok.kind != tokNumber && !(tok.kind == tokIdent && (tok.text == "NaN" || tok.text == "Inf")) {
			return bad()
		}
		bits := 64
		if t.DType == Float32 {
			bits = 32
		}
		v, err := strconv.ParseFloat(tok.text, bits)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return bad()
		}
		if t.DType == Float32 {
			t.F32[i] = float32(v)
		} else {
			t.F64[i] = v
		}
	default:
		if tok.kind != tokNumber {
			return bad()
		}
		v, err := strconv.ParseInt(tok.text, 10, t.DType.Size()*8)
		if t.DType == Uint8 {
			var u uint64
			u, err = strconv.ParseUint(tok.text, 10, 8)
			v = int64(u)
		}
		if err != nil {
			return bad()
		}
		setInt(t, i, v)
	}
	p.next()
	return nil
}

func setInt(t *Tensor, i int, v int64) {
	switch t.DType {
	case Int64:
		t.I64[i] = v
	case Int32:
		t.I32[i] = int32(v)
	case Int8:
		t.I8[i] = int8(v)
	case Uint8:
		t.U8[i] = uint8(v)
	case Bool:
		t.Bool[i] = v != 0
	}
}

func copyElement(dst *Tensor, i int, src *Tensor, j int) {
	switch dst.DType {
	case Float32:
		dst.F32[i] = src.F32[j]
	case Float64:
		dst.F64[i] = src.F64[j]
	default:
		setInt(dst, i, tensorInt(src, j))
	}
}

// fillElided fills t deterministically from the printed hash.
func fillElided(t *Tensor, hash string) {
	h := fnv.New64a()
	h.Write([]byte(hash))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range t.Len() {
		switch t.DType {
		case Float32:
			t.F32[i] = float32(rng.Float64()*2 - 1)
		case Float64:
			t.F64[i] = rng.Float64()*2 - 1
		case Int64, Int32:
			setInt(t, i, rng.Int64N(16))
		case Int8, Uint8:
			setInt(t, i, int64(rng.Uint32()&math.MaxUint8))
		case Bool:
			t.Bool[i] = rng.Uint32()&1 == 1
		}
	}
}

// node parses "outs = Op(ins) {attrs} @name" (outs and "=" absent for a
// node without outputs).
func (p *parser) node(g *Graph) error {
	n := &Node{}
	startLine, startCol := p.tok.line, p.tok.col
	if p.tok.kind == tokValue || p.is(tokIdent, "_") {
		for {
			if p.is(tokIdent, "_") {
				p.next()
				n.Outputs = append(n.Outputs, "")
			} else {
				t, err := p.expectKind(tokValue, "an output name (%name or _)")
				if err != nil {
					return err
				}
				n.Outputs = append(n.Outputs, t.text)
				if p.punct(":") {
					p.next()
					dt, shape, err := p.typ()
					if err != nil {
						return err
					}
					if _, dup := g.Values[t.text]; dup {
						return &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf("type of %s given twice", valueRef(t.text))}
					}
					g.Values[t.text] = &Value{Name: t.text, DType: dt, Shape: shape}
				}
			}
			if !p.punct(",") {
				break
			}
			p.next()
		}
		if err := p.expect(tokPunct, "="); err != nil {
			return err
		}
	}
	op, err := p.name("an op name")
	if err != nil {
		return err
	}
	n.Op = op
	if err := p.expect(tokPunct, "("); err != nil {
		return err
	}
	for !p.punct(")") {
		if len(n.Inputs) > 0 {
			if err := p.expect(tokPunct, ","); err != nil {
				return err
			}
		}
		if p.is(tokIdent, "_") {
			p.next()
			n.Inputs = append(n.Inputs, "")
			continue
		}
		t, err := p.expectKind(tokValue, "an input name (%name or _)")
		if err != nil {
			return err
		}
		n.Inputs = append(n.Inputs, t.text)
	}
	p.next()
	if p.punct("{") {
		p.next()
		n.Attrs = map[string]Attr{}
		for !p.punct("}") {
			if len(n.Attrs) > 0 {
				if err := p.expect(tokPunct, ","); err != nil {
					return err
				}
			}
			nameTok := p.tok
			name, err := p.name("an attribute name")
			if err != nil {
				return err
			}
			if _, dup := n.Attrs[name]; dup {
				return &ParseError{Line: nameTok.line, Col: nameTok.col, Msg: fmt.Sprintf("attribute %q repeated", name)}
			}
			if err := p.expect(tokPunct, "="); err != nil {
				return err
			}
			a, err := p.attr()
			if err != nil {
				return err
			}
			n.Attrs[name] = a
		}
		p.next()
	}
	if p.tok.kind == tokNode {
		n.Name = p.tok.text
		p.next()
	}
	if len(n.Outputs) == 0 && len(n.Inputs) == 0 && n.Attrs == nil && n.Name == "" && n.Op == "" {
		return &ParseError{Line: startLine, Col: startCol, Msg: "empty node"}
	}
	g.Nodes = append(g.Nodes, n)
	return nil
}

// isFloatText reports whether a number token is written as a float.
func isFloatText(s string) bool { return strings.ContainsAny(s, ".eEIN") }

func (p *parser) attr() (Attr, error) {
	t := p.tok
	switch {
	case t.kind == tokNumber || (t.kind == tokIdent && (t.text == "NaN" || t.text == "Inf")):
		p.next()
		if isFloatText(t.text) {
			v, err := strconv.ParseFloat(t.text, 32)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return Attr{}, &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf("invalid float %q", t.text)}
			}
			return FloatAttr(float32(v)), nil
		}
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return Attr{}, &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf("invalid integer %q", t.text)}
		}
		return IntAttr(v), nil
	case t.kind == tokString:
		p.next()
		return StringAttr(t.text), nil
	case p.punct("["):
		return p.list("")
	case t.kind == tokIdent && (t.text == "ints" || t.text == "floats" || t.text == "strings"):
		p.next()
		return p.list(t.text)
	case p.is(tokIdent, "tensor"):
		p.next()
		if err := p.expect(tokPunct, "<"); err != nil {
			return Attr{}, err
		}
		if p.is(tokIdent, "nil") {
			p.next()
			return TensorAttr(nil), p.expect(tokPunct, ">")
		}
		line, col := p.tok.line, p.tok.col
		dt, shape, err := p.typ()
		if err != nil {
			return Attr{}, err
		}
		if err := p.expect(tokPunct, ">"); err != nil {
			return Attr{}, err
		}
		tt, err := p.tensorData(dt, shape, line, col)
		if err != nil {
			return Attr{}, err
		}
		return TensorAttr(tt), nil
	}
	return Attr{}, p.errorf("expected an attribute value, found %s", t)
}

// list parses [a, b, ...]; kind is "ints", "floats", "strings" or "" to
// decide from the elements.
func (p *parser) list(kind string) (Attr, error) {
	if err := p.expect(tokPunct, "["); err != nil {
		return Attr{}, err
	}
	var toks []token
	for !p.punct("]") {
		if len(toks) > 0 {
			if err := p.expect(tokPunct, ","); err != nil {
				return Attr{}, err
			}
		}
		t := p.tok
		if t.kind != tokNumber && t.kind != tokString && !(t.kind == tokIdent && (t.text == "NaN" || t.text == "Inf")) {
			return Attr{}, p.errorf("expected a list element, found %s", t)
		}
		toks = append(toks, t)
		p.next()
	}
	p.next()
	if kind == "" {
		if len(toks) == 0 {
			return Attr{}, p.errorf("empty list needs its kind: ints[], floats[] or strings[]")
		}
		kind = "ints"
		for _, t := range toks {
			switch {
			case t.kind == tokString:
				kind = "strings"
			case kind == "ints" && isFloatText(t.text):
				kind = "floats"
			}
		}
	}
	at := func(t token, format string, args ...any) error {
		return &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
	}
	switch kind {
	case "ints":
		a := Attr{Kind: AttrInts, Ints: []int64{}}
		for _, t := range toks {
			v, err := strconv.ParseInt(t.text, 10, 64)
			if err != nil || t.kind != tokNumber {
				return Attr{}, at(t, "invalid integer %s in ints list", t)
			}
			a.Ints = append(a.Ints, v)
		}
		return a, nil
	case "floats":
		a := Attr{Kind: AttrFloats, Floats: []float32{}}
		for _, t := range toks {
			v, err := strconv.ParseFloat(t.text, 32)
			if t.kind == tokString || (err != nil && !errors.Is(err, strconv.ErrRange)) {
				return Attr{}, at(t, "invalid float %s in floats list", t)
			}
			a.Floats = append(a.Floats, float32(v))
		}
		return a, nil
	}
	a := Attr{Kind: AttrStrings, Strings: []string{}}
	for _, t := range toks {
		if t.kind != tokString {
			return Attr{}, at(t, "list mixes strings with %s", t)
		}
		a.Strings = append(a.Strings, t.text)
	}
	return a, nil
}
