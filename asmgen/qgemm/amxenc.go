package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AMX instructions. Neither Go's assembler nor avo knows them, so the
// kernels use placeholder instructions whose opcodes start with "AMX_";
// avo allocates the registers of their address operands like any other
// instruction's, and lowerAMX then replaces each placeholder by its
// encoding as BYTE directives, preceded by a comment giving the
// instruction in the AT&T syntax objdump prints (the objdump test in
// runtime/qgemm compares the two).
//
// Encodings (Intel SDM vol. 2, all VEX.128 map 0F38 W0; checked with
// objdump, see /work/shared/notes/isa-facts.md):
//
//	LDTILECFG m512          C4 E2 78 49 /0
//	TILERELEASE             C4 E2 78 49 C0
//	TILEZERO tmm            C4 E2 7B 49 C0|t<<3
//	TILELOADD tmm, sibmem   C4 E2 7B 4B modrm(t) SIB   (index = row stride)
//	TILESTORED sibmem, tmm  C4 E2 7A 4B modrm(t) SIB
//	TDPBUSD tc, ta, tb      C4 E2 (~tb<<3|1) 5E C0|tc<<3|ta
const (
	opLdTileCfg   = "AMX_LDTILECFG"
	opTileRelease = "AMX_TILERELEASE"
	opTileZero    = "AMX_TILEZERO"
	opTileLoadD   = "AMX_TILELOADD"
	opTileStoreD  = "AMX_TILESTORED"
	opTDPBUSD     = "AMX_TDPBUSD"
)

var amxISA = []string{"AMX-TILE", "AMX-INT8"}

// memRef is a decoded x86 memory operand: base + index*scale + disp, with
// registers given by their hardware numbers (0-15); index < 0 means none.
type memRef struct {
	base, index int
	scale       int
	disp        int32
}

// vex3 returns the three-byte VEX prefix for map 0F38, W0, L0, with the
// given inverted vvvv field source and pp, for a memory operand m (nil for
// register-only forms).
func vex3(vvvv, pp byte, m *memRef) []byte {
	b1 := byte(0xE0 | 0x02) // R, X, B inverted and clear (no extension); map 0F38
	if m != nil {
		if m.index >= 8 {
			b1 &^= 0x40
		}
		if m.base >= 8 {
			b1 &^= 0x20
		}
	}
	b2 := (^vvvv&0xF)<<3 | pp // W0, L0
	return []byte{0xC4, b1, b2}
}

// modRMMem encodes ModRM (with reg field r), SIB and displacement for m.
// forceSIB asks for a SIB byte even without an index (TILELOADD and
// TILESTORED require the SIB form).
func modRMMem(r int, m memRef, forceSIB bool) ([]byte, error) {
	if m.base < 0 || m.base > 15 {
		return nil, fmt.Errorf("bad base register %d", m.base)
	}
	if m.index == 4 {
		return nil, fmt.Errorf("SP cannot be an index register")
	}
	var mod byte
	switch {
	case m.disp == 0 && m.base&7 != 5: // BP and R13 need an explicit displacement
		mod = 0
	case m.disp >= -128 && m.disp <= 127:
		mod = 1
	default:
		mod = 2
	}
	out := []byte{}
	useSIB := forceSIB || m.index >= 0 || m.base&7 == 4
	if useSIB {
		out = append(out, mod<<6|byte(r&7)<<3|4)
		idx := byte(4) // none
		ss := byte(0)
		if m.index >= 0 {
			idx = byte(m.index & 7)
			switch m.scale {
			case 1:
				ss = 0
			case 2:
				ss = 1
			case 4:
				ss = 2
			case 8:
				ss = 3
			default:
				return nil, fmt.Errorf("bad scale %d", m.scale)
			}
		}
		out = append(out, ss<<6|idx<<3|byte(m.base&7))
	} else {
		out = append(out, mod<<6|byte(r&7)<<3|byte(m.base&7))
	}
	switch mod {
	case 1:
		out = append(out, byte(int8(m.disp)))
	case 2:
		d := uint32(m.disp)
		out = append(out, byte(d), byte(d>>8), byte(d>>16), byte(d>>24))
	}
	return out, nil
}

