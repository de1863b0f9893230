package compiler

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking):\n%s", path, firstDiff(string(want), got))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + w + "\n got:  " + g
		}
	}
	return ""
}

// TestTextGolden parses every testdata/*.sqc file, prints it and compares
// with testdata/*.golden; after shape inference it compares with
// *.inferred.golden. Printing must be a fixed point of parse+print.
func TestTextGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.sqc"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.sqc files: %v", err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".sqc")
		t.Run(base, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseText(string(src))
			if err != nil {
				t.Fatal(err)
			}
			printed := g.Text()
			checkGolden(t, base+".golden", printed)
			assertFixedPoint(t, printed)
			if err := g.Verify(); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if err := g.InferShapes(); err != nil {
				t.Fatalf("InferShapes: %v", err)
			}
			inferred := g.Text()
			checkGolden(t, base+".inferred.golden", inferred)
			assertFixedPoint(t, inferred)
		})
	}
}

func assertFixedPoint(t *testing.T, printed string) {
	t.Helper()
	g, err := ParseText(printed)
	if err != nil {
		t.Fatalf("printed text does not parse: %v", err)
	}
	if again := g.Text(); again != printed {
		t.Fatalf("print(parse(print(g))) != print(g):\n%s", firstDiff(printed, again))
	}
}

// TestBertLayerShapes spells out the key shapes of the BERT-like snippet,
// independently of the golden file.
func TestBertLayerShapes(t *testing.T) {
	src, err := os.ReadFile("testdata/bert_layer.sqc")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseText(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"seqlen":  "i64[]",
		"tgt":     "i64[4]",
		"pos":     "i64[1, sequence]",
		"emb":     "f32[batch, sequence, 12]",
		"mean":    "f32[batch, sequence, 1]",
		"mask":    "f32[batch, 1, 1, sequence]",
		"qr":      "f32[batch, sequence, 2, 6]",
		"kt":      "f32[batch, 2, 6, sequence]",
		"probs":   "f32[batch, 2, sequence, sequence]",
		"ctxr":    "f32[batch, sequence, 12]",
		"gelu":    "f32[batch, sequence, 24]",
		"cls":     "f32[batch, 12]",
		"logits":  "f32[batch, 3]",
		"isneg":   "bool[4]",
		"mexp":    "i64[batch, 2, sequence, sequence]",
		"r":       "i64[sequence]",
		"scaled":  "f32[batch, 2, sequence, sequence]",
		"seqlen1": "i64[1]",
	}
	for name, w := range want {
		v := g.Values[name]
		if v == nil {
			t.Errorf("%%%s: no value", name)
			continue
		}
		if got := typeString(v.DType, v.Shape); got != w {
			t.Errorf("%%%s: %s, want %s", name, got, w)
		}
	}
	if len(g.Values) != len(g.Nodes) {
		t.Errorf("%d values for %d single-output nodes", len(g.Values), len(g.Nodes))
	}
	// Running again on its own output changes nothing.
	before := g.Text()
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if g.Text() != before {
		t.Error("InferShapes is not idempotent")
	}
}

