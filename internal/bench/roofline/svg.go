package roofline

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sqc-dev/sqc/compiler/exec"
)

// Chart is what WriteSVG draws.
type Chart struct {
	Title    string // first line, e.g. "sqc roofline: bert-base INT8, batch 8 x 128, 2 threads"
	Subtitle string // second line (machine, engine)
	Ceilings []Ceiling
	Points   []Point
	Notes    []string // footnote lines (how things were measured), each under ~150 characters
}

// Figure geometry in SVG user units (pixels at 100%).
const (
	svgWidth     = 1100
	svgHeight    = 700
	plotLeft     = 90
	plotTop      = 70
	plotWidth    = 620
	plotHeight   = 520
	legendLeft   = plotLeft + plotWidth + 30
	legendLine   = 17
	markerMinR   = 4.0
	markerMaxR   = 16.0
	fontFamily   = "DejaVu Sans, Helvetica, Arial, sans-serif"
	computeColor = "#b22222"
	memoryColor  = "#1f4e9a"
)

// kindColors colours points by kind.
var kindColors = map[string]string{
	exec.KindGEMM: "#1f77b4", exec.KindAttention: "#ff7f0e", exec.KindLayerNorm: "#2ca02c", exec.KindQuantize: "#9467bd",
	exec.KindLinearF32: "#8c564b", exec.KindElemwise: "#7f7f7f", exec.KindGather: "#7f7f7f", exec.KindGeneric: "#bcbd22",
}

// axis maps a decade range onto pixels, logarithmically.
type axis struct {
	lo, hi     float64 // decades: 10^lo .. 10^hi
	pix0, pix1 float64 // pixel of 10^lo and of 10^hi
}

func (a axis) at(v float64) float64 {
	return a.pix0 + (math.Log10(v)-a.lo)/(a.hi-a.lo)*(a.pix1-a.pix0)
}

// decades returns the decade range [floor(log10(lo)), ceil(log10(hi))],
// at least one decade wide.
func decades(lo, hi float64) (float64, float64) {
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	return a, b
}

// tickText prints a power of ten: 0.01, 0.1, 1, 10, 100, 1k, 10k, 100k, 1M.
func tickText(e int) string {
	switch {
	case e < 0:
		return strings.TrimRight(fmt.Sprintf("%.*f", -e, math.Pow(10, float64(e))), "0")
	case e < 3:
		return fmt.Sprintf("%d", int(math.Pow(10, float64(e))))
	case e < 6:
		return fmt.Sprintf("%dk", int(math.Pow(10, float64(e-3))))
	}
	return fmt.Sprintf("%dM", int(math.Pow(10, float64(e-6))))
}

// plotted reports whether p can sit on log axes.
func plotted(p Point) bool { return p.Intensity > 0 && p.GOPS > 0 }

