package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
)

// onnxNodeTests is where Debian's libonnx-testdata installs ONNX's backend
// node tests: one directory per case holding model.onnx and
// test_data_set_N/{input,output}_M.pb (serialized TensorProtos).
const onnxNodeTests = "/usr/share/libonnx-testdata/data/node"

// TestONNXNodeTestModels loads every ONNX backend node test model the way a
// conformance test does (any opset, NaN allowed) and checks that each one
// either loads, with test tensors matching its declared inputs and outputs,
// or is refused for a reason sqc owns up to (op, dtype or feature not
// supported), never as malformed.
func TestONNXNodeTestModels(t *testing.T) {
	cases, err := os.ReadDir(onnxNodeTests)
	if err != nil {
		t.Skipf("ONNX node tests not installed at %s (apt-get install libonnx-testdata): %v", onnxNodeTests, err)
	}
	counts := map[string]int{}
	var loadedNames []string
	for _, c := range cases {
		dir := filepath.Join(onnxNodeTests, c.Name())
		g, err := LoadWith(filepath.Join(dir, "model.onnx"), Options{AllowAnyOpset: true, AllowNonFinite: true})
		switch {
		case errors.Is(err, compiler.ErrUnsupportedOp):
			counts["unsupported op"]++
			continue
		case errors.Is(err, ErrUnsupportedDType):
			counts["unsupported dtype"]++
			continue
		case errors.Is(err, ErrUnsupportedFeature):
			counts["unsupported feature"]++
			continue
		case err != nil:
			t.Errorf("%s: %v", c.Name(), err)
			continue
		}
		counts["loaded"]++
		loadedNames = append(loadedNames, c.Name())
		sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
		if oldBFloat16Data(sets) {
			// ONNX's bfloat16 cases store their test data as uint16 bits
			// (numpy has no bfloat16), which sqc does not read.
			counts["bfloat16 test data as uint16"]++
			continue
		}
		for _, set := range sets {
			checkTensors(t, set, "input", g.Inputs)
			checkTensors(t, set, "output", g.Outputs)
			counts["data sets"]++
		}
	}
	sort.Strings(loadedNames)
	t.Logf("%d node test cases: %v", len(cases), counts)
	t.Logf("loaded: %v", loadedNames)
	if counts["loaded"] == 0 {
		t.Error("no node test model loaded")
	}
}

// oldBFloat16Data reports whether a case's test data holds a tensor of
// uint16, as ONNX stores bfloat16 test data.
func oldBFloat16Data(sets []string) bool {
	for _, set := range sets {
		files, _ := filepath.Glob(filepath.Join(set, "*.pb"))
		for _, f := range files {
			if _, err := LoadTensor(f); errors.Is(err, ErrUnsupportedDType) && strings.Contains(err.Error(), "uint16") {
				return true
			}
		}
	}
	return false
}

// checkTensors loads set/<kind>_N.pb for each declared value and checks
// dtype and rank against the graph's declaration.
func checkTensors(t *testing.T, set, kind string, values []*compiler.Value) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(set, kind+"_*.pb"))
	if len(files) != len(values) {
		t.Errorf("%s: %d %s files for %d graph %ss", set, len(files), kind, len(values), kind)
		return
	}
	for i := range values {
		f := filepath.Join(set, fmt.Sprintf("%s_%d.pb", kind, i))
		tensor, err := LoadTensor(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		v := values[i]
		if tensor.DType != v.DType || (v.Shape != nil && len(tensor.Shape) != len(v.Shape)) {
			t.Errorf("%s: %s%v, graph declares %s %s%v", f, tensor.DType, tensor.Shape, v.Name, v.DType, v.Shape)
			continue
		}
		for axis, d := range v.Shape {
			if d.Known() && d.Size != tensor.Shape[axis] {
				t.Errorf("%s: shape %v, graph declares %s %v", f, tensor.Shape, v.Name, v.Shape)
				break
			}
		}
	}
}