// TestTextRoundTripBuilt prints a graph built in Go that exercises every
// attribute kind, awkward names and special floats, and checks the parse
// gives back the same graph.
func TestTextRoundTripBuilt(t *testing.T) {
	g := NewGraph("odd \"name\"\n")
	g.Opset = 17
	g.Meta["z"] = "last"
	g.Meta["a key"] = "ünïcode\tvalue"
	g.Inputs = []*Value{
		{Name: "onnx::x:0", DType: Float32, Shape: Shape{SymDim("batch size"), SymDim("seq"), {Size: 3}}},
		{Name: "123", DType: Int64, Shape: Shape{{Size: -1}}},
		{Name: "r", DType: Undefined, Shape: nil},
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e-12, 0.1, 16777217}
	g.Initializers["specials"] = &Tensor{DType: Float32, Shape: []int64{int64(len(specials))}, F32: specials}
	g.Initializers["f64"] = &Tensor{DType: Float64, Shape: []int64{3}, F64: []float64{math.Pi, -1e300, 5e-324}}
	g.Initializers["bools"] = &Tensor{DType: Bool, Shape: []int64{2, 1}, Bool: []bool{true, false}}
	g.Initializers["i8"] = &Tensor{DType: Int8, Shape: []int64{3}, I8: []int8{-128, 0, 127}}
	g.Initializers["u8"] = &Tensor{DType: Uint8, Shape: []int64{2}, U8: []uint8{0, 255}}
	g.Initializers["i32"] = &Tensor{DType: Int32, Shape: []int64{}, I32: []int32{math.MinInt32}}
	g.Initializers["i64"] = &Tensor{DType: Int64, Shape: []int64{2}, I64: []int64{math.MinInt64, math.MaxInt64}}
	g.Initializers["empty"] = NewTensor(Float32, 0, 4)
	big := NewTensor(Float32, 10, 10)
	for i := range big.F32 {
		big.F32[i] = float32(i) * 0.37
	}
	g.Initializers["big"] = big
	g.Initializers["zeros"] = NewTensor(Float32, 100)
	ar := NewTensor(Int64, 2, 50)
	for i := range ar.I64 {
		ar.I64[i] = 7 - 3*int64(i)
	}
	g.Initializers["arange"] = ar
	g.Nodes = []*Node{{
		Name: "weird node/ name", Op: "Custom::Op", Inputs: []string{"onnx::x:0", "", "123"}, Outputs: []string{"o1", ""},
		Attrs: map[string]Attr{
			"i": IntAttr(-7), "f": FloatAttr(3), "nan": FloatAttr(float32(math.NaN())), "inf": FloatAttr(float32(math.Inf(-1))),
			"s": StringAttr("a\"b\\c"), "is": IntsAttr(1, -2), "fs": FloatsAttr(1, 2.5), "ss": StringsAttr("x", ""),
			"e1": IntsAttr(), "e2": FloatsAttr(), "e3": StringsAttr(),
			"t": TensorAttr(&Tensor{DType: Int64, Shape: []int64{1}, I64: []int64{1}}), "tnil": TensorAttr(nil),
			"tbig": TensorAttr(big), "graph": IntAttr(1), "weird name": IntAttr(2),
		},
	}, {Op: "input", Outputs: []string{"o2"}, Inputs: []string{"o1"}}, {Op: "NoOutputs", Inputs: []string{"o2"}}}
	g.Values["o1"] = &Value{Name: "o1", DType: Float32, Shape: Shape{{Size: 2}, SymDim("?")}}
	g.Values["o2"] = &Value{Name: "o2", DType: Undefined, Shape: Shape{}}
	g.Outputs = []*Value{{Name: "o2", DType: Bool, Shape: Shape{}}}

	printed := g.Text()
	assertFixedPoint(t, printed)
	p, err := ParseText(printed)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != g.Name || p.Opset != g.Opset || len(p.Meta) != 2 || p.Meta["a key"] != g.Meta["a key"] {
		t.Errorf("header or meta lost: %q %d %v", p.Name, p.Opset, p.Meta)
	}
	for i, v := range g.Inputs {
		if pv := p.Inputs[i]; pv.Name != v.Name || pv.DType != v.DType || !pv.Shape.Equal(v.Shape) {
			t.Errorf("input %d: %v, want %v", i, pv, v)
		}
	}
	for name, want := range g.Initializers {
		if name == "big" {
			continue // elided: only its hash survives
		}
		got := p.Initializers[name]
		if got == nil || got.DType != want.DType || !StaticShape(got.Shape...).Equal(StaticShape(want.Shape...)) || contentHash(got) != contentHash(want) {
			t.Errorf("initializer %s changed: %v", name, got)
		}
	}
	n := p.Nodes[0]
	if n.Name != "weird node/ name" || n.Op != "Custom::Op" || strings.Join(n.Inputs, ",") != "onnx::x:0,,123" || len(n.Outputs) != 2 || n.Outputs[1] != "" {
		t.Errorf("node 0 changed: %+v", n)
	}
	for k, a := range g.Nodes[0].Attrs {
		b, ok := n.Attrs[k]
		if !ok || b.Kind != a.Kind {
			t.Errorf("attribute %s: kind %v, want %v", k, b.Kind, a.Kind)
			continue
		}
		if a.Kind == AttrFloat && math.Float32bits(a.Float) != math.Float32bits(b.Float) && !(a.Float != a.Float && b.Float != b.Float) {
			t.Errorf("attribute %s: %v, want %v", k, b.Float, a.Float)
		}
	}
	if p.Nodes[1].Op != "input" || p.Nodes[2].Op != "NoOutputs" || len(p.Nodes[2].Outputs) != 0 {
		t.Errorf("keyword-named op or output-less node changed: %+v %+v", p.Nodes[1], p.Nodes[2])
	}
	if !strings.Contains(printed, `init %big: f32[10, 10] = elided("sha256:`) ||
		!strings.Contains(printed, "init %zeros: f32[100] = splat(0)") ||
		!strings.Contains(printed, "init %arange: i64[2, 50] = arange(7, -3)") {
		t.Errorf("large tensors not abbreviated as expected:\n%s", printed)
	}
	full := new(strings.Builder)
	if err := g.WriteTextOptions(full, TextOptions{InlineLimit: -1}); err != nil {
		t.Fatal(err)
	}
	pf, err := ParseText(full.String())
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range big.F32 {
		if pf.Initializers["big"].F32[i] != v {
			t.Fatalf("full print lost big[%d]", i)
		}
	}
}

