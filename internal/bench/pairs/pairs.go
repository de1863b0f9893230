// Package pairs turns the peer harness's results.jsonl (one "bench" record
// per system, mode, shape and round, its call times in order) into medians
// of paired ratios: in one round the harness interleaves the systems call
// by call, so call i of sqc and call i of ONNX Runtime ran side by side,
// and the ratio of the two is free of the drift between rounds that a
// ratio of medians carries. Issue 12's acceptance is stated in these terms.
package pairs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/internal/bench"
)

// record is the part of a results.jsonl line this package reads.
type record struct {
	Kind    string    `json:"kind"`
	System  string    `json:"system"`
	Mode    string    `json:"mode"`
	Config  string    `json:"config"`
	Threads int       `json:"threads"`
	Batch   int       `json:"batch"`
	Seq     int       `json:"seq"`
	Round   int       `json:"round"`
	Tag     string    `json:"tag"`
	TimesMs []float64 `json:"times_ms"`
}

// Shape is one cell of the harness's table.
type Shape struct {
	Config              string
	Threads, Batch, Seq int
}

// Ratio is the speed-up of Target over Reference on one Shape: the
// summary of reference time / target time over every paired call.
type Ratio struct {
	Shape
	Target, Reference string // "system/mode"
	bench.Summary
}

// Read parses results.jsonl from r and returns, for every shape and every
// pair (target, reference) of two systems/modes with target among targets
// and reference among references, the paired ratios, sorted by shape then target then
// reference. Lines that are not untagged bench records are skipped; a line
// that is not JSON is an error naming its number.
func Read(r io.Reader, targets, references []string) ([]Ratio, error) {
	type roundKey struct {
		Shape
		round int
	}
	rounds := map[roundKey]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(text), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if rec.Kind != "bench" || rec.Tag != "" || len(rec.TimesMs) == 0 {
			continue
		}
		k := roundKey{Shape{rec.Config, rec.Threads, rec.Batch, rec.Seq}, rec.Round}
		if rounds[k] == nil {
			rounds[k] = map[string][]float64{}
		}
		rounds[k][rec.System+"/"+rec.Mode] = rec.TimesMs
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	type pairKey struct {
		Shape
		target, ref string
	}
	samples := map[pairKey][]float64{}
	for k, times := range rounds {
		for _, t := range targets {
			for _, ref := range references {
				if t == ref {
					continue
				}
				tt, rt := times[t], times[ref]
				for i := range min(len(tt), len(rt)) {
					if tt[i] > 0 && rt[i] > 0 {
						pk := pairKey{k.Shape, t, ref}
						samples[pk] = append(samples[pk], rt[i]/tt[i])
					}
				}
			}
		}
	}
	out := make([]Ratio, 0, len(samples))
	for k, s := range samples {
		out = append(out, Ratio{Shape: k.Shape, Target: k.target, Reference: k.ref, Summary: bench.Summarize(s)})
	}
	Sort(out)
	return out, nil
}

// Sort orders ratios as Read returns them: by shape, then target, then
// reference.
func Sort(ratios []Ratio) {
	slices.SortFunc(ratios, func(a, b Ratio) int {
		if c := strings.Compare(a.Config, b.Config); c != 0 {
			return c
		}
		for _, d := range [][2]int{{a.Threads, b.Threads}, {a.Batch, b.Batch}, {a.Seq, b.Seq}} {
			if d[0] != d[1] {
				return d[0] - d[1]
			}
		}
		if c := strings.Compare(a.Target, b.Target); c != 0 {
			return c
		}
		return strings.Compare(a.Reference, b.Reference)
	})
}

// Write prints ratios as a table: one line per shape, target and
// reference, with the median and the interquartile range of the paired
// ratios and how many pairs there were.
func Write(w io.Writer, ratios []Ratio) error {
	if _, err := fmt.Fprintf(w, "%-12s %3s %7s  %-18s %-22s %7s  %-13s %4s\n",
		"config", "thr", "BxS", "target", "x reference", "median", "p25-p75", "n"); err != nil {
		return err
	}
	for _, r := range ratios {
		if _, err := fmt.Fprintf(w, "%-12s %3d %7s  %-18s %-22s %6.2fx  %5.2f-%-7.2f %4d\n",
			r.Config, r.Threads, fmt.Sprintf("%dx%d", r.Batch, r.Seq), r.Target, r.Reference,
			r.Median, r.P25, r.P75, r.N); err != nil {
			return err
		}
	}
	return nil
}