func checkTile(t int) error {
	if t < 0 || t > 7 {
		return fmt.Errorf("bad tile register tmm%d", t)
	}
	return nil
}

// encLdTileCfg encodes LDTILECFG [m].
func encLdTileCfg(m memRef) ([]byte, error) {
	rm, err := modRMMem(0, m, false)
	if err != nil {
		return nil, err
	}
	return append(append(vex3(0, 0, &m), 0x49), rm...), nil
}

// encTileRelease encodes TILERELEASE.
func encTileRelease() []byte { return []byte{0xC4, 0xE2, 0x78, 0x49, 0xC0} }

// encTileZero encodes TILEZERO tmm(t).
func encTileZero(t int) ([]byte, error) {
	if err := checkTile(t); err != nil {
		return nil, err
	}
	return []byte{0xC4, 0xE2, 0x7B, 0x49, 0xC0 | byte(t)<<3}, nil
}

// encTileLoadD encodes TILELOADD tmm(t), [m] (m.index is the row stride).
func encTileLoadD(t int, m memRef) ([]byte, error) { return encTileMem(t, m, 3) }

// encTileStoreD encodes TILESTORED [m], tmm(t).
func encTileStoreD(t int, m memRef) ([]byte, error) { return encTileMem(t, m, 2) }

func encTileMem(t int, m memRef, pp byte) ([]byte, error) {
	if err := checkTile(t); err != nil {
		return nil, err
	}
	if m.index < 0 {
		return nil, fmt.Errorf("tile load/store needs an index register (the row stride)")
	}
	rm, err := modRMMem(t, m, true)
	if err != nil {
		return nil, err
	}
	return append(append(vex3(0, pp, &m), 0x4B), rm...), nil
}

// encTDPBUSD encodes TDPBUSD tmm(c), tmm(a), tmm(b): c += u8 a . s8 b.
func encTDPBUSD(c, a, b int) ([]byte, error) {
	for _, t := range []int{c, a, b} {
		if err := checkTile(t); err != nil {
			return nil, err
		}
	}
	if c == a || c == b || a == b {
		return nil, fmt.Errorf("TDPBUSD tmm%d, tmm%d, tmm%d: operands must differ", c, a, b)
	}
	return append(vex3(byte(b), 1, nil), 0x5E, 0xC0|byte(c)<<3|byte(a)), nil
}

// AT&T register names as objdump prints them, by hardware number.
var attGP = []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}

// attMem formats m as objdump does, e.g. 0x40(%rsi,%rdx,1).
func attMem(m memRef) string {
	s := ""
	switch {
	case m.disp == 0 && m.base&7 == 5:
		s = "0x0" // RBP/R13 bases are encoded with an explicit disp8 of 0
	case m.disp < 0:
		s = fmt.Sprintf("-0x%x", -int64(m.disp))
	case m.disp > 0:
		s = fmt.Sprintf("0x%x", m.disp)
	}
	s += "(%" + attGP[m.base]
	if m.index >= 0 {
		s += fmt.Sprintf(",%%%s,%d", attGP[m.index], m.scale)
	}
	return s + ")"
}

// Placeholder constructors. Address registers go in Inputs so that avo's
// liveness analysis keeps them alive up to the instruction.

func (g *gen) amxLdTileCfg(base reg.GPVirtual) {
	m := operand.Mem{Base: base}
	g.Instruction(&ir.Instruction{Opcode: opLdTileCfg, Operands: []operand.Op{m}, Inputs: []operand.Op{m}, ISA: amxISA})
}

func (g *gen) amxTileRelease() {
	g.Instruction(&ir.Instruction{Opcode: opTileRelease, ISA: amxISA})
}

func (g *gen) amxTileZero(t int) {
	g.Instruction(&ir.Instruction{Opcode: opTileZero, Operands: []operand.Op{operand.U8(t)}, ISA: amxISA})
}

func (g *gen) amxTileLoadD(t int, m operand.Mem) {
	g.Instruction(&ir.Instruction{Opcode: opTileLoadD, Operands: []operand.Op{m, operand.U8(t)}, Inputs: []operand.Op{m}, ISA: amxISA})
}

