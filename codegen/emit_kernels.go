package codegen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/sqc-dev/sqc/asmgen/kernels"
	"github.com/sqc-dev/sqc/compiler/exec"
)

// Files of a package's own GEMM kernels (see the package doc, "Kernels").
const (
	kernelsAsmFile   = "kernels_amd64.s"
	kernelsAmd64File = "kernels_amd64.go"
	kernelsOtherFile = "kernels_other.go"
)

// gemmKernelFunc is the generated lookup from a GEMM's Kp to its kernel.
const gemmKernelFunc = "gemmKernel"

// kernelName is the Go name of the VNNI kernel specialised to kp.
func kernelName(kp int) string { return fmt.Sprintf("gemmVNNIKp%d", kp) }

// gemmKps returns the distinct Kp of the program's GEMMs, ascending, and
// for each the numbers of the steps that use it.
func gemmKps(prog *exec.Schedule) (kps []int, steps map[int][]int) {
	steps = map[int][]int{}
	for i, st := range prog.Steps() {
		if s, ok := st.(*exec.GEMMStep); ok {
			steps[s.Linear.B.Kp] = append(steps[s.Linear.B.Kp], i)
		}
	}
	return slices.Sorted(maps.Keys(steps)), steps
}

// kernelFiles returns the package's own kernels: the avo-generated
// assembly (amd64 && !noasm), its Go declarations with gemmKernel, and the
// complement (!amd64 || noasm) where gemmKernel has no kernels, so that
// every GEMM runs runtime/qgemm's generic path. It returns nil when the
// program has no GEMM.
func (g *gen) kernelFiles() (map[string][]byte, map[string]*jen.File, error) {
	kps, steps := gemmKps(g.pl.prog)
	if len(kps) == 0 {
		return nil, nil, nil
	}
	specs := make([]kernels.Spec, len(kps))
	for i, kp := range kps {
		specs[i] = kernels.Spec{Name: kernelName(kp), Kp: kp}
	}
	asm, err := kernels.File(specs, "sqc", g.opts.Package)
	if err != nil {
		return nil, nil, fmt.Errorf("codegen: %s: %w", kernelsAsmFile, err)
	}

	amd64 := newFile(g.opts.Package)
	amd64.HeaderComment("//go:build amd64 && !noasm")
	var cases []jen.Code
	for _, kp := range kps {
		name := kernelName(kp)
		amd64.Comment(fmt.Sprintf("%s is the AVX512-VNNI qgemm.Kernel specialised to Kp = %d", name, kp))
		amd64.Comment(fmt.Sprintf("(asmgen/kernels), for steps %s.", stepList(steps[kp])))
		amd64.Comment("")
		amd64.Comment("//go:noescape")
		amd64.Func().Id(name).Params(
			jen.Id("a").Op("*").Uint8(), jen.Id("lda").Int(), jen.Id("b").Op("*").Int8(), jen.Id("kp").Int(),
			jen.Id("c").Op("*").Int32(), jen.Id("ldc").Int(), jen.Id("m").Int(), jen.Id("nblocks").Int(),
		)
		cases = append(cases, jen.Case(jen.Lit(kp)).Block(jen.Return(
			jen.Qual(pkgQgemm, "SpecializedKernel").Values(jen.Dict{jen.Id("Kp"): jen.Lit(kp), jen.Id("Kernel"): jen.Id(name)}))))
	}
	amd64.Comment(gemmKernelFunc + " returns the package's own kernel for weights padded to kp bytes of K;")
	amd64.Comment("Engine.Linear runs it when the Engine runs the VNNI variant.")
	amd64.Func().Id(gemmKernelFunc).Params(jen.Id("kp").Int()).Qual(pkgQgemm, "SpecializedKernel").Block(
		jen.Switch(jen.Id("kp")).Block(cases...),
		jen.Return(jen.Qual(pkgQgemm, "SpecializedKernel").Values()),
	)

	other := newFile(g.opts.Package)
	other.HeaderComment("//go:build !amd64 || noasm")
	other.Comment(gemmKernelFunc + " has no kernels in this build: every GEMM runs runtime/qgemm's")
	other.Comment("generic kernels (pure Go here).")
	other.Func().Id(gemmKernelFunc).Params(jen.Id("kp").Int()).Qual(pkgQgemm, "SpecializedKernel").Block(
		jen.Return(jen.Qual(pkgQgemm, "SpecializedKernel").Values()),
	)
	return map[string][]byte{kernelsAsmFile: asm}, map[string]*jen.File{kernelsAmd64File: amd64, kernelsOtherFile: other}, nil
}

// stepList prints step numbers as "#3, #7 and #9".
func stepList(steps []int) string {
	names := make([]string, len(steps))
	for i, n := range steps {
		names[i] = fmt.Sprintf("#%d", n)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
