package realbatch

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sqc-dev/sqc/internal/bench"
)

// Row summarises one target.
type Row struct {
	Label string `json:"target"`
	// SetMs is the time of the whole file: the sum over batches of the
	// median over rounds.
	SetMs float64 `json:"set_ms"`
	// SentencesPerSec is the file's sentences over SetMs.
	SentencesPerSec float64 `json:"sentences_per_s"`
	// Ratio, P25 and P75 are the median and quartiles over (batch, round)
	// pairs of t(reference)/t(this target): above 1 is faster than the
	// reference.
	Ratio float64 `json:"ratio"`
	P25   float64 `json:"p25"`
	P75   float64 `json:"p75"`
	// SetRatio is the reference's SetMs over this one's.
	SetRatio float64 `json:"set_ratio"`
}

// Summary is the report of a Run.
type Summary struct {
	Sentences, Batches int
	RealTokens, Padded int // over all batches
	Reference          string
	Rows               []Row
}

// Summarize computes the rows, with reference (a label of t) as the
// denominator of the ratios.
func Summarize(t *Times, batches [][]int, reference string) (*Summary, error) {
	ref := slices.Index(t.Labels, reference)
	if ref < 0 {
		return nil, fmt.Errorf("reference %q is not one of the targets %v", reference, t.Labels)
	}
	s := &Summary{Batches: len(batches), Reference: reference}
	for _, b := range batches {
		s.Sentences += len(b)
		real, padded := Tokens(b)
		s.RealTokens += real
		s.Padded += padded
	}
	setMs := make([]float64, len(t.Labels))
	for i := range t.Labels {
		for _, rounds := range t.Ms[i] {
			setMs[i] += bench.Summarize(rounds).Median
		}
	}
	for i, l := range t.Labels {
		var ratios []float64
		for b, rounds := range t.Ms[i] {
			for r, ms := range rounds {
				ratios = append(ratios, t.Ms[ref][b][r]/ms)
			}
		}
		q := bench.Summarize(ratios)
		s.Rows = append(s.Rows, Row{
			Label: l, SetMs: setMs[i], SentencesPerSec: float64(s.Sentences) / (setMs[i] / 1e3),
			Ratio: q.Median, P25: q.P25, P75: q.P75,
			SetRatio: setMs[ref] / setMs[i],
		})
	}
	return s, nil
}

// WriteText prints the summary as a table.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sentences in %d batches in arrival order: %d real tokens, %d positions padded to each batch's longest (%.2fx)\n",
		s.Sentences, s.Batches, s.RealTokens, s.Padded, float64(s.Padded)/float64(s.RealTokens))
	tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "target\tfile ms\tsentences/s\tx %s (median of paired ratios)\tp25-p75\tx %s (file)\n", s.Reference, s.Reference)
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t%.2f-%.2f\t%.2f\n", r.Label, r.SetMs, r.SentencesPerSec, r.Ratio, r.P25, r.P75, r.SetRatio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