func (g *gen) amxTileStoreD(m operand.Mem, t int) {
	g.Instruction(&ir.Instruction{Opcode: opTileStoreD, Operands: []operand.Op{m, operand.U8(t)}, Inputs: []operand.Op{m}, ISA: amxISA})
}

func (g *gen) amxTDPBUSD(c, a, b int) {
	g.Instruction(&ir.Instruction{Opcode: opTDPBUSD, Operands: []operand.Op{operand.U8(c), operand.U8(a), operand.U8(b)}, ISA: amxISA})
}

// physGP returns the hardware number of an allocated 64-bit register.
func physGP(r reg.Register) (int, error) {
	p := reg.ToPhysical(r)
	if p == nil || p.Kind() != reg.KindGP || r.Size() != 8 {
		return 0, fmt.Errorf("AMX address register %v is not a physical 64-bit register", r)
	}
	return int(p.PhysicalIndex()), nil
}

func memOf(op operand.Op) (memRef, error) {
	m, ok := op.(operand.Mem)
	if !ok || m.Symbol.Name != "" || m.Base == nil {
		return memRef{}, fmt.Errorf("AMX operand %v is not a register-based memory operand", op)
	}
	var r memRef
	var err error
	if r.base, err = physGP(m.Base); err != nil {
		return r, err
	}
	r.index = -1
	if m.Index != nil {
		if r.index, err = physGP(m.Index); err != nil {
			return r, err
		}
		r.scale = int(m.Scale)
	}
	r.disp = int32(m.Disp)
	return r, nil
}

func tileOf(op operand.Op) int { return int(op.(operand.U8)) }

// lowerInstruction returns the bytes and AT&T text of an AMX placeholder.
func lowerInstruction(i *ir.Instruction) ([]byte, string, error) {
	switch i.Opcode {
	case opLdTileCfg:
		m, err := memOf(i.Operands[0])
		if err != nil {
			return nil, "", err
		}
		b, err := encLdTileCfg(m)
		return b, "ldtilecfg " + attMem(m), err
	case opTileRelease:
		return encTileRelease(), "tilerelease", nil
	case opTileZero:
		t := tileOf(i.Operands[0])
		b, err := encTileZero(t)
		return b, fmt.Sprintf("tilezero %%tmm%d", t), err
	case opTileLoadD, opTileStoreD:
		m, err := memOf(i.Operands[0])
		if err != nil {
			return nil, "", err
		}
		t := tileOf(i.Operands[1])
		if i.Opcode == opTileLoadD {
			b, err := encTileLoadD(t, m)
			return b, fmt.Sprintf("tileloadd %s,%%tmm%d", attMem(m), t), err
		}
		b, err := encTileStoreD(t, m)
		return b, fmt.Sprintf("tilestored %%tmm%d,%s", t, attMem(m)), err
	case opTDPBUSD:
		c, a, b := tileOf(i.Operands[0]), tileOf(i.Operands[1]), tileOf(i.Operands[2])
		enc, err := encTDPBUSD(c, a, b)
		return enc, fmt.Sprintf("tdpbusd %%tmm%d,%%tmm%d,%%tmm%d", b, a, c), err
	}
	return nil, "", fmt.Errorf("unknown AMX placeholder %s", i.Opcode)
}

// amxCommentPrefix starts the comment line that precedes every lowered AMX
// instruction; the objdump test reads these lines.
const amxCommentPrefix = "amx: "

// lowerAMX replaces the AMX placeholders of fn by BYTE directives. It runs
// after register allocation, so the address registers are physical.
func lowerAMX(fn *ir.Function) error {
	var nodes []ir.Node
	for _, n := range fn.Nodes {
		i, ok := n.(*ir.Instruction)
		if !ok || len(i.Opcode) < 4 || i.Opcode[:4] != "AMX_" {
			nodes = append(nodes, n)
			continue
		}
		b, text, err := lowerInstruction(i)
		if err != nil {
			return fmt.Errorf("%s: %w", fn.Name, err)
		}
		nodes = append(nodes, ir.NewComment(amxCommentPrefix+text))
		for _, x := range b {
			nodes = append(nodes, &ir.Instruction{Opcode: "BYTE", Operands: []operand.Op{operand.U8(x)}})
		}
	}
	fn.Nodes = nodes
	return nil
}
