package qgemm

// The amd64 kernels, the AVX-512 and AVX2 epilogues and the peak loops are generated
// by asmgen/qgemm (avo); TestGeneratedFilesUpToDate fails when the
// checked-in output differs from what the generator produces.
//go:generate go run ../../asmgen/qgemm -out kernels_amd64.s -stubs stubs_amd64.go -pkg qgemm