// TestElidedData: parsing elided data is deterministic, prints the same
// hash again, and a changed tensor prints its own hash.
func TestElidedData(t *testing.T) {
	const src = `graph "e" opset 14 {
  init %ids: i64[100] = elided("sha256:feedfacecafebeef")
  init %q: i8[70] = elided("sha256:1111111111111111")
  init %w: f32[8, 16] = elided("sha256:0123456789abcdef")
}
`
	a, err := ParseText(src)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseText(src)
	if a.Text() != src {
		t.Fatalf("reprint differs:\n%s", a.Text())
	}
	w := a.Initializers["w"]
	if contentHash(w) != contentHash(b.Initializers["w"]) {
		t.Error("elided fill is not deterministic")
	}
	distinct := map[float32]bool{}
	for _, v := range w.F32 {
		if v < -1 || v >= 1 {
			t.Fatalf("fill %v outside [-1, 1)", v)
		}
		distinct[v] = true
	}
	if len(distinct) < len(w.F32)/2 {
		t.Errorf("fill is degenerate: %d distinct of %d", len(distinct), len(w.F32))
	}
	for _, v := range a.Initializers["ids"].I64 {
		if v < 0 || v >= 16 {
			t.Fatalf("index fill %d outside [0, 16)", v)
		}
	}
	w.F32[3] += 1
	if strings.Contains(a.Text(), "0123456789abcdef") {
		t.Error("a modified tensor still prints the parsed hash")
	}
	if c := a.Clone(); !strings.Contains(c.Text(), "feedfacecafebeef") {
		t.Error("Clone lost the elided hash")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		line int
		want string
	}{
		{"empty", "", 1, `expected "graph"`},
		{"no opset", `graph "g" {`, 1, `expected "opset"`},
		{"unterminated", "graph \"g\" opset 14 {\n  input %x: f32[2]\n", 3, `missing "}"`},
		{"bad dtype", "graph \"g\" opset 14 {\n  input %x: f16[2]\n}", 2, `unknown dtype "f16"`},
		{"bad dim", "graph \"g\" opset 14 {\n\n  input %x: f32[-2]\n}", 3, `invalid dimension`},
		{"too few elements", "graph \"g\" opset 14 {\n  init %w: f32[2, 2] = [1, 2, 3]\n}", 2, `needs 4 elements, found 3`},
		{"too many elements", "graph \"g\" opset 14 {\n  init %w: f32[1] = [1, 2]\n}", 2, `too many elements`},
		{"int overflow", "graph \"g\" opset 14 {\n  init %w: i8[1] = [200]\n}", 2, `invalid i8 element`},
		{"symbolic init", "graph \"g\" opset 14 {\n  init %w: f32[batch] = [1]\n}", 2, `must have a dtype and known dims`},
		{"duplicate init", "graph \"g\" opset 14 {\n  init %w: f32[] = [1]\n  init %w: f32[] = [1]\n}", 3, `defined twice`},
		{"missing paren", "graph \"g\" opset 14 {\n  input %x: f32[2]\n  %y = Relu(%x\n}", 4, `expected ","`},
		{"bad attribute", "graph \"g\" opset 14 {\n  %y = Relu(%x) {axis=}\n}", 2, `expected an attribute value`},
		{"repeated attribute", "graph \"g\" opset 14 {\n  %y = Relu(%x) {a=1, a=2}\n}", 2, `attribute "a" repeated`},
		{"empty list", "graph \"g\" opset 14 {\n  %y = Relu(%x) {a=[]}\n}", 2, `empty list needs its kind`},
		{"mixed list", "graph \"g\" opset 14 {\n  %y = Relu(%x) {a=[1, \"s\"]}\n}", 2, `list mixes strings`},
		{"bad char", "graph \"g\" opset 14 {\n  %y = Relu(%x) ;\n}", 2, `unexpected character ';'`},
		{"bad string", "graph \"g\" opset 14 {\n  meta \"k\\q\" = \"v\"\n}", 2, `invalid string`},
		{"trailing", "graph \"g\" opset 14 {\n}\n}", 3, `expected end of input`},
		{"arange float", "graph \"g\" opset 14 {\n  init %w: f32[100] = arange(0, 1)\n}", 2, `arange needs an integer dtype`},
		{"arange overflow", "graph \"g\" opset 14 {\n  init %w: i8[100] = arange(100, 1)\n}", 2, `overflows i8`},
		{"huge tensor", "graph \"g\" opset 14 {\n  init %w: f32[1000000, 1000000] = splat(0)\n}", 2, `too large`},
		{"type given twice", "graph \"g\" opset 14 {\n  %y: f32[] = Relu(%x)\n  %y: f32[] = Relu(%x)\n}", 3, `type of %y given twice`},
		{"keyword as op", "graph \"g\" opset 14 {\n  %y = init(%x)\n}", 2, `expected an op name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseText(c.src)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.want) {
				t.Errorf("got %q, want line %d containing %q", err, c.line, c.want)
			}
			if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrBadInput) {
				t.Errorf("%v does not match ErrMalformed and ErrBadInput", err)
			}
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("message %q does not start with the line", err)
			}
		})
	}
}
