package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/sqc-dev/sqc/compiler"
	"github.com/sqc-dev/sqc/compiler/calib"
	"github.com/sqc-dev/sqc/runtime/nn"
	"github.com/sqc-dev/sqc/runtime/pool"
	"github.com/sqc-dev/sqc/runtime/qgemm"
)

// The auto-alpha search of SmoothQuant. For each candidate alpha it
// smooths the group's sampled calibration rows and weights, runs them
// through the real INT8 path — QuantizeWeights, the activation
// quantisation of QuantOptions.Act (runtime/nn) and runtime/qgemm's GEMM
// with sqc.QLinear's epilogue — and compares with the FP32 product of the
// unsmoothed rows and weights. So the search scores exactly what the
// quantised graph will compute on those rows.

// Kernels are the runtime the auto-alpha search evaluates candidates on
// (QuantOptions.Kernels).
type Kernels struct {
	Pool *pool.Pool
	GEMM *qgemm.Engine
}

// NewKernels starts a worker pool of the given size (<= 0: GOMAXPROCS)
// and a GEMM engine on it, for QuantOptions.Kernels; Close releases them.
func NewKernels(threads int) (*Kernels, error) {
	p := pool.New(threads)
	e, err := qgemm.New(qgemm.Options{Pool: p})
	if err != nil {
		p.Close()
		return nil, err
	}
	return &Kernels{Pool: p, GEMM: e}, nil
}

// Close stops the engine and the pool.
func (k *Kernels) Close() {
	k.GEMM.Close()
	k.Pool.Close()
}

// searcher holds what one SmoothQuant run's searches share: the caller's
// kernels.
type searcher struct {
	pool *pool.Pool
	gemm *qgemm.Engine
}

// searchAlpha returns the alpha of opts' grid with the least summed
// relative output error over the group's Linears.
func (s *searcher) searchAlpha(g *compiler.Graph, grp *smoothGroup, xs *calib.ValueStats, opts QuantOptions) (float64, error) {
	rows, k := xs.SampleRows(), xs.Channels
	if rows == 0 {
		return 0, fmt.Errorf("%w: automatic alpha needs sampled calibration rows of %q (calib.Options.SampleRows)", compiler.ErrInvalidRequest, grp.x)
	}
	mode, err := opts.actMode()
	if err != nil {
		return 0, err
	}
	grid := opts.AlphaGrid
	if len(grid) == 0 {
		grid = DefaultAlphaGrid()
	}
	refs := make([][]float32, len(grp.linears))
	energy := make([]float64, len(grp.linears))
	for i, lin := range grp.linears {
		w := g.Initializers[lin.Inputs[1]]
		n := int(w.Shape[1])
		refs[i] = make([]float32, rows*n)
		nn.LinearF32(s.pool, refs[i], n, xs.Rows, k, rows, k, n, w.F32, nil)
		for _, v := range refs[i] {
			energy[i] += float64(v) * float64(v)
		}
	}
	absX := xs.AbsMax()
	best, bestErr := 0.0, math.Inf(1)
	for _, alpha := range grid {
		if alpha < 0 || alpha > 1 || math.IsNaN(alpha) {
			return 0, fmt.Errorf("%w: alpha grid value %g is outside [0, 1]", compiler.ErrInvalidRequest, alpha)
		}
		scales := slices.Repeat([]float32{1}, k)
		if alpha > 0 {
			scales = smoothScales(g, grp.linears, absX, alpha)
		}
		total := 0.0
		a, q, err := s.quantizeRows(xs, scales, mode)
		if err != nil {
			return 0, err
		}
		for i, lin := range grp.linears {
			e, err := s.linearError(a, q, g.Initializers[lin.Inputs[1]], scales, refs[i])
			if err != nil {
				return 0, err
			}
			total += e / math.Max(energy[i], math.SmallestNonzeroFloat64)
		}
		if total < bestErr {
			best, bestErr = alpha, total
		}
	}
	return best, nil
}

// actQuant is how the sampled rows were quantised.
type actQuant struct {
	rows, lda int
	scale     float32   // static
	zeroPoint int32     // static
	rowScale  []float32 // dynamic
	rowZero   []int32   // dynamic
}

// quantizeRows smooths the sampled rows by scales and quantises them to
// qgemm's u8 A layout as sqc.QLinear would: static with the calibration
// range of the smoothed value (its channel ranges divided by the scales,
// which is exact), or dynamic per row.
func (s *searcher) quantizeRows(xs *calib.ValueStats, scales []float32, mode string) ([]uint8, *actQuant, error) {
	sx, err := xs.Scaled(scales)
	if err != nil {
		return nil, nil, err
	}
	rows, k := xs.SampleRows(), xs.Channels
	q := &actQuant{rows: rows, lda: qgemm.RoundUp(k, qgemm.KBlock)}
	a := make([]uint8, rows*q.lda)
	if mode == compiler.QLinearDynamic {
		q.rowScale, q.rowZero = make([]float32, rows), make([]int32, rows)
		nn.QuantizeRowsU8(a, q.lda, sx.Rows, k, rows, k, q.rowScale, q.rowZero)
		return a, q, nil
	}
	lo, hi := sx.MinMax()
	q.scale, q.zeroPoint = StaticQuantParams(lo, hi)
	nn.QuantizeU8(a, q.lda, sx.Rows, k, rows, k, 1/q.scale, q.zeroPoint)
	return a, q, nil
}

// linearError returns the squared error of the INT8 product of the
// quantised rows and the smoothed, quantised weight w against ref.
func (s *searcher) linearError(a []uint8, q *actQuant, w *compiler.Tensor, scales []float32, ref []float32) (float64, error) {
	k, n := int(w.Shape[0]), int(w.Shape[1])
	ws := w.Clone()
	scaleRows(ws, scales)
	wq, wscale := QuantizeWeights(ws)
	packed, err := qgemm.PackB(wq.I8, k, n)
	if err != nil {
		return 0, err
	}
	out := make([]float32, q.rows*n)
	ep := &qgemm.Epilogue{ColSum: packed.ColSum, OutF32: out, OutStride: n}
	if q.rowScale != nil {
		ep.Scale, ep.RowScale, ep.RowZeroPoint = wscale.F32, q.rowScale, q.rowZero
	} else {
		ep.AZeroPoint = q.zeroPoint
		ep.Scale = make([]float32, n)
		for j, v := range wscale.F32 {
			ep.Scale[j] = q.scale * v
		}
	}
	if err := s.gemm.GEMM(a, q.rows, q.lda, packed, ep); err != nil {
		return 0, err
	}
	var e float64
	for i, v := range out {
		d := float64(v) - float64(ref[i])
		e += d * d
	}
	return e, nil
}
