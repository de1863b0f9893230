package calib

import "math"

// HistogramBins is the bin count of a value's histogram: 2048 bins of the
// value's whole range resolve the 0.01% tails of a few thousand calibration
// tokens to well under one u8 quantisation step (which spans 8 bins).
const HistogramBins = 2048

// Histogram counts values in equal-width bins over [Lo, Hi]. The range
// grows to take in every value added; old counts are then moved to the new
// bins by their bin centres (the way ONNX Runtime's calibrator merges
// histograms), which blurs them by at most one new bin width.
type Histogram struct {
	Lo, Hi float64
	Counts []uint64
	Total  uint64
}

func newHistogram(bins int) *Histogram { return &Histogram{Counts: make([]uint64, bins)} }

// cover widens the range to include [lo, hi].
func (h *Histogram) cover(lo, hi float64) {
	if h.Total == 0 {
		h.Lo, h.Hi = lo, hi
		return
	}
	if lo >= h.Lo && hi <= h.Hi {
		return
	}
	nlo, nhi := math.Min(lo, h.Lo), math.Max(hi, h.Hi)
	// Grow by a quarter more than needed, so a slowly widening range is
	// not rebinned on every batch.
	pad := (nhi - nlo) / 4
	if nlo < h.Lo {
		nlo -= pad
	}
	if nhi > h.Hi {
		nhi += pad
	}
	old, olo, ohi := h.Counts, h.Lo, h.Hi
	h.Counts = make([]uint64, len(old))
	h.Lo, h.Hi = nlo, nhi
	ow := (ohi - olo) / float64(len(old))
	for i, c := range old {
		if c != 0 {
			h.Counts[h.bin(olo+(float64(i)+0.5)*ow)] += c
		}
	}
}

// bin returns the bin of x, which must lie in [Lo, Hi].
func (h *Histogram) bin(x float64) int {
	if h.Hi <= h.Lo {
		return 0
	}
	b := int((x - h.Lo) / (h.Hi - h.Lo) * float64(len(h.Counts)))
	return min(max(b, 0), len(h.Counts)-1)
}

// add counts xs, whose smallest and largest elements are lo and hi.
func (h *Histogram) add(xs []float32, lo, hi float32) {
	if len(xs) == 0 {
		return
	}
	h.cover(float64(lo), float64(hi))
	for _, x := range xs {
		h.Counts[h.bin(float64(x))]++
	}
	h.Total += uint64(len(xs))
}

// Quantile returns the value below which a fraction q of the counted
// values lie, interpolating linearly inside the bin that holds it.
func (h *Histogram) Quantile(q float64) float32 {
	if h.Total == 0 {
		return 0
	}
	target := q * float64(h.Total)
	width := (h.Hi - h.Lo) / float64(len(h.Counts))
	var cum float64
	for i, c := range h.Counts {
		next := cum + float64(c)
		if next >= target && c > 0 {
			frac := (target - cum) / float64(c)
			return float32(h.Lo + (float64(i)+frac)*width)
		}
		cum = next
	}
	return float32(h.Hi)
}
