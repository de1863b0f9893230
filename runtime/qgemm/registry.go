package qgemm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sqc-dev/sqc/runtime/cpu"
)

// EnvISA names the environment variable that caps the kernel family, for
// comparisons and for working around a suspect kernel: SQC_ISA=amx, vnni,
// avx2 or go (case-insensitive).
//
// It is a ceiling, not a demand: an Engine uses the fastest variant this
// process can run whose family is at or below the named one, so SQC_ISA=amx
// on a CPU without AMX quietly gets VNNI (Engine.Describe says so), and
// SQC_ISA=go always gets the pure-Go kernel. A value that names no family
// is an error from New (wrapping ErrUnknownISA): a typo must not silently
// change which kernels run. It also takes ISAEmulatedAMX.
const EnvISA = "SQC_ISA"

// ISAEmulatedAMX names, where an ISA name is taken (SQC_ISA, Options.ISA,
// a generated package's Options.ISA, sqc's --isa), the AMX variant with
// its tile instructions emulated in AVX512-VNNI (EmulatedAMX): many times
// slower than the real kernels, it runs the AMX code paths, and gives
// their bits, on CPUs without AMX, so that what a model computes on AMX
// servers can be checked on any AVX512-VNNI machine (outputs are bitwise
// the same on every ISA). Unlike the family names it is a demand, not a
// ceiling: New fails, wrapping ErrISAUnavailable, where the CPU cannot
// emulate AMX.
const ISAEmulatedAMX = "amx-emulated"

// ErrISAUnavailable is wrapped by the error for ISAEmulatedAMX on a CPU
// without AVX512-VNNI and AVX-512.
var ErrISAUnavailable = errors.New("ISA not available on this CPU")

// EnvEpilogue names the environment variable that places the epilogue of
// a variant with a fused kernel (AMX), for comparisons: "" or "fused", the
// default, applies it inside the kernel call, each 32x32 block's during
// the next block's tile work; "block" applies it inside the call too, but
// straight after each block's tiles; "separate" runs the kernel into the
// s32 scratch, then the epilogue. Any other value is an error from New
// (wrapping ErrUnknownEpilogue).
const EnvEpilogue = "SQC_EPILOGUE"

// EnvFinishOrder names the environment variable that overrides, for
// comparisons, the block order of GEMMs with an Epilogue.Finish (the
// LayerNorm fused after a residual GEMM) where Options.FinishOrder leaves
// it to the model: "" or "model", the default, lets planGEMM choose;
// "column" forces column-major blocks of the plain plan, "row" row-major
// blocks of the finish-aware plan. Any other value is an error from New
// (wrapping ErrUnknownFinishOrder). planGEMM's rule was measured on VNNI
// only; this is how an AMX machine checks it.
const EnvFinishOrder = "SQC_FINISH_ORDER"

// ErrUnknownFinishOrder is wrapped by the error for a finish order that is
// not "model", "column" or "row".
var ErrUnknownFinishOrder = errors.New("unknown finish order")

// FinishOrder is the block order of an Engine's GEMMs with an
// Epilogue.Finish (Options.FinishOrder, SQC_FINISH_ORDER).
type FinishOrder int

const (
	// FinishByModel lets planGEMM choose per GEMM (the default):
	// full-row blocks where the scratch holds them, else the order rule.
	FinishByModel FinishOrder = iota
	// FinishColumnMajor forces column-major blocks of the plain plan,
	// every row block finished in the last column sweep.
	FinishColumnMajor
	// FinishRowMajor forces row-major blocks of the finish-aware plan,
	// each row block finished while later ones compute.
	FinishRowMajor
)

// String returns the name ParseFinishOrder takes: model, column or row.
func (o FinishOrder) String() string {
	switch o {
	case FinishByModel:
		return "model"
	case FinishColumnMajor:
		return "column"
	case FinishRowMajor:
		return "row"
	}
	return fmt.Sprintf("FinishOrder(%d)", int(o))
}

// ParseFinishOrder parses "model" (or ""), "column" or "row", in any case
// and with surrounding spaces; anything else is an error wrapping
// ErrUnknownFinishOrder.
func ParseFinishOrder(name string) (FinishOrder, error) {
	switch v := strings.ToLower(strings.TrimSpace(name)); v {
	case "", "model":
		return FinishByModel, nil
	case "column":
		return FinishColumnMajor, nil
	case "row":
		return FinishRowMajor, nil
	default:
		return 0, fmt.Errorf("%w %q: want model, column or row", ErrUnknownFinishOrder, v)
	}
}

// chooseFinishOrder applies Options.FinishOrder and, where it leaves the
// order to the model, SQC_FINISH_ORDER; it says what forced the order
// ("" for the model's).
func chooseFinishOrder(opts Options) (FinishOrder, string, error) {
	switch opts.FinishOrder {
	case FinishByModel:
	case FinishColumnMajor, FinishRowMajor:
		return opts.FinishOrder, "Options.FinishOrder", nil
	default:
		return 0, "", invalid("Options.FinishOrder = %d is not a finish order", int(opts.FinishOrder))
	}
	o, err := ParseFinishOrder(os.Getenv(EnvFinishOrder))
	if err != nil {
		return 0, "", fmt.Errorf("qgemm: %s: %w", EnvFinishOrder, err)
	}
	if o == FinishByModel {
		return o, "", nil
	}
	return o, EnvFinishOrder + "=" + o.String(), nil
}

// ErrUnknownEpilogue is wrapped by the error for an SQC_EPILOGUE value
// that is not "fused", "block" or "separate".
var ErrUnknownEpilogue = errors.New("unknown epilogue placement")

