package passes

import (
	"slices"
	"strings"
	"testing"
)

// pipelines are every pass list sqc runs, as `sqc compile` and `sqc
// inspect` chain them.
func pipelines() map[string][]Pass {
	int8 := INT8Pipeline(nil, QuantOptions{})
	return map[string][]Pass{
		"Pipeline":      Pipeline(),
		"QuantPipeline": QuantPipeline(nil, QuantOptions{}),
		"INT8Pipeline":  int8,
	}
}

func TestPipelinesRespectPassOrder(t *testing.T) {
	for name, list := range pipelines() {
		if err := CheckOrder(list); err != nil {
			t.Errorf("%s (%s):\n%v", name, passNames(list), err)
		}
	}
}

// TestPassOrderNamesRealPasses guards the table against typos and against
// passes renamed or dropped: every name in it is a pass of some pipeline,
// and every rule says why.
func TestPassOrderNamesRealPasses(t *testing.T) {
	known := map[string]bool{}
	for _, list := range pipelines() {
		for _, p := range list {
			known[p.Name] = true
		}
	}
	for _, r := range passOrder {
		if !known[r.First] {
			t.Errorf("rule names %q, which no pipeline has", r.First)
		}
		if len(r.Then) == 0 || len(r.Why) < 20 {
			t.Errorf("rule %q -> %v lacks passes or a reason", r.First, r.Then)
		}
		for _, p := range r.Then {
			if !known[p] {
				t.Errorf("rule names %q, which no pipeline has", p)
			}
		}
	}
}

// TestCheckOrderCatchesMisorderedPipelines breaks one rule of each kind.
func TestCheckOrderCatchesMisorderedPipelines(t *testing.T) {
	move := func(list []Pass, name string, to int) []Pass {
		i := slices.IndexFunc(list, func(p Pass) bool { return p.Name == name })
		if i < 0 {
			t.Fatalf("no pass %s", name)
		}
		p := list[i]
		list = slices.Delete(slices.Clone(list), i, i+1)
		return slices.Insert(list, to, p)
	}
	index := func(list []Pass, name string) int {
		return slices.IndexFunc(list, func(p Pass) bool { return p.Name == name })
	}
	int8 := INT8Pipeline(nil, QuantOptions{})
	fp32 := Pipeline()
	for _, c := range []struct {
		name string
		list []Pass
		want []string // substrings of the error
	}{
		{"needs: mask after attention", move(fp32, "CanonicalizeAttentionMask", index(fp32, "FuseAttention")),
			[]string{"pass CanonicalizeAttentionMask must run before FuseAttention", "masked_fill"}},
		{"needs: smoothing after quantising", move(int8, "SmoothQuant", index(int8, "Quantize")),
			[]string{"pass SmoothQuant must run before Quantize", "statistics Quantize reads"}},
		{"needs: fusion before quantize", move(int8, "FuseQKV", index(int8, "Quantize")),
			[]string{"pass Quantize must run before FuseQKV"}},
		{"needs: linear fused before cleaning", move(fp32, "FuseLinear", 0),
			[]string{"pass FoldConstants must run before FuseLinear", "pass EliminateDeadNodes must run before FuseLinear"}},
		{"sweeps: no sweep after the embeddings", fp32[:len(fp32)-1],
			[]string{"pass EliminateDeadNodes must run again after FuseEmbeddings", "position-id"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckOrder(c.list)
			if err == nil {
				t.Fatalf("%s: accepted", passNames(c.list))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
