package interp_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/interp"
	"github.com/sqc-dev/sqc/compiler/onnx"
)

// onnxNodeTests is where Debian's libonnx-testdata package installs ONNX's
// backend node tests (apt-get install libonnx-testdata).
const onnxNodeTests = "/usr/share/libonnx-testdata/data/node"

// conformancePrefixes are the test-case directory prefixes (test_<op in
// snake case>) of every ONNX op the interpreter implements. A prefix also
// catches cases of other ops that share it (test_gather_elements_*,
// test_constant_pad, test_reduce_sum_square_*); the loader refuses those
// as outside sqc's op set and they are reported as skipped for that reason.
var conformancePrefixes = []string{
	"gather", "matmul", "gemm", "add", "sub", "mul", "div", "pow", "sqrt",
	"erf", "tanh", "relu", "sigmoid", "neg", "not", "reduce_mean",
	"reduce_sum", "layer_normalization", "softmax", "transpose", "reshape",
	"unsqueeze", "squeeze", "cast", "concat", "slice", "shape", "constant",
	"constantofshape", "where", "equal", "less", "greater", "expand",
	"range", "identity", "and", "or", "max", "isnan", "min", "abs", "log",
	"dynamicquantizelinear", "matmulinteger", "dequantizelinear", "quantizelinear", "sin", "cos", "split", "clip", "reduce_l2",
}

// roundedToHalf are the cases whose expected output is a float32 or
// float64 value rounded to float16 by a Cast. sqc reads float16 as float32
// and a Cast to float16 as one to float32 (compiler/onnx/float16.go), so
// its output is the unrounded value: compared to within float16's
// rounding, a relative 2^-11.
var roundedToHalf = map[string]bool{
	"test_cast_FLOAT_to_FLOAT16": true, "test_cast_DOUBLE_to_FLOAT16": true,
	"test_castlike_FLOAT_to_FLOAT16_expanded": true, "test_castlike_DOUBLE_to_FLOAT16_expanded": true,
}

// TestONNXConformance runs ONNX's backend node test cases for every op in
// scope through the ONNX frontend and the interpreter and compares with the
// expected outputs: floats to rtol 1e-4 + atol 1e-5 (roundedToHalf: to
// float16's rounding), everything else exactly. Cases outside sqc's scope
// (dtypes such as uint16 or string, ops that only share a name prefix,
// ONNX features sqc does not take) are skipped with the reason logged; any
// other failure fails the test.
func TestONNXConformance(t *testing.T) {
	entries, err := os.ReadDir(onnxNodeTests)
	if err != nil {
		t.Skipf("skipping: ONNX node tests not found at %s (apt-get install libonnx-testdata): %v", onnxNodeTests, err)
	}
	var cases []string
	for _, e := range entries {
		for _, p := range conformancePrefixes {
			if e.IsDir() && strings.HasPrefix(e.Name(), "test_"+p) {
				cases = append(cases, e.Name())
				break
			}
		}
	}
	ran := 0
	skipped := map[string][]string{} // reason -> cases
	for _, name := range cases {
		reason, err := runConformanceCase(filepath.Join(onnxNodeTests, name))
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case reason != "":
			skipped[reason] = append(skipped[reason], name)
		default:
			t.Logf("passed %s", name)
		}
		if reason == "" {
			ran++
		}
	}
	reasons := make([]string, 0, len(skipped))
	total := 0
	for r, cs := range skipped {
		reasons = append(reasons, r)
		total += len(cs)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Logf("skipped %d (%s): %s", len(skipped[r]), r, strings.Join(skipped[r], " "))
	}
	t.Logf("%d cases matched the op prefixes: %d ran (failures are reported above), %d skipped as out of scope", len(cases), ran, total)
	if ran == 0 {
		t.Fatal("no conformance case ran")
	}
}

