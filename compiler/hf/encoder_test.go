package hf

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// TestLoadEncoder: a classifier checkpoint loads as its base model with
// last_hidden_state alone, and a checkpoint without pooler parameters
// loads (sentence-transformers saves encoders without them).
func TestLoadEncoder(t *testing.T) {
	for _, arch := range []string{ArchBertForSequence, ArchDistilBertForSequence, ArchBertModel} {
		m := newTinyModel(t, arch, false)
		for name := range m.tensors {
			if strings.Contains(name, "pooler.") {
				delete(m.tensors, name)
			}
		}
		g, err := LoadEncoder(m.write(t))
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(g.Outputs) != 1 || g.Outputs[0].Name != outLastHidden {
			t.Errorf("%s: outputs %v, want last_hidden_state alone", arch, g.Outputs)
		}
		for name := range g.Initializers {
			if strings.Contains(name, "pooler") || strings.Contains(name, "classifier") {
				t.Errorf("%s: the graph keeps %s", arch, name)
			}
		}
	}
	// Other missing parameters are still errors.
	m := newTinyModel(t, ArchBertModel, false)
	delete(m.tensors, "embeddings.word_embeddings.weight")
	if _, err := LoadEncoder(m.write(t)); !errors.Is(err, compiler.ErrMissingTensor) {
		t.Errorf("missing word embeddings: %v", err)
	}
	if _, err := LoadEncoder(writeModel(t, m.configJSON(t), nil)); !errors.Is(err, compiler.ErrMissingTensor) {
		t.Errorf("no safetensors: %v", err)
	}
}
