package roofline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/compiler/exec"
)

func testChart() Chart {
	return Chart{
		Title:    "roofline <test> & co",
		Subtitle: "machine",
		Ceilings: []Ceiling{
			{Name: "VNNI INT8", Kind: Compute, Value: 1000},
			{Name: "FP32", Kind: Compute, Value: 250},
			{Name: "L2", Kind: Bandwidth, Value: 120},
			{Name: "DRAM", Kind: Bandwidth, Value: 30},
		},
		Points: []Point{
			{Label: "GEMM 768x3072 +gelu ->u8", Kind: exec.KindGEMM, Count: 12, Intensity: 400, GOPS: 800, Share: 0.5},
			{Label: "Attention 12x64", Kind: exec.KindAttention, Count: 12, Intensity: 30, GOPS: 2, Share: 0.3},
			{Label: "LayerNorm 768", Kind: exec.KindLayerNorm, Count: 25, Intensity: 1, GOPS: 3, Share: 0.19},
			{Label: "Gather 768", Kind: exec.KindGather, Count: 3, Share: 0.01}, // no ops: listed, not plotted
		},
		Notes: []string{"note"},
	}
}

// parseSVG checks that s is well-formed XML and returns its elements'
// names with attributes, and all character data.
func parseSVG(t *testing.T, s string) (elems []xml.StartElement, text string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var chars strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elems = append(elems, tok.Copy())
		case xml.CharData:
			chars.Write(tok)
			chars.WriteString("\n")
		}
	}
	return elems, chars.String()
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, testChart()); err != nil {
		t.Fatal(err)
	}
	elems, text := parseSVG(t, b.String())
	if elems[0].Name.Local != "svg" {
		t.Fatalf("root element %s", elems[0].Name.Local)
	}
	markers := 0
	for _, e := range elems {
		if e.Name.Local == "circle" && attr(e, "class") == "op" {
			markers++
		}
	}
	if markers != 3 {
		t.Errorf("%d op markers, want 3 (the Gather has no ops and is not plotted)", markers)
	}
	for _, want := range []string{
		"roofline <test> & co", // escaped in the file, intact once parsed
		"VNNI INT8 peak 1000 GOP/s", "FP32 peak 250 GOP/s", "L2 120 GB/s", "DRAM 30.0 GB/s",
		"GEMM 768x3072 +gelu ->u8", "Attention 12x64", "Gather 768", "not plotted",
		"operational intensity", "GOP/s", "1k", "0.1", "note",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, Chart{Title: "nothing"}); err != nil {
		t.Fatal(err)
	}
	parseSVG(t, b.String())
}

func TestTickText(t *testing.T) {
	for e, want := range map[int]string{-2: "0.01", -1: "0.1", 0: "1", 2: "100", 3: "1k", 4: "10k", 6: "1M"} {
		if got := tickText(e); got != want {
			t.Errorf("tickText(%d) = %q, want %q", e, got, want)
		}
	}
}

func TestPlaceLabelAvoidsOverlap(t *testing.T) {
	first := placeLabel(100, 100, 5, 10, nil)
	second := placeLabel(100, 100, 5, 10, []box{first})
	if first.overlaps(second) {
		t.Errorf("second label %+v overlaps the first %+v", second, first)
	}
}

func TestRoofAndRows(t *testing.T) {
	if g, b := Roof(10, 1000, 30); g != 300 || b != "memory" {
		t.Errorf("Roof(10, 1000, 30) = %v %s", g, b)
	}
	if g, b := Roof(100, 1000, 30); g != 1000 || b != "compute" {
		t.Errorf("Roof(100, 1000, 30) = %v %s", g, b)
	}
	c := testChart()
	rows := Rows(c.Points, c.Ceilings, "vnni")
	if rows[0].Peak != "VNNI INT8" || rows[0].RoofGOPS != 1000 || rows[0].OfRoof != 0.8 {
		t.Errorf("GEMM row %+v", rows[0])
	}
	if rows[2].Peak != "FP32" || rows[2].RoofGOPS != 30 || rows[2].Bound != "memory" || rows[2].RoofL2GOPS != 120 {
		t.Errorf("LayerNorm row %+v", rows[2])
	}
	if rows[3].RoofGOPS != 0 {
		t.Errorf("Gather row has a roof: %+v", rows[3])
	}
	if PeakFor(exec.KindGEMM, true, "amx") != "AMX INT8" || PeakFor(exec.KindGEMM, true, "go") != "VNNI INT8" || PeakFor(exec.KindAttention, false, "amx") != "FP32" ||
		PeakFor(exec.KindAttention, true, "amx") != "AMX INT8" {
		t.Error("PeakFor")
	}
	var b bytes.Buffer
	if err := WriteTable(&b, c.Ceilings, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "GEMM 768x3072 +gelu ->u8") || !strings.Contains(b.String(), "80%") {
		t.Errorf("table:\n%s", b.String())
	}
}
