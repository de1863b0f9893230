package main

import (
	"fmt"

	"github.com/sqc-dev/sqc/asmgen/kernels"
)

// genVNNIKernel emits the generic AVX512-VNNI Kernel (Kp from its kp
// argument) with asmgen/kernels, the generator of the model-specialised
// kernels too, so both are one piece of code.
func genVNNIKernel(g *gen) {
	g.VNNIKernel("qgemmVNNI", 0,
		"qgemmVNNI is the AVX512-VNNI Kernel: VPDPBUSD on zmm, register-blocked",
		fmt.Sprintf("%d rows x %d N-blocks (%d zmm accumulators), N-groups outermost.",
			kernels.VNNIRows, kernels.VNNICols, kernels.VNNIRows*kernels.VNNICols))
}
