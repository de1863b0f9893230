package compiler

import (
	"strings"
	"testing"
)

// TestEmbeddingsForms: sqc.Embeddings takes a type table with or without
// type ids and an optional padding_idx >= 0 (EmbeddingsPaddingIdx reads
// it); type ids without a table and a negative padding_idx are verifier
// errors naming what is wrong.
func TestEmbeddingsForms(t *testing.T) {
	const tables = "input %ids: i64[batch, sequence]\ninput %tt: i64[batch, sequence]\n" +
		"input %w: f32[10, 4]\ninput %p: f32[12, 4]\ninput %ty: f32[2, 4]\n"
	for _, c := range []struct {
		node, err string
		pad       int64
		padded    bool
	}{
		{node: "%y = sqc.Embeddings(%ids, %w, %p)"},
		{node: "%y = sqc.Embeddings(%ids, %w, %p, %tt, %ty)"},
		{node: "%y = sqc.Embeddings(%ids, %w, %p, _, %ty) {padding_idx=1}", pad: 1, padded: true},
		{node: "%y = sqc.Embeddings(%ids, %w, %p) {padding_idx=0}", padded: true},
		{node: "%y = sqc.Embeddings(%ids, %w, %p) {padding_idx=-1}", err: "padding_idx = -1"},
		{node: "%y = sqc.Embeddings(%ids, %w, %p, %tt)", err: "no type table"},
		{node: "%y = sqc.Embeddings(%ids, %w, %p, %tt, _)", err: "no type table"},
	} {
		g, err := inferText(t, 17, tables+c.node)
		if err == nil {
			err = g.Verify()
		}
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.node, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.node, err, c.err)
		case c.err == "":
			if pad, ok := EmbeddingsPaddingIdx(g.Nodes[0]); pad != c.pad || ok != c.padded {
				t.Errorf("%s: EmbeddingsPaddingIdx = %d, %v", c.node, pad, ok)
			}
			if got := g.Values["y"].String(); !strings.Contains(got, "f32[batch, sequence, 4]") {
				t.Errorf("%s: y is %s", c.node, got)
			}
		}
	}
}