// WriteSVG draws c as a roofline figure: log-log axes (operational
// intensity in ops/byte against GOP/s) with labelled decades, each
// bandwidth ceiling as a diagonal and each compute ceiling as a
// horizontal line, both labelled with their values, and each op group as
// a numbered marker (area by share of time, colour by kind) explained in
// the legend beside the plot.
func WriteSVG(w io.Writer, c Chart) error {
	var maxPeak, maxBW, minBW float64
	minBW = math.Inf(1)
	for _, ce := range c.Ceilings {
		if ce.Value <= 0 {
			continue
		}
		switch ce.Kind {
		case Compute:
			maxPeak = math.Max(maxPeak, ce.Value)
		case Bandwidth:
			maxBW = math.Max(maxBW, ce.Value)
			minBW = math.Min(minBW, ce.Value)
		}
	}
	// Axis ranges: every point, every ridge (peak / bandwidth) and the
	// peaks themselves, with a margin.
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	widen := func(x, y float64) {
		xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
		ylo, yhi = math.Min(ylo, y), math.Max(yhi, y)
	}
	for _, p := range c.Points {
		if plotted(p) {
			widen(p.Intensity/1.5, p.GOPS/1.5)
			widen(p.Intensity*1.5, p.GOPS*1.5)
		}
	}
	for _, ce := range c.Ceilings {
		if ce.Kind == Compute && ce.Value > 0 {
			widen(xlo, ce.Value*1.5)
			if minBW < math.Inf(1) {
				widen(ce.Value/minBW*2, ce.Value)
			}
		}
	}
	if math.IsInf(xlo, 0) || math.IsInf(ylo, 0) {
		xlo, xhi, ylo, yhi = 0.1, 1000, 1, 1000
	}
	xa0, xa1 := decades(xlo, xhi)
	ya0, ya1 := decades(ylo, yhi)
	xa := axis{xa0, xa1, plotLeft, plotLeft + plotWidth}
	ya := axis{ya0, ya1, plotTop + plotHeight, plotTop}
	xmin, xmax := math.Pow(10, xa0), math.Pow(10, xa1)
	ymin := math.Pow(10, ya0)

	var b bytes.Buffer
	text := func(x, y float64, anchor, style, s string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, style, esc(s))
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="13">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight, fontFamily)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", svgWidth, svgHeight)
	text(plotLeft, 28, "start", `font-size="18" font-weight="bold"`, c.Title)
	text(plotLeft, 50, "start", `font-size="13" fill="#444"`, c.Subtitle)
	fmt.Fprintf(&b, `<defs><clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath></defs>`+"\n",
		plotLeft, plotTop, plotWidth, plotHeight)

	// Grid and ticks: a line per decade, light lines at 2..9.
	for e := int(xa0); e <= int(xa1); e++ {
		x := xa.at(math.Pow(10, float64(e)))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/>`+"\n", x, plotTop, x, plotTop+plotHeight)
		text(x, plotTop+plotHeight+20, "middle", "", tickText(e))
		for m := 2; m <= 9 && e < int(xa1); m++ {
			xm := xa.at(float64(m) * math.Pow(10, float64(e)))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", xm, plotTop, xm, plotTop+plotHeight)
		}
	}
	for e := int(ya0); e <= int(ya1); e++ {
		y := ya.at(math.Pow(10, float64(e)))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ccc"/>`+"\n", plotLeft, y, plotLeft+plotWidth, y)
		text(plotLeft-8, y+4, "end", "", tickText(e))
		for m := 2; m <= 9 && e < int(ya1); m++ {
			ym := ya.at(float64(m) * math.Pow(10, float64(e)))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", plotLeft, ym, plotLeft+plotWidth, ym)
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", plotLeft, plotTop, plotWidth, plotHeight)
	text(plotLeft+plotWidth/2, plotTop+plotHeight+45, "middle", `font-size="14"`, "operational intensity (ops per byte moved)")
	fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" font-size="14">%s</text>`+"\n",
		plotLeft-55, plotTop+plotHeight/2, esc("performance (GOP/s)"))

	// Ceilings, clipped to the plot.
	fmt.Fprintf(&b, `<g clip-path="url(#plot)">`+"\n")
	for _, ce := range c.Ceilings {
		if ce.Value <= 0 {
			continue
		}
		switch ce.Kind {
		case Bandwidth:
			// y = bw * x, up to the highest compute roof.
			x1 := xmin
			x2 := xmax
			if maxPeak > 0 {
				x2 = math.Min(xmax, maxPeak/ce.Value)
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n",
				xa.at(x1), ya.at(ce.Value*x1), xa.at(x2), ya.at(ce.Value*x2), memoryColor)
		case Compute:
			x1 := xmin
			if maxBW > 0 {
				x1 = math.Max(xmin, ce.Value/maxBW)
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n",
				xa.at(x1), ya.at(ce.Value), xa.at(xmax), ya.at(ce.Value), computeColor)
		}
	}
	b.WriteString("</g>\n")
	// Ceiling labels, outside the clip so they are never cut; their boxes
	// keep point labels off them.
	var placed []box
	for _, ce := range c.Ceilings {
		if ce.Value <= 0 {
			continue
		}
		switch ce.Kind {
		case Compute:
			// Just right of the ridge, above the roof: GEMMs sit far to
			// the right, under the roof, so this spot is usually free.
			label := fmt.Sprintf("%s peak %s GOP/s", ce.Name, num(ce.Value))
			w := textWidth(label, true)
			x := xa.at(xmin) + 16
			if maxBW > 0 {
				x = xa.at(math.Max(xmin, ce.Value/maxBW)) + 16
			}
			x = math.Min(x, plotLeft+plotWidth-6-w)
			y := ya.at(ce.Value) - 6
			text(x, y, "start", `fill="`+computeColor+`" font-weight="bold"`, label)
			placed = append(placed, box{x, y - 12, w, 15})
		case Bandwidth:
			// Along the line, near where it enters the plot.
			x := xmin
			if y := ce.Value * x; y < ymin {
				x = ymin / ce.Value * 1.05
			}
			x *= 1.6
			px, py := xa.at(x), ya.at(ce.Value*x)
			// The line's angle on screen: one decade right is one decade up.
			ang := -math.Atan((ya.pix0-ya.pix1)/(ya.hi-ya.lo)/((xa.pix1-xa.pix0)/(xa.hi-xa.lo))) * 180 / math.Pi
			if py > plotTop+plotHeight || py < plotTop {
				continue
			}
			fmt.Fprintf(&b, `<text transform="translate(%.1f,%.1f) rotate(%.1f)" fill="%s" font-weight="bold">%s</text>`+"\n",
				px, py-6, ang, memoryColor, esc(fmt.Sprintf("%s %s GB/s", ce.Name, num(ce.Value))))
		}
	}

	// Points: numbered markers.
	maxShare := 0.0
	for _, p := range c.Points {
		maxShare = math.Max(maxShare, p.Share)
	}
	n := 0
	for _, p := range c.Points {
		n++
		if !plotted(p) {
			continue
		}
		r := markerMinR
		if maxShare > 0 {
			r = math.Max(markerMinR, markerMaxR*math.Sqrt(p.Share/maxShare))
		}
		x, y := xa.at(p.Intensity), ya.at(p.GOPS)
		fmt.Fprintf(&b, `<circle class="op" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" fill-opacity="0.6" stroke="%s"><title>%s</title></circle>`+"\n",
			x, y, r, colorOf(p.Kind), colorOf(p.Kind), esc(p.Label))
		label := fmt.Sprintf("%d", n)
		lb := placeLabel(x, y, r, float64(len(label))*8+2, placed)
		placed = append(placed, lb)
		text(lb.x, lb.y+lb.h-3, "start", `font-weight="bold"`, label)
	}

	// Legend: one line per op group, then the ceilings' methods.
	ly := float64(plotTop + 10)
	text(legendLeft, ly, "start", `font-weight="bold"`, "ops (marker area ~ share of time)")
	ly += legendLine + 4
	n = 0
	for _, p := range c.Points {
		n++
		fmt.Fprintf(&b, `<circle cx="%d" cy="%.1f" r="5" fill="%s" fill-opacity="0.6" stroke="%s"/>`+"\n", legendLeft+5, ly-4, colorOf(p.Kind), colorOf(p.Kind))
		line := fmt.Sprintf("%d  %s  x%d", n, p.Label, p.Count)
		text(legendLeft+16, ly, "start", "", line)
		ly += legendLine
		detail := fmt.Sprintf("%.0f%% of time, %s GOP/s, %.3g ops/B", 100*p.Share, num(p.GOPS), p.Intensity)
		if !plotted(p) {
			detail = fmt.Sprintf("%.0f%% of time, data movement (not plotted)", 100*p.Share)
		}
		text(legendLeft+28, ly, "start", `fill="#555" font-size="12"`, detail)
		ly += legendLine + 2
		if ly > svgHeight-20 {
			text(legendLeft, ly, "start", `fill="#555"`, fmt.Sprintf("... %d more", len(c.Points)-n))
			break
		}
	}
	for i, note := range c.Notes {
		text(plotLeft, float64(svgHeight-12-14*(len(c.Notes)-1-i)), "start", `font-size="11" fill="#555"`, note)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// box is a label's bounding box (x, y its top left corner).
type box struct{ x, y, w, h float64 }

func (a box) overlaps(b box) bool {
	return a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h
}

// placeLabel puts a w-wide label beside the marker at (x, y) of radius r:
// right, then left, above, below and further out, the first place that
// overlaps no label placed before (else the first place).
func placeLabel(x, y, r, w float64, placed []box) box {
	const h = 14.0
	var first box
	for i, d := range []float64{3, 10, 18} {
		for j, b := range []box{
			{x + r + d, y - r - h/2 + 2, w, h},
			{x - r - d - w, y - r - h/2 + 2, w, h},
			{x - w/2, y - r - d - h, w, h},
			{x - w/2, y + r + d, w, h},
		} {
			if i == 0 && j == 0 {
				first = b
			}
			free := true
			for _, p := range placed {
				if b.overlaps(p) {
					free = false
					break
				}
			}
			if free {
				return b
			}
		}
	}
	return first
}

// textWidth estimates the width in pixels of s at the figure's 13 px
// font (DejaVu Sans averages about 7.2 px per character, 8 in bold).
func textWidth(s string, bold bool) float64 {
	if bold {
		return 8 * float64(len(s))
	}
	return 7.2 * float64(len(s))
}

func colorOf(kind string) string {
	if c, ok := kindColors[kind]; ok {
		return c
	}
	return "#333"
}

// num prints a rate with 3 significant digits and no exponent.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func esc(s string) string {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return ""
	}
	return b.String()
}
