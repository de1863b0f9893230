package passes

import (
	"fmt"

	"github.com/sqc-dev/sqc/compiler"
)

// ShortenGeluForU8 evaluates the GELU of an sqc.QLinear's epilogue to u8
// precision where the QLinear writes u8 with a code step (out_scale) of at
// least gelu.ShortMinStep: act "gelu" becomes "gelu_u8" and "gelu_tanh"
// becomes "gelu_tanh_u8" (qgemm.Act.Short). Those evaluate the same
// intervals with degree-3 polynomials instead of degree 5 (internal/gelu's
// short tables, absolute error below gelu.ShortMaxError, at most 1% of a
// code step), two vector permutes and two FMAs fewer per 16 values. The
// GELU epilogue is bound by the two ports that run 512-bit operations: on
// Zen 5 (AVX512-VNNI) it took 0.82x the time, and on AMX, where the tiles
// leave the vector ports to the epilogue, BERT's FFN-up GEMM (GELU to u8)
// is the one its epilogue can hold back.
//
// This changes the bits of the output (a value within 1% of a step of a
// rounding boundary may round the other way), so it is a decision of its
// own, after fusion (FuseQLinearEpilogues' fused graph keeps the unfused
// graph's bits) and after WriteU8Directly, which gives the QLinear its u8
// output; the FP32 interpreter, the INT8 engine and generated packages
// all evaluate the act the node names, so they still agree bit for bit.
var ShortenGeluForU8 = Pass{Name: "ShortenGeluForU8", Run: shortenGeluForU8, Level: compiler.VerifyQuantized}

func shortenGeluForU8(g *compiler.Graph) (bool, error) {
	changed := false
	for _, n := range g.Nodes {
		if n.Op != opQLinear {
			continue
		}
		step, _, u8 := compiler.U8Output(n)
		if !u8 {
			continue
		}
		act, err := compiler.QLinearAct(n)
		if err != nil {
			return false, fmt.Errorf("node %q: %w", n.Name, err)
		}
		if short, ok := act.Short(step); ok {
			compiler.SetQLinearAct(n, short)
			changed = true
		}
	}
	return changed, nil
}
