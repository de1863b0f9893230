package main

// genGeluAVX2 emits the AVX2+FMA3 forms of the standalone GELUs (runtime/nn
// kernels gelu and geluTanh) for CPUs without AVX-512.
func genGeluAVX2(g *gen) {}