// runConformanceCase runs every test_data_set_* of one case. It returns a
// non-empty reason when the case is out of scope, or an error when it
// fails.
func runConformanceCase(dir string) (skipReason string, err error) {
	g, err := onnx.LoadWith(filepath.Join(dir, "model.onnx"), onnx.Options{AllowAnyOpset: true, AllowNonFinite: true})
	if err != nil {
		if r := outOfScope(err); r != "" {
			return r, nil
		}
		return "", fmt.Errorf("load: %w", err)
	}
	it, err := interp.New(g)
	if err != nil {
		return "", fmt.Errorf("interp.New: %w", err)
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return "", errors.New("no test_data_set_* directories")
	}
	for _, set := range sets {
		inputs := map[string]*compiler.Tensor{}
		for i, v := range g.Inputs {
			tn, err := onnx.LoadTensor(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			if err != nil {
				if r := outOfScope(err); r != "" {
					return r, nil
				}
				return "", fmt.Errorf("%s: %w", filepath.Base(set), err)
			}
			inputs[v.Name] = tn
		}
		got, err := it.Run(inputs, &interp.Options{Threads: 2})
		if err != nil {
			if errors.Is(err, compiler.ErrUnsupportedOp) {
				return "feature outside sqc's scope: " + err.Error(), nil
			}
			return "", fmt.Errorf("%s: %w", filepath.Base(set), err)
		}
		for i, v := range g.Outputs {
			want, err := onnx.LoadTensor(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
			if err != nil {
				if r := outOfScope(err); r != "" {
					return r, nil
				}
				return "", fmt.Errorf("%s: %w", filepath.Base(set), err)
			}
			rtol, atol := 1e-4, 1e-5
			if roundedToHalf[filepath.Base(dir)] {
				rtol, atol = 0x1p-11, 0x1p-25 // float16's unit roundoff; half its smallest subnormal
			}
			if err := sameTensor(got[v.Name], want, rtol, atol); err != nil {
				return "", fmt.Errorf("%s: output %q: %w", filepath.Base(set), v.Name, err)
			}
		}
	}
	return "", nil
}

// outOfScope names the scope limit a load error hits, or "" when the
// error is a real failure.
func outOfScope(err error) string {
	var ops *onnx.UnsupportedOpsError
	switch {
	case errors.As(err, &ops):
		var names []string
		for _, n := range ops.Nodes {
			if !slices.Contains(names, n.Op) {
				names = append(names, n.Op)
			}
		}
		sort.Strings(names)
		return "op outside sqc's op set: " + strings.Join(names, ", ")
	case errors.Is(err, onnx.ErrUnsupportedDType):
		return "dtype outside sqc's scope"
	case errors.Is(err, onnx.ErrUnsupportedFeature):
		return "ONNX feature outside sqc's scope"
	}
	return ""
}

// sameTensor compares dtype, shape and values: |got-want| <= atol +
// rtol*|want| for floats (NaN matching NaN, infinities exactly), exact
// equality otherwise.
func sameTensor(got, want *compiler.Tensor, rtol, atol float64) error {
	if got == nil {
		return errors.New("missing")
	}
	if got.DType != want.DType {
		return fmt.Errorf("dtype %s, want %s", got.DType, want.DType)
	}
	if !slices.Equal(got.Shape, want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	switch want.DType {
	case compiler.Float32, compiler.Float64:
		g, w := floatsOf(got), floatsOf(want)
		for i := range w {
			a, b := g[i], w[i]
			switch {
			case math.IsNaN(b):
				if !math.IsNaN(a) {
					return fmt.Errorf("element %d: %v, want NaN", i, a)
				}
			case math.IsInf(b, 0):
				if a != b {
					return fmt.Errorf("element %d: %v, want %v", i, a, b)
				}
			case !(math.Abs(a-b) <= atol+rtol*math.Abs(b)):
				return fmt.Errorf("element %d: %v, want %v (diff %.3g)", i, a, b, math.Abs(a-b))
			}
		}
		return nil
	}
	eq := slices.Equal(got.I64, want.I64) && slices.Equal(got.I32, want.I32) &&
		slices.Equal(got.I8, want.I8) && slices.Equal(got.U8, want.U8) && slices.Equal(got.Bool, want.Bool)
	if !eq {
		return fmt.Errorf("values %v, want %v", dataOf(got), dataOf(want))
	}
	return nil
}

func floatsOf(t *compiler.Tensor) []float64 {
	if t.DType == compiler.Float64 {
		return t.F64
	}
	out := make([]float64, len(t.F32))
	for i, v := range t.F32 {
		out[i] = float64(v)
	}
	return out
}

func dataOf(t *compiler.Tensor) any {
	switch t.DType {
	case compiler.Int64:
		return t.I64
	case compiler.Int32:
		return t.I32
	case compiler.Int8:
		return t.I8
	case compiler.Uint8:
		return t.U8
	case compiler.Bool:
		return t.Bool
	}
	return nil
}
