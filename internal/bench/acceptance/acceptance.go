// Package acceptance checks a peer-harness results folder against the
// acceptance bars of issue 12 (speed on AMX): it reads what bench/peers.sh
// leaves in $OUT (results.jsonl, realbatch-<config>/summary.json, and, when
// the run made them, qgemm-bench.txt from `go test ./runtime/qgemm -bench
// QGEMM$` and roofline-<config>-<B>x<S>.json from `sqc roofline --json`)
// and gives each bar the figure measured, or says which file would have
// held it. The ratios are the medians of paired ratios the issue asks for
// (internal/bench/pairs).
package acceptance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sqc-dev/sqc/internal/bench/pairs"
)

// Bar is one acceptance line: the figure Got (NaN when the run has none)
// against At, the least acceptable value.
type Bar struct {
	What   string  // the bar, e.g. "8x128: sqc INT8 vs ONNX Runtime INT8"
	At     float64 // the least acceptable value of Got
	Unit   string  // "x" for ratios, "%" for shares
	Got    float64 // NaN: not measured by this run
	Source string  // the file (and entry) Got comes from, or would have
}

// Status is "pass", "FAIL" or "not measured".
func (b Bar) Status() string {
	switch {
	case math.IsNaN(b.Got):
		return "not measured"
	case b.Got >= b.At:
		return "pass"
	}
	return "FAIL"
}

// Files names what Evaluate reads inside a results folder.
const (
	ResultsFile    = "results.jsonl"   // the harness's fixed-shape records
	QGEMMBenchFile = "qgemm-bench.txt" // go test ./runtime/qgemm -bench 'QGEMM$' output
)

// RealBatchFile is the real-length comparison's summary of config.
func RealBatchFile(config string) string {
	return filepath.Join("realbatch-"+config, "summary.json")
}

// RooflineFile is `sqc roofline --json` of config at batch x seq.
func RooflineFile(config string, batch, seq int) string {
	return fmt.Sprintf("roofline-%s-%dx%d.json", config, batch, seq)
}

// Evaluate reads the results folder dir of a run on config at threads
// threads and returns every bar, in the order. A missing file
// leaves its bars not measured; a file that is there but unreadable is an
// error naming it.
func Evaluate(dir, config string, threads int) ([]Bar, error) {
	nan := math.NaN()
	ratio := func(what string, at float64) Bar {
		return Bar{What: what, At: at, Unit: "x", Got: nan, Source: ResultsFile}
	}
	bars := []Bar{
		ratio("8x128: sqc INT8 vs ONNX Runtime INT8", 2),
		ratio("8x128: sqc INT8 vs PyTorch FP32", 10),
		ratio("1x128: sqc INT8 vs ONNX Runtime INT8 (latency <= 1/2)", 2),
		ratio("32x128: sqc INT8 vs ONNX Runtime INT8", 2),
		{What: "real-length SST-2 batches of 32: generated Run vs ONNX Runtime INT8 padded", At: 2.5, Unit: "x", Got: nan, Source: RealBatchFile(config) + " (sqc-gen/int8)"},
		{What: "AMX GEMM, 1 thread, each shape's BERT epilogue included: worst BERT shape, % of BenchmarkPeak/amx", At: 70, Unit: "%", Got: nan, Source: QGEMMBenchFile},
		{What: "whole 8x128 forward pass, % of the 2-core AMX peak", At: 25, Unit: "%", Got: nan, Source: RooflineFile(config, 8, 128)},
		ratio("AMX off: sqc INT8 (VNNI) vs ONNX Runtime INT8 without AMX, worst of 1x128, 8x128, 32x128", 1.3),
		{What: "logits cosine vs FP32 (sqc INT8, 16 sequences of up to 128 tokens)", At: 0.9995, Unit: "", Got: nan, Source: ResultsFile + " (check: cos_logits_wide)"},
	}

	// The roofline says whether the CPU has AMX; without it, "AMX off" is
	// every run, and ONNX Runtime INT8 is the reference.
	amx := unknown
	if err := readIfThere(filepath.Join(dir, RooflineFile(config, 8, 128)), func(r io.Reader) error {
		var err error
		amx, err = fromRoofline(r, &bars[6])
		return err
	}); err != nil {
		return nil, err
	}
	if err := readIfThere(filepath.Join(dir, ResultsFile), func(r io.Reader) error {
		return fromResults(r, config, threads, amx, bars)
	}); err != nil {
		return nil, err
	}
	if err := readIfThere(filepath.Join(dir, RealBatchFile(config)), func(r io.Reader) error {
		return fromRealBatch(r, &bars[4])
	}); err != nil {
		return nil, err
	}
	if err := readIfThere(filepath.Join(dir, QGEMMBenchFile), func(r io.Reader) error {
		return fromQGEMMBench(r, &bars[5])
	}); err != nil {
		return nil, err
	}
	return bars, nil
}

// tristate is whether the run's CPU has AMX, as far as its files say.
type tristate int

const (
	unknown tristate = iota
	yes
	no
)

