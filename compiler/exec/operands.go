package exec

// Operands are the slots a step reads and writes, NoSlot left out: what
// buffer sharing (reuse.go) and the code generator's arena plan go by.
// Each step kind lists them beside its fields (step_*.go); a slot field
// added to a step and not listed is caught by
// TestOperandsCoverEverySlotField.
type Operands struct {
	Reads, Writes []SlotID
}

// slots drops NoSlot from ids.
func slots(ids ...SlotID) []SlotID {
	out := ids[:0:0]
	for _, id := range ids {
		if id != NoSlot {
			out = append(out, id)
		}
	}
	return out
}

func operands(reads []SlotID, writes ...SlotID) Operands {
	return Operands{Reads: slots(reads...), Writes: slots(writes...)}
}

func reads(ids ...SlotID) []SlotID { return ids }

// StepKinds returns one zero value of every step kind Lower emits: the
// whole vocabulary, for tests that check each kind has every piece (its
// operands, its cost and replay, its generated form).
func StepKinds() []Step {
	return []Step{
		&QuantizeStep{}, &QuantizeRowsStep{}, &GEMMStep{}, &LinearF32Step{}, &LayerNormStep{}, &AttentionStep{},
		&AttentionMaskStep{}, &AddStep{}, &MulStep{}, &ActivationStep{}, &RotaryStep{}, &MaskedSumStep{}, &GatherStep{}, &EmbedStep{}, &OpStep{},
	}
}
