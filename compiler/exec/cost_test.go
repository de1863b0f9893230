package exec

import (
	"math"
	"slices"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestReplayRepeatsInPlace checks what the roofline relies on: Replay
// visits every step once, in order, after it ran, and running a step again
// leaves every buffer it writes with the same bits, because it reads
// inputs no later step has overwritten yet (the arena is shared: the plan
// must keep a step's outputs off its inputs' bytes).
func TestReplayRepeatsInPlace(t *testing.T) {
	for _, c := range []struct {
		name string
		prog *Program
		in   map[string]*compiler.Tensor
	}{
		{"qchain", compile(t, parse(t, qchain), nil, 1), qchainInputs(2, 5, 3, 0)},
		{"encoder layer", compile(t, parse(t, encoderLayer), nil, 2), layerInputs(7, 7, 3)},
	} {
		p := c.prog
		next := 0
		err := p.Replay(c.in, func(i int, s Step, cost Cost, again func() error) error {
			if i != next || s != p.Steps()[i] {
				t.Fatalf("%s: visited step #%d, want #%d", c.name, i, next)
			}
			next++
			if cost.Kind == "" || cost.Bytes <= 0 {
				t.Errorf("%s: step #%d %s: cost %+v", c.name, i, s.Call(), cost)
			}
			var before []*compiler.Tensor
			for _, id := range s.Operands().Writes {
				before = append(before, p.bufs[id].Clone())
			}
			if err := again(); err != nil {
				return err
			}
			for j, id := range s.Operands().Writes {
				if got, want := p.bufs[id], before[j]; !slices.Equal(got.Shape, want.Shape) || !sameTensorBits(got, want) {
					t.Errorf("%s: step #%d %s: %s differs when run again", c.name, i, s.Call(), p.slots[id])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if next != len(p.Steps()) {
			t.Errorf("%s: %d of %d steps visited", c.name, next, len(p.Steps()))
		}
	}
}

// sameTensorBits reports whether a and b hold the same dtype and bits.
func sameTensorBits(a, b *compiler.Tensor) bool {
	n := int(compiler.NumElements(a.Shape))
	if a.DType != b.DType {
		return false
	}
	switch a.DType {
	case compiler.Float32:
		return slices.EqualFunc(a.F32[:n], b.F32[:n], func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
	case compiler.Uint8:
		return slices.Equal(a.U8[:n], b.U8[:n])
	case compiler.Int32:
		return slices.Equal(a.I32[:n], b.I32[:n])
	case compiler.Int64:
		return slices.Equal(a.I64[:n], b.I64[:n])
	}
	return false
}
