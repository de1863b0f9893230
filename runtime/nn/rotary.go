package nn

import "github.com/sqc-dev/sqc/runtime/pool"

// RotaryDims are the shapes of a rotary position embedding (RoPE) applied
// to a [Batch, Seq, Heads*HeadSize] activation with cos and sin tables of
// [TableBatch, Seq, HeadSize], TableBatch 1 (every sequence reads the same
// rows) or Batch.
type RotaryDims struct {
	Batch, Seq, Heads, HeadSize, TableBatch int
}

// Rotary is rotaryGo on the active kernels (AVX-512 where the CPU has it;
// every kernel set gives the same bits).
func Rotary(dst, x, cos, sin []float32, heads, d int) { active().rotary(dst, x, cos, sin, heads, d) }

// rotaryGo rotates one token's heads, x [heads*d], by the cos and sin rows
// of its position, [d] each, as transformers' apply_rotary_pos_emb does
// with rotate_half (GPT-NeoX's layout: dimension e pairs with e + d/2):
//
//	dst[e]       = x[e]*cos[e]       + (-x[e+d/2])*sin[e]
//	dst[e+d/2]   = x[e+d/2]*cos[e+d/2] + x[e]*sin[e+d/2]
//
// per head, each product and the sum rounded to float32 as the exported
// graph's Mul, Neg, Concat and Add compute them (the explicit conversions
// keep the compiler from fusing them into an FMA). d must be even.
func rotaryGo(dst, x, cos, sin []float32, heads, d int) {
	half := d / 2
	// Halves of equal length, so the loop below indexes without bounds
	// checks.
	cosLo, cosHi, sinLo, sinHi := cos[:half], cos[half:d], sin[:half], sin[half:d]
	cosHi, sinLo, sinHi = cosHi[:len(cosLo)], sinLo[:len(cosLo)], sinHi[:len(cosLo)]
	for h := range heads {
		xLo, xHi := x[h*d:h*d+half], x[h*d+half:(h+1)*d]
		yLo, yHi := dst[h*d:h*d+half], dst[h*d+half:(h+1)*d]
		xHi, yLo, yHi = xHi[:len(xLo)], yLo[:len(xLo)], yHi[:len(xLo)]
		cLo, cHi, sLo, sHi := cosLo[:len(xLo)], cosHi[:len(xLo)], sinLo[:len(xLo)], sinHi[:len(xLo)]
		for e, lo := range xLo {
			hi := xHi[e]
			yLo[e] = float32(lo*cLo[e]) + float32(-hi*sLo[e])
			yHi[e] = float32(hi*cHi[e]) + float32(lo*sHi[e])
		}
	}
}

// RotaryParallel is Rotary on every token of a padded batch, the tokens
// spread over p's workers (nil: the caller's goroutine); token (b, s)
// reads table row (b, s) of cos and sin, or (0, s) when TableBatch is 1.
// The bits do not depend on the workers.
func RotaryParallel(p *pool.Pool, dst, x, cos, sin []float32, dims *RotaryDims) {
	width := dims.Heads * dims.HeadSize
	forRows(rotaryCalls, p, dims.Batch*dims.Seq, width, rotaryArgs{kern: active(), dst: dst, x: x, cos: cos, sin: sin, dims: *dims}, rotaryRange)
}

type rotaryArgs struct {
	kern             *kernels
	dst, x, cos, sin []float32
	dims             RotaryDims
}

var rotaryCalls = newRowsRecycler[rotaryArgs]()

func rotaryRange(a *rotaryArgs, r0, r1 int) {
	dm := a.dims
	d, width := dm.HeadSize, dm.Heads*dm.HeadSize
	for r := r0; r < r1; r++ {
		b, s := r/dm.Seq, r%dm.Seq
		if dm.TableBatch == 1 {
			b = 0
		}
		t := (b*dm.Seq + s) * d
		a.kern.rotary(a.dst[r*width:(r+1)*width], a.x[r*width:(r+1)*width], a.cos[t:t+d], a.sin[t:t+d], dm.Heads, d)
	}
}

// RotaryPacked is RotaryParallel on a packed batch: x and dst are
// [tokens, Heads*HeadSize] with sequence b's tokens at rows offsets[b] ..
// offsets[b+1]-1 (PackedOffsets), and a token at position t of its
// sequence reads table row t, as it would alone; the tables are those of
// the padded batch, [1, Seq, HeadSize] (TableBatch must be 1: the rows
// depend on the position only). The bits are Rotary's.
func RotaryPacked(p *pool.Pool, dst, x, cos, sin []float32, dims *RotaryDims, offsets []int) {
	width := dims.Heads * dims.HeadSize
	tokens := offsets[len(offsets)-1]
	forRows(rotaryPackedCalls, p, tokens, width, rotaryPackedArgs{rotaryArgs{kern: active(), dst: dst, x: x, cos: cos, sin: sin, dims: *dims}, offsets}, rotaryPackedRange)
}

type rotaryPackedArgs struct {
	rotaryArgs
	offsets []int
}

var rotaryPackedCalls = newRowsRecycler[rotaryPackedArgs]()

func rotaryPackedRange(a *rotaryPackedArgs, r0, r1 int) {
	d, width := a.dims.HeadSize, a.dims.Heads*a.dims.HeadSize
	b := 0
	for r := r0; r < r1; r++ {
		for r >= a.offsets[b+1] {
			b++
		}
		t := (r - a.offsets[b]) * d
		a.kern.rotary(a.dst[r*width:(r+1)*width], a.x[r*width:(r+1)*width], a.cos[t:t+d], a.sin[t:t+d], a.dims.Heads, d)
	}
}
