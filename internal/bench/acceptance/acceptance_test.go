package acceptance

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content under a fresh folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const results = `{"kind":"bench","system":"ort","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[100,120]}
{"kind":"bench","system":"torch","mode":"fp32","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[500,600]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[40,60]}
{"kind":"bench","system":"ort","mode":"int8","config":"bert-base","threads":2,"batch":1,"seq":128,"round":1,"times_ms":[20]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":2,"batch":1,"seq":128,"round":1,"times_ms":[12.5]}
{"kind":"bench","system":"ort","mode":"int8-noamx","config":"bert-base","threads":2,"batch":1,"seq":128,"round":1,"times_ms":[30]}
{"kind":"bench","system":"sqc","mode":"int8-vnni","config":"bert-base","threads":2,"batch":1,"seq":128,"round":1,"times_ms":[20]}
{"kind":"bench","system":"ort","mode":"int8-noamx","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[140]}
{"kind":"bench","system":"sqc","mode":"int8-vnni","config":"bert-base","threads":2,"batch":8,"seq":128,"round":1,"times_ms":[100]}
{"kind":"bench","system":"sqc","mode":"int8","config":"bert-base","threads":1,"batch":8,"seq":128,"round":1,"times_ms":[1]}
{"kind": "check", "system": "sqc", "config": "bert-base", "acc": {"int8": {"cos_logits": 0.99963}, "int8-vnni": {"cos_logits": 0.5}}}
`

const qgemmBench = `goos: linux
BenchmarkQGEMM/amx/M=128,N=768,K=768/T=1         	    1000	    10 ns/op	        72.0 %peak	  5000 GOP/cpu-s	 5000 GOP/s
BenchmarkQGEMM/amx/M=128,N=2304,K=768/T=1        	    1000	    10 ns/op	        80.5 %peak	  5000 GOP/cpu-s	 5000 GOP/s
BenchmarkQGEMM/amx/M=1024,N=3072,K=768/T=1       	    1000	    10 ns/op	        75.0 %peak	  5000 GOP/cpu-s	 5000 GOP/s
BenchmarkQGEMM/amx/M=1024,N=768,K=3072/T=1       	    1000	    10 ns/op	        71.0 %peak	  5000 GOP/cpu-s	 5000 GOP/s
BenchmarkQGEMM/amx-separate/M=128,N=768,K=768/T=1	    1000	    10 ns/op	        31.0 %peak	  2000 GOP/cpu-s	 2000 GOP/s
BenchmarkQGEMM/amx/M=128,N=768,K=768/T=2-2       	    1000	    10 ns/op	        10.0 %peak	  2000 GOP/cpu-s	 2000 GOP/s
`

func TestEvaluateReadsEveryFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		ResultsFile:                       results,
		QGEMMBenchFile:                    qgemmBench,
		RealBatchFile("bert-base"):        `{"Reference": "ort/int8", "Rows": [{"target": "sqc/int8", "ratio": 2.6}, {"target": "sqc-gen/int8", "ratio": 2.4}]}`,
		RooflineFile("bert-base", 8, 128): `{"threads": 2, "whole_model": {"ceiling": "AMX INT8", "of_peak": 0.31}}`,
	})
	bars, err := Evaluate(dir, "bert-base", 2)
	if err != nil {
		t.Fatal(err)
	}
	// 8x128: ORT/sqc pairs 100/40, 120/60 -> median 2.25; torch 500/40,
	// 600/60 -> 11.25; 1x128 20/12.5 = 1.6; no 32x128; real-length 2.4;
	// worst AMX GEMM 71 (the separate kernel and T=2 lines do not count);
	// 31% of the AMX peak; AMX off: min(30/20, 140/100) = 1.4; cosine of
	// mode int8.
	want := []struct {
		got    float64
		status string
	}{
		{2.25, "pass"}, {11.25, "pass"}, {1.6, "FAIL"}, {math.NaN(), "not measured"},
		{2.4, "FAIL"}, {71, "pass"}, {31, "pass"}, {1.4, "pass"}, {0.99963, "pass"},
	}
	if len(bars) != len(want) {
		t.Fatalf("%d bars, want %d", len(bars), len(want))
	}
	for i, w := range want {
		b := bars[i]
		if !(math.IsNaN(w.got) && math.IsNaN(b.Got)) && math.Abs(b.Got-w.got) > 1e-9 {
			t.Errorf("bar %d %q: got %v, want %v", i, b.What, b.Got, w.got)
		}
		if b.Status() != w.status {
			t.Errorf("bar %d %q: status %s, want %s", i, b.What, b.Status(), w.status)
		}
	}
	var out strings.Builder
	if err := Write(&out, bars); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pass          2.25x", "FAIL          1.60x", "not measured  -", "71.0%", "0.99963"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestEvaluateWithoutAMX(t *testing.T) {
	// On a CPU without AMX the roofline's ceiling is VNNI: the AMX bars
	// stay unmeasured and "AMX off" is sqc/int8 against ort/int8.
	dir := writeFiles(t, map[string]string{
		ResultsFile:                       results,
		RooflineFile("bert-base", 8, 128): `{"threads": 2, "whole_model": {"ceiling": "VNNI INT8", "of_peak": 0.6}}`,
	})
	bars, err := Evaluate(dir, "bert-base", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(bars[6].Got) || !strings.Contains(bars[6].Source, "no AMX") {
		t.Errorf("whole-pass bar without AMX: %+v", bars[6])
	}
	if bars[7].Got != 1.6 || !strings.Contains(bars[7].Source, "sqc/int8 vs ort/int8") {
		t.Errorf("AMX-off bar without AMX: %+v, want 1.6 (1x128 sqc/int8 vs ort/int8, the worse shape)", bars[7])
	}
	if !math.IsNaN(bars[5].Got) || !math.IsNaN(bars[4].Got) {
		t.Errorf("files that are not there gave figures: %+v %+v", bars[4], bars[5])
	}
}

func TestEvaluateNamesTheBadFile(t *testing.T) {
	for name, content := range map[string]string{
		ResultsFile:                       "{not json\n",
		RealBatchFile("bert-base"):        `{"Reference": "ort/fp32"}`,
		RooflineFile("bert-base", 8, 128): `[]`,
	} {
		dir := writeFiles(t, map[string]string{name: content})
		_, err := Evaluate(dir, "bert-base", 2)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s holding %q: err = %v, want one naming the file", name, content, err)
		}
	}
	// A GEMM benchmark without every shape gives no figure, and says why.
	dir := writeFiles(t, map[string]string{QGEMMBenchFile: strings.SplitAfterN(qgemmBench, "\n", 3)[1]})
	bars, err := Evaluate(dir, "bert-base", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(bars[5].Got) || !strings.Contains(bars[5].Source, "no amx T=1 line") {
		t.Errorf("partial GEMM benchmark: %+v", bars[5])
	}
}

// TestCosineBarPrefersWideCheck: the logits cosine bar takes the wide
// check's 32 logits where the worker reported them, and otherwise says it
// rests on the harness's 4.
func TestCosineBarPrefersWideCheck(t *testing.T) {
	for _, c := range []struct {
		acc  string
		want float64
		what string
	}{
		{`{"cos_logits": 0.99946, "cos_logits_wide": 0.99972, "wide_sequences": 16}`, 0.99972, "16 sequences"},
		{`{"cos_logits": 0.99946}`, 0.99946, "4 logits"},
	} {
		dir := writeFiles(t, map[string]string{
			ResultsFile: `{"kind": "check", "system": "sqc", "config": "bert-base", "acc": {"int8": ` + c.acc + `}}` + "\n",
		})
		bars, err := Evaluate(dir, "bert-base", 2)
		if err != nil {
			t.Fatal(err)
		}
		if b := bars[8]; b.Got != c.want || !strings.Contains(b.What, c.what) {
			t.Errorf("%s: bar %q = %v, want %v naming %q", c.acc, b.What, b.Got, c.want, c.what)
		}
	}
}