// ErrUnknownISA is wrapped by the error for an ISA name that is not one of
// amx, vnni, avx2, go (or, where a variant is chosen, ISAEmulatedAMX).
var ErrUnknownISA = errors.New("unknown ISA name")

// CheckISAName reports whether name selects kernels: "", a family ParseISA
// takes, or ISAEmulatedAMX (which New may still find unavailable).
func CheckISAName(name string) error {
	if name == "" || isEmulatedAMXName(name) {
		return nil
	}
	_, err := parseCeiling(name)
	return err
}

// parseCeiling is ParseISA for a name that selects kernels, whose error
// also offers ISAEmulatedAMX.
func parseCeiling(name string) (ISA, error) {
	isa, err := ParseISA(name)
	if err != nil {
		return 0, fmt.Errorf("%w (or %s)", err, ISAEmulatedAMX)
	}
	return isa, nil
}

func isEmulatedAMXName(name string) bool {
	return strings.EqualFold(strings.TrimSpace(name), ISAEmulatedAMX)
}

// ParseISA returns the family named s ("amx", "vnni", "avx2", "go",
// case-insensitive, surrounding blanks ignored).
func ParseISA(s string) (ISA, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for isa := ISAGo; isa <= ISAAMX; isa++ {
		if isa.String() == name {
			return isa, nil
		}
	}
	return 0, fmt.Errorf("%w %q: want one of amx, vnni, avx2, go", ErrUnknownISA, s)
}

// Variants returns every variant this process can run, fastest first: the
// assembly variants the CPU and OS allow (runtime/cpu.Detect, including the
// AMX permission), then the pure-Go variant, which is always there. Tests
// and benchmarks use it to force each variant in turn (Options.Variant).
func Variants() []Variant {
	return append(archVariants(cpu.Detect()), goVariant())
}

// goVariant is the portable variant: goKernel with the pure-Go epilogue.
func goVariant() Variant { return Variant{ISA: ISAGo, Kernel: goKernel} }

// bestVariant returns the first variant of vs (fastest first) whose family
// is at most ceiling; vs must end with the pure-Go variant.
func bestVariant(vs []Variant, ceiling ISA) Variant {
	for _, v := range vs {
		if v.ISA <= ceiling {
			return v
		}
	}
	return goVariant()
}

// WithEmulatedAMX returns vs with EmulatedAMX's variant appended where vs
// has no AMX variant and this CPU can emulate one: the list tests run
// whole models and kernels' callers over, so that the AMX paths run on
// CPUs without AMX too.
func WithEmulatedAMX(vs []Variant) []Variant {
	if slices.ContainsFunc(vs, func(v Variant) bool { return v.ISA == ISAAMX }) {
		return vs
	}
	if v, ok := EmulatedAMX(); ok {
		return append(vs, v)
	}
	return vs
}

// chooseVariant applies Options.Variant, Options.ISA and SQC_ISA, in that
// order of precedence, then Options.SeparateEpilogue and SQC_EPILOGUE, and
// says how the choice was made.
func chooseVariant(opts Options) (Variant, string, error) {
	v, why, err := chooseKernel(opts)
	if err != nil {
		return Variant{}, "", err
	}
	separate, perBlock := opts.SeparateEpilogue, false
	switch placement := strings.ToLower(strings.TrimSpace(os.Getenv(EnvEpilogue))); placement {
	case "", "fused":
	case "block":
		perBlock = true
	case "separate":
		separate = true
	default:
		return Variant{}, "", fmt.Errorf("qgemm: %s: %w %q: want fused, block or separate", EnvEpilogue, ErrUnknownEpilogue, placement)
	}
	switch {
	case separate && v.fusedBlock != nil:
		v.fusedBlock, v.fusedPipelined, v.perBlock = nil, false, nil
		why += ", epilogue kept separate"
	case perBlock && v.perBlock != nil:
		v.fusedBlock, v.fusedPipelined, v.perBlock = v.perBlock, false, nil
		why += ", epilogue per block (" + EnvEpilogue + "=block)"
	}
	return v, why, nil
}

// chooseKernel applies Options.Variant, Options.ISA and SQC_ISA.
func chooseKernel(opts Options) (Variant, string, error) {
	if opts.Variant != nil {
		v := *opts.Variant
		if v.Kernel == nil {
			return Variant{}, "", invalid("Options.Variant (%v) has no Kernel", v.ISA)
		}
		return v, "forced by Options.Variant", nil
	}
	name, source := opts.ISA, "Options.ISA"
	if name == "" {
		name, source = os.Getenv(EnvISA), EnvISA
	}
	if isEmulatedAMXName(name) {
		v, ok := EmulatedAMX()
		if !ok {
			return Variant{}, "", fmt.Errorf("qgemm: %s=%s: %w: emulating AMX needs the assembly of an amd64 build without -tags noasm and a CPU with AVX512-VNNI and AVX-512 (CPU features: %s)",
				source, ISAEmulatedAMX, ErrISAUnavailable, cpu.Detect())
		}
		return v, source + "=" + ISAEmulatedAMX + ", AMX tiles emulated in AVX512-VNNI", nil
	}
	vs := Variants()
	if name == "" {
		return vs[0], "fastest available", nil
	}
	ceiling, err := parseCeiling(name)
	if err != nil {
		return Variant{}, "", fmt.Errorf("qgemm: %s: %w", source, err)
	}
	v := bestVariant(vs, ceiling)
	why := fmt.Sprintf("%s=%s", source, ceiling)
	if v.ISA != ceiling {
		why += fmt.Sprintf(" not available (CPU features: %s)", cpu.Detect())
	}
	return v, why, nil
}
