package gelu

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
)

var printFit = flag.Bool("print-fit", false, "print the refitted Coeffs table")

// fitInterval returns the least-squares polynomial of degree degree in
// r of g((i + r)/InvWidth), g(u) = ref(-u), over 64 Chebyshev nodes of r in [lo, 0.5]
// (lo = 0 and no constant term for i = 0), lowest degree first.
func fitInterval(ref func(float64) float64, i, degree int) []float64 {
	g := func(u float64) float64 { return ref(-u) }
	const nodes = 64
	lo, first := -0.5, 0
	if i == 0 {
		lo, first = 0, 1
	}
	width := 1 / float64(InvWidth)
	m := degree + 1 - first
	// Normal equations A c = y.
	a := make([][]float64, m)
	y := make([]float64, m)
	for j := range a {
		a[j] = make([]float64, m)
	}
	for n := range nodes {
		r := lo + (0.5-lo)*(math.Cos(math.Pi*(float64(n)+0.5)/nodes)+1)/2
		f := g((float64(i) + r) * width)
		for j := range m {
			pj := math.Pow(r, float64(j+first))
			for k := range m {
				a[j][k] += pj * math.Pow(r, float64(k+first))
			}
			y[j] += pj * f
		}
	}
	// Gaussian elimination with partial pivoting.
	for j := range m {
		p := j
		for k := j + 1; k < m; k++ {
			if math.Abs(a[k][j]) > math.Abs(a[p][j]) {
				p = k
			}
		}
		a[j], a[p], y[j], y[p] = a[p], a[j], y[p], y[j]
		for k := j + 1; k < m; k++ {
			f := a[k][j] / a[j][j]
			for l := j; l < m; l++ {
				a[k][l] -= f * a[j][l]
			}
			y[k] -= f * y[j]
		}
	}
	c := make([]float64, m)
	for j := m - 1; j >= 0; j-- {
		s := y[j]
		for k := j + 1; k < m; k++ {
			s -= a[j][k] * c[k]
		}
		c[j] = s / a[j][j]
	}
	if first == 1 {
		c = append([]float64{0}, c...)
	}
	return c
}

// TestCoeffsAreTheFit refits each form's table and checks it against the
// fit (to 1e-6 relative plus 1e-12 absolute: the float64 solve may differ
// in its last bits between machines). -print-fit prints the refitted
// tables.
func TestCoeffsAreTheFit(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			var fit Table
			for i := range Intervals - 1 {
				for k, c := range fitInterval(f.ref, i, f.degree) {
					fit[k][i] = float32(c)
				}
			}
			if *printFit {
				var b strings.Builder
				for _, row := range fit {
					b.WriteString("\t{")
					for i, c := range row {
						if i > 0 {
							b.WriteString(", ")
						}
						fmt.Fprintf(&b, "%v", c)
					}
					b.WriteString("},\n")
				}
				t.Logf("refitted %s table:\n%s", f.name, b.String())
			}
			for k := range fit {
				for i := range fit[k] {
					if d := math.Abs(float64(fit[k][i] - f.table[k][i])); d > 1e-6*math.Abs(float64(fit[k][i]))+1e-12 {
						t.Errorf("table[%d][%d] = %g, the fit gives %g", k, i, f.table[k][i], fit[k][i])
					}
				}
			}
		})
	}
}
