package roofline

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sqc-dev/sqc/compiler/exec"
)

// PeakFor returns the name of the compute ceiling that bounds ops of the
// given kind when the GEMMs run on the named qgemm kernel family ("amx",
// "vnni", ...): the INT8 peak of that family for GEMMs and for steps whose
// multiply-adds run on the GEMM kernels (int8: INT8 attention), FP32 for
// the rest.
func PeakFor(kind string, int8 bool, gemmISA string) string {
	if kind != exec.KindGEMM && !int8 {
		return peakNames["fp32"]
	}
	if n, ok := peakNames[gemmISA]; ok {
		return n
	}
	return peakNames["vnni"]
}

// Roof is the attainable rate of an op of intensity oi under a compute
// peak (GOP/s) and a bandwidth (GB/s): min(peak, bw * oi), and which of
// the two binds.
func Roof(oi, peak, bw float64) (gops float64, bound string) {
	if mem := bw * oi; mem < peak {
		return mem, "memory"
	}
	return peak, "compute"
}

// ceiling returns the named ceiling's value (0 if absent).
func ceiling(cs []Ceiling, name string) float64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// Row is one line of the roofline table.
type Row struct {
	Point
	Peak       string  `json:"peak"`         // the compute ceiling that applies
	RoofGOPS   float64 `json:"roof_gops"`    // min(peak, DRAM bandwidth x intensity)
	Bound      string  `json:"bound"`        // "memory" or "compute" (under the DRAM roof)
	RoofL2GOPS float64 `json:"roof_l2_gops"` // min(peak, L2 bandwidth x intensity)
	OfRoof     float64 `json:"of_roof"`      // GOPS / RoofGOPS
	OfRoofCPU  float64 `json:"of_roof_cpu"`  // CPUGOPS / RoofGOPS
}

// Rows places every point under its roofs.
func Rows(points []Point, cs []Ceiling, gemmISA string) []Row {
	dram, l2 := ceiling(cs, "DRAM"), ceiling(cs, "L2")
	rows := make([]Row, len(points))
	for i, p := range points {
		r := Row{Point: p, Peak: PeakFor(p.Kind, p.INT8, gemmISA)}
		peak := ceiling(cs, r.Peak)
		if peak > 0 && p.Intensity > 0 {
			r.RoofGOPS, r.Bound = Roof(p.Intensity, peak, dram)
			r.RoofL2GOPS, _ = Roof(p.Intensity, peak, l2)
			if r.RoofGOPS > 0 {
				r.OfRoof = p.GOPS / r.RoofGOPS
				r.OfRoofCPU = p.CPUGOPS / r.RoofGOPS
			}
		}
		rows[i] = r
	}
	return rows
}

// WriteTable prints the ceilings and rows for people.
func WriteTable(w io.Writer, cs []Ceiling, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ceiling\tvalue\tthreads\thow")
	for _, c := range cs {
		unit := "GOP/s"
		if c.Kind == Bandwidth {
			unit = "GB/s"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%d\t%s\n", c.Name, num(c.Value), unit, c.Threads, c.How)
	}
	fmt.Fprintln(tw)
	// GOP/s and % of roof are per wall second; the "cpu" columns per CPU
	// second of the threads (Point.CPUGOPS), which other processes' load
	// does not lower, so they compare with the ceilings (also per CPU
	// second) even on a busy machine.
	// "in pass" is a call's time within whole passes, "x alone" its ratio
	// to the replayed time (Point.InPassSeconds), where measured.
	fmt.Fprintln(tw, "#\top\tcount\ttime\tshare\tops/B\tGOP/s\tGOP/s (cpu)\troof (DRAM)\tbound\t% of roof\t% (cpu)\troof (L2)\tin pass\tx alone")
	for i, r := range rows {
		oi, gops, cpuGops, roof, of, ofCPU, roofL2 := "-", "-", "-", "-", "-", "-", "-"
		if r.Intensity > 0 {
			oi = fmt.Sprintf("%.3g", r.Intensity)
			gops = num(r.GOPS)
			if r.CPUGOPS > 0 {
				cpuGops = num(r.CPUGOPS)
			}
		}
		if r.RoofGOPS > 0 {
			roof = fmt.Sprintf("%s (%s)", num(r.RoofGOPS), strings.TrimSuffix(r.Peak, " INT8"))
			of = fmt.Sprintf("%.0f%%", 100*r.OfRoof)
			if r.OfRoofCPU > 0 {
				ofCPU = fmt.Sprintf("%.0f%%", 100*r.OfRoofCPU)
			}
			roofL2 = num(r.RoofL2GOPS)
		}
		inPass, alone := "-", "-"
		if r.InPassSeconds > 0 {
			inPass = dur(r.InPassSeconds)
			if r.Seconds > 0 {
				alone = fmt.Sprintf("%.2f", r.InPassSeconds/r.Seconds)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Label, r.Count,
			dur(r.Seconds), 100*r.Share, oi, gops, cpuGops, roof, r.Bound, of, ofCPU, roofL2, inPass, alone)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Where each GEMM's time goes, where SplitGEMMs measured it.
	header := false
	for i, r := range rows {
		if r.Split == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nGEMM time split (the workers' time per call alone; the rest of a call is waiting for the last block):")
			header = true
		}
		fmt.Fprintf(w, "%-3d %-52s %s\n", i+1, r.Label, r.Split)
	}
	return nil
}

func dur(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f µs", s*1e6)
}
