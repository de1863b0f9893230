package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "--config"},
		{[]string{"bench", "--config", "bert-tiny", "--model", "x.onnx"}, "not both"},
		{[]string{"bench", "--config", "bert-tiny", "--batch", "0"}, "at least 1"},
		{[]string{"bench", "--config", "bert-tiny", "--threads", "-1"}, "--threads"},
		{[]string{"bench", "--config", "bert-tiny", "--isa", "sse9"}, "sse9"},
		{[]string{"bench", "--config", "bert-tiny", "--fp32", "--isa", "vnni"}, "--fp32"},
		{[]string{"bench", "--config", "bert-tiny", "--runs", "-3"}, "runs"},
		{[]string{"bench", "--config", "bert-tiny", "--act", "sometimes"}, "--act"},
		{[]string{"bench", "--config", "nope"}, "no model shape \"nope\""},
		{[]string{"bench", "--config", "bert-tiny", "--seq", "1000"}, "512 positions"},
		{[]string{"bench", "--config", "bert-tiny", "--serve", "--batch", "4"}, "--batch does not apply with --serve"},
		{[]string{"bench", "--config", "bert-tiny", "extra"}, "no arguments"},
		{[]string{"bench", "--bogus"}, "bogus"},
		{[]string{"roofline"}, "--config"},
		{[]string{"roofline", "--config", "bert-tiny", "--per-op", "0s"}, "--per-op"},
		{[]string{"roofline", "--config", "bert-tiny", "--fp32"}, "fp32"},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("sqc %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
		if out != "" {
			t.Errorf("sqc %s printed on stdout: %q", strings.Join(c.args, " "), out)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	code, out, errs := runCLI(t, "bench", "--config", "bert-tiny", "--batch", "2", "--seq", "16", "--threads", "1", "--runs", "3", "--warmup", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Model     string
		Precision string
		Engine    string
		Batch     int
		Seq       int
		Threads   int
		Runs      int
		Warmup    int
		LatencyMs struct {
			N                int
			Median, Min, Max float64
		} `json:"latency_ms"`
		SeqPerS struct{ Median float64 } `json:"seq_per_s"`
		Allocs  *float64                 `json:"allocs_per_run"`
		TimesMs []float64                `json:"times_ms"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("--json printed %q (%v), want one object on one line", out, err)
	}
	if r.Model != "bert-tiny" || r.Precision != "int8" || r.Batch != 2 || r.Seq != 16 || r.Threads != 1 || r.Runs != 3 ||
		r.Warmup != 1 || len(r.TimesMs) != 3 || r.LatencyMs.N != 3 || r.Allocs == nil || !strings.Contains(r.Engine, "compiler/exec") {
		t.Errorf("result %+v", r)
	}
	if r.LatencyMs.Min > r.LatencyMs.Median || r.LatencyMs.Median > r.LatencyMs.Max || r.SeqPerS.Median <= 0 {
		t.Errorf("inconsistent statistics %+v", r)
	}
}

func TestBenchTextFP32(t *testing.T) {
	code, out, errs := runCLI(t, "bench", "--config", "bert-tiny", "--batch", "1", "--seq", "8", "--threads", "1", "--runs", "2", "--fp32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"bert-tiny (random weights, seed 1), fp32", "reference interpreter", "latency", "throughput", "allocs", "peak RSS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchServe speaks the peer harness's protocol to `sqc bench --serve`.
func TestBenchServe(t *testing.T) {
	var out, errb bytes.Buffer
	app := newApp(&out, &errb)
	app.Reader = strings.NewReader(`{"op": "run", "mode": "int8", "batch": 1, "seq": 8, "n": 2}` + "\n" + `{"op": "quit"}` + "\n")
	if err := app.Run([]string{"sqc", "bench", "--serve", "--config", "bert-tiny", "--threads", "1"}); err != nil {
		t.Fatalf("%v (stderr %s)", err, errb.String())
	}
	sc := bufio.NewScanner(&out)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON: anything but the protocol must go to stderr", sc.Text())
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 || lines[0]["ready"] != true || lines[2]["bye"] != true {
		t.Fatalf("protocol lines %v", lines)
	}
	if ms, _ := lines[1]["ms"].([]any); len(ms) != 2 {
		t.Errorf("run reply %v", lines[1])
	}
}

func TestRooflineSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "roof.svg")
	code, out, errs := runCLI(t, "roofline", "--config", "bert-tiny", "--batch", "1", "--seq", "16", "--threads", "1",
		"--per-op", "1ms", "--ceiling-budget", "1ms", "--budget", "1ms", "--pass-budget", "1ms", "--svg", svg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Ceilings []struct {
			Name  string
			Value float64
		}
		Ops []struct {
			Label, Kind string
			Count       int
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if len(r.Ceilings) < 2 || len(r.Ops) == 0 {
		t.Errorf("report %+v", r)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG not well-formed: %v", err)
			}
			break
		}
	}
	if !bytes.Contains(data, []byte("GEMM 128x512")) {
		t.Error("SVG lacks the FFN GEMM of bert-tiny")
	}
}

// TestRooflineText: the text report splits the time between steps (from
// passes timed step by step) and gives each op its time within a pass;
// --pass-budget 0 leaves both out.
func TestRooflineText(t *testing.T) {
	args := []string{"roofline", "--config", "bert-tiny", "--batch", "1", "--seq", "16", "--threads", "1",
		"--per-op", "1ms", "--ceiling-budget", "1ms", "--budget", "1ms"}
	code, out, errs := runCLI(t, append(args, "--pass-budget", "1ms")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"between steps, from ", " passes timed step by step: within a pass the steps take ", "outside the steps (copying the outputs; whole passes minus those timed step by step, pass by pass)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`in pass +x alone\n`).MatchString(out) {
		t.Errorf("table lacks the in pass and x alone columns:\n%s", out)
	}
	code, out, errs = runCLI(t, append(args, "--pass-budget", "0")...)
	if code != 0 {
		t.Fatalf("--pass-budget 0: exit %d: %s", code, errs)
	}
	if strings.Contains(out, "passes timed step by step") {
		t.Errorf("--pass-budget 0 still timed passes step by step:\n%s", out)
	}
	if code, _, errs := runCLI(t, append(args, "--pass-budget", "-1s")...); code == 0 || !strings.Contains(errs, "--pass-budget") {
		t.Errorf("--pass-budget -1s: exit %d, %s", code, errs)
	}
}

func TestBenchRestoresGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if code, _, errs := runCLI(t, "bench", "--config", "bert-tiny", "--batch", "1", "--seq", "8", "--threads", "1", "--runs", "1", "--warmup", "0", "--json"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after `bench --threads 1`, was %d", after, before)
	}
}
