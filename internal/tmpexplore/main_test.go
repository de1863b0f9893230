package explore

import (
	"os"
	"testing"

	"github.com/sqc-dev/sqc/compiler/onnx"
	"github.com/sqc-dev/sqc/passes"
)

func TestDump(t *testing.T) {
	for _, m := range []string{"sst2-bert-mini", "sst2-distilbert-tiny"} {
		g, err := onnx.Load("/work/shared/models/" + m + "/model.onnx")
		if err != nil {
			t.Fatal(err)
		}
		if err := passes.RunPipeline(g, passes.Options{CheckIR: true}); err != nil {
			t.Fatal(err)
		}
		os.WriteFile("/tmp/explore/"+m+".txt", []byte(g.Text()), 0o644)
	}
}
