package reliability

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
	"github.com/sqc-dev/sqc/runtime/modelrt"
)

// Fuzz targets for the input validation of the two ways to run a compiled
// model: exec.Program.Run and a generated package's Model.Run. Arbitrary
// batch shapes, sequence lengths, mask shapes and values, and token ids
// (negative, past the vocabulary, past the positions) must give a typed
// error or a well-formed result, never a panic.

// fuzzReader hands out the fuzzer's bytes as small numbers; it returns
// zeros once they run out.
type fuzzReader []byte

func (r *fuzzReader) byte() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

// id returns a token id that is usually in [0, 30522) and sometimes
// negative or past the vocabulary.
func (r *fuzzReader) id() int64 {
	v := int64(int16(binary.LittleEndian.Uint16([]byte{r.byte(), r.byte()})))
	if v >= 0 {
		return v % 32000 // a little past the demo model's 30522 ids
	}
	if v < -30000 {
		return v // rare negative ids
	}
	return -v % 30522
}

// maskValue is usually 1, sometimes 0, rarely something else.
func (r *fuzzReader) maskValue() int64 {
	switch b := r.byte(); {
	case b < 200:
		return 1
	case b < 250:
		return 0
	default:
		return int64(int8(b))
	}
}

// fuzzSeeds are shared by both targets: the first bytes pick the shape.
var fuzzSeeds = [][]byte{
	{2, 5, 0, 101, 0, 7, 8, 102, 0},
	{1, 3, 1, 255, 255, 0, 0, 1, 1},
	{4, 20, 2},
	{0, 0, 0},
	{1, 200, 0},
	{3, 2, 3, 1, 2, 3, 4, 5, 6, 250, 251, 252},
}

// FuzzProgramRun feeds arbitrary input tensors to a compiled Program of
// the quantised demo model. A recovered kernel panic ("internal error")
// counts as a crash: it means the input checks let something through.
func FuzzProgramRun(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	d := loadDemo(f)
	p := compileProgram(f, quantizedDemo(f, d, compiler.QLinearStatic), "", 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzReader(data)
		b, seq, shape := int64(r.byte()%5), int64(r.byte()%80), r.byte()%6
		if seq > 70 {
			seq = 513 + seq%3 // around the model's 512 positions
		}
		ids := compiler.NewTensor(compiler.Int64, b, seq)
		for i := range ids.I64 {
			ids.I64[i] = r.id()
		}
		maskB, maskS := b, seq
		switch shape {
		case 1:
			maskS++
		case 2:
			maskB++
		}
		mask := compiler.NewTensor(compiler.Int64, maskB, maskS)
		for i := range mask.I64 {
			mask.I64[i] = r.maskValue()
		}
		in := map[string]*compiler.Tensor{"input_ids": ids, "attention_mask": mask}
		switch shape {
		case 3:
			delete(in, "attention_mask")
		case 4:
			in["attention_mask"] = compiler.NewTensor(compiler.Int32, maskB, maskS)
		case 5:
			ids.I64 = ids.I64[:len(ids.I64)/2] // shape and data disagree
		}
		out, err := p.Run(in)
		if err != nil {
			if !errors.Is(err, compiler.ErrBadInput) || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("batch %d x %d, mask case %d: %v", b, seq, shape, err)
			}
			return
		}
		logits := out["logits"]
		if logits == nil || len(logits.Shape) != 2 || logits.Shape[0] != b || logits.Shape[1] != 2 {
			t.Fatalf("batch %d x %d: logits %v", b, seq, logits)
		}
		for _, v := range logits.F32 {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("batch %d x %d, mask case %d: logit %v", b, seq, shape, v)
			}
		}
	})
}

// FuzzModelRun feeds arbitrary batches to the generated Model of the
// example (examples/sentiment/sentimentmodel).
func FuzzModelRun(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	m, err := sentimentmodel.NewWithOptions(sentimentmodel.Options{Threads: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(m.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzReader(data)
		n, maxLen, shape := int(r.byte()%(sentimentmodel.MaxBatch+3)), int(r.byte()), r.byte()%4
		var b sentimentmodel.Batch
		for i := range n {
			l := (maxLen + 7*i) % (sentimentmodel.MaxSequence + 4)
			ids := make([]int64, l)
			for j := range ids {
				ids[j] = r.id()
			}
			b.InputIDs = append(b.InputIDs, ids)
			if shape == 0 {
				continue
			}
			ml := l
			if shape == 2 && i == n-1 {
				ml = l + 1 // one mask longer than its ids
			}
			mask := make([]int64, ml)
			for j := range mask {
				mask[j] = r.maskValue()
			}
			b.AttentionMask = append(b.AttentionMask, mask)
			if shape == 3 {
				b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, l))
			}
		}
		out, err := m.Run(context.Background(), b)
		if err != nil {
			if !errors.Is(err, modelrt.ErrInvalidInput) {
				t.Fatalf("%d sequences: error %v does not match ErrInvalidInput", n, err)
			}
			return
		}
		if len(out.Logits) != n {
			t.Fatalf("%d sequences, %d rows of logits", n, len(out.Logits))
		}
		for i, row := range out.Logits {
			if len(row) != sentimentmodel.NumLabels {
				t.Fatalf("sequence %d: %d logits", i, len(row))
			}
			for _, v := range row {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("sequence %d: logit %v", i, v)
				}
			}
		}
	})
}