// readIfThere calls read on the file at path, if it exists; its error,
// and a failure to open an existing file, name the file.
func readIfThere(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// fromResults fills the ratio bars (0-3, 7) and the cosine bar (8).
func fromResults(r io.Reader, config string, threads int, amx tristate, bars []Bar) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ratios, err := pairs.Read(bytes.NewReader(data),
		[]string{"sqc/int8", "sqc/int8-vnni"}, []string{"ort/int8", "ort/int8-noamx", "torch/fp32"})
	if err != nil {
		return err
	}
	find := func(batch int, target, ref string) float64 {
		for _, x := range ratios {
			if x.Config == config && x.Threads == threads && x.Batch == batch && x.Seq == 128 && x.Target == target && x.Reference == ref {
				return x.Median
			}
		}
		return math.NaN()
	}
	bars[0].Got = find(8, "sqc/int8", "ort/int8")
	bars[1].Got = find(8, "sqc/int8", "torch/fp32")
	bars[2].Got = find(1, "sqc/int8", "ort/int8")
	bars[3].Got = find(32, "sqc/int8", "ort/int8")
	target, ref := "sqc/int8-vnni", "ort/int8-noamx"
	if amx == no {
		target, ref = "sqc/int8", "ort/int8"
		bars[7].Source += " (no AMX on this CPU: sqc/int8 vs ort/int8)"
	}
	worst := math.NaN()
	for _, b := range []int{1, 8, 32} {
		if v := find(b, target, ref); !math.IsNaN(v) && (math.IsNaN(worst) || v < worst) {
			worst = v
		}
	}
	bars[7].Got = worst

	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Kind   string                     `json:"kind"`
			System string                     `json:"system"`
			Config string                     `json:"config"`
			Acc    map[string]json.RawMessage `json:"acc"` // its shape differs by system
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if rec.Kind != "check" || rec.System != "sqc" || rec.Config != config || rec.Acc["int8"] == nil {
			continue
		}
		var int8 struct {
			CosLogits     *float64 `json:"cos_logits"`
			CosLogitsWide *float64 `json:"cos_logits_wide"`
		}
		if err := json.Unmarshal(rec.Acc["int8"], &int8); err != nil {
			return fmt.Errorf("line %d: acc.int8: %w", line, err)
		}
		// The wide check's 32 logits; a run from before it has only the
		// harness's 2 x 128 check, 4 logits, which the bar then names.
		switch {
		case int8.CosLogitsWide != nil:
			bars[8].Got = *int8.CosLogitsWide
		case int8.CosLogits != nil:
			bars[8].Got = *int8.CosLogits
			bars[8].What = "logits cosine vs FP32 (sqc INT8, the harness's 2 x 128 check input: 4 logits)"
			bars[8].Source = ResultsFile + " (check: cos_logits)"
		}
	}
	return sc.Err()
}

// fromRealBatch fills the real-length bar from bench/realbatch's summary.
func fromRealBatch(r io.Reader, bar *Bar) error {
	var s struct {
		Rows []struct {
			Target string  `json:"target"`
			Ratio  float64 `json:"ratio"`
		}
		Reference string
	}
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return err
	}
	if s.Reference != "ort/int8" {
		return fmt.Errorf("ratios are against %q, not ort/int8", s.Reference)
	}
	for _, row := range s.Rows {
		if row.Target == "sqc-gen/int8" {
			bar.Got = row.Ratio
		}
	}
	return nil
}

// qgemmLine matches a BenchmarkQGEMM result of the AMX variant on one
// thread (go test appends -GOMAXPROCS to the name when it is above 1).
var qgemmLine = regexp.MustCompile(`^BenchmarkQGEMM/amx/M=(\d+),N=(\d+),K=(\d+)/T=1(?:-\d+)?\s.*?\s([0-9.]+) %peak`)

// fromQGEMMBench fills the GEMM bar with the worst %peak of the AMX
// variant over the shapes (M 128-1024; N x K 768x768, 2304x768,
// 3072x768, 768x3072), all of which must be there.
func fromQGEMMBench(r io.Reader, bar *Bar) error {
	sc := bufio.NewScanner(r)
	worst, seen := math.NaN(), map[string]bool{}
	for sc.Scan() {
		m := qgemmLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pct, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return fmt.Errorf("%q: %w", sc.Text(), err)
		}
		seen[m[2]+"x"+m[3]] = true
		if math.IsNaN(worst) || pct < worst {
			worst = pct
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, nk := range []string{"768x768", "2304x768", "3072x768", "768x3072"} {
		if !seen[nk] {
			bar.Source += " (no amx T=1 line for N x K = " + nk + ")"
			return nil
		}
	}
	bar.Got = worst
	return nil
}

// fromRoofline fills the whole-pass bar from `sqc roofline --json`, when
// its ceiling is the AMX peak, and says whether the CPU has AMX.
func fromRoofline(r io.Reader, bar *Bar) (tristate, error) {
	var rep struct {
		Threads int `json:"threads"`
		Whole   struct {
			Ceiling string  `json:"ceiling"`
			Share   float64 `json:"of_peak"`
		} `json:"whole_model"`
	}
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return unknown, err
	}
	if rep.Whole.Ceiling == "" {
		return unknown, errors.New("no whole_model.ceiling")
	}
	if !strings.HasPrefix(rep.Whole.Ceiling, "AMX") {
		bar.Source += fmt.Sprintf(" (its ceiling is %q: no AMX)", rep.Whole.Ceiling)
		return no, nil
	}
	if rep.Threads != 2 {
		bar.Source += fmt.Sprintf(" (%d threads, not 2)", rep.Threads)
		return yes, nil
	}
	bar.Got = 100 * rep.Whole.Share
	return yes, nil
}

// Write prints the bars as a table.
func Write(w io.Writer, bars []Bar) error {
	for _, b := range bars {
		got := "-"
		if !math.IsNaN(b.Got) {
			got = strconv.FormatFloat(b.Got, 'f', precision(b), 64) + b.Unit
		}
		at := strconv.FormatFloat(b.At, 'f', precision(b), 64) + b.Unit
		if _, err := fmt.Fprintf(w, "%-13s %-10s >= %-8s %s   [%s]\n", b.Status(), got, at, b.What, b.Source); err != nil {
			return err
		}
	}
	return nil
}

// precision is the decimals a bar's figures print with.
func precision(b Bar) int {
	switch b.Unit {
	case "x":
		return 2
	case "%":
		return 1
	}
	return 5
}
