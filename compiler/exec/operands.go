package exec

// Operands are the slots a step reads and writes, NoSlot left out: what
// buffer sharing (reuse.go) and the code generator's arena plan go by.
// Each step kind lists them beside its fields, so a slot field added to a
// step and not listed here is caught by TestOperandsCoverEverySlotField.
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

func (s *QuantizeStep) Operands() Operands { return operands(reads(s.X), s.Out) }
func (s *QuantizeRowsStep) Operands() Operands {
	return operands(reads(s.X), s.Out, s.Scales, s.ZeroPoints)
}
func (s *GEMMStep) Operands() Operands {
	return operands(reads(s.A, s.RowScale, s.RowZeroPoint, s.Residual), s.Out)
}
func (s *LinearF32Step) Operands() Operands { return operands(reads(s.X), s.Out) }
func (s *LayerNormStep) Operands() Operands { return operands(reads(s.X), s.Out, s.OutU8) }
func (s *AttentionStep) Operands() Operands {
	return operands(reads(s.Q, s.K, s.V, s.Mask), s.Out)
}
func (s *AttentionMaskStep) Operands() Operands { return operands(reads(s.Mask), s.Out) }
func (s *AddStep) Operands() Operands           { return operands(reads(s.A, s.B), s.Out) }
func (s *ActivationStep) Operands() Operands    { return operands(reads(s.X), s.Out) }
func (s *GatherStep) Operands() Operands        { return operands(reads(s.Data, s.Indices), s.Out) }
func (s *EmbedStep) Operands() Operands         { return operands(reads(s.IDs, s.TypeIDs), s.Out) }
func (s *OpStep) Operands() Operands            { return operands(s.Inputs, s.Outputs...) }

// StepKinds returns one zero value of every step kind Lower emits: the
// whole vocabulary, for tests that check each kind has every piece (its
// operands, its generated form, its roofline replay).
func StepKinds() []Step {
	return []Step{
		&QuantizeStep{}, &QuantizeRowsStep{}, &GEMMStep{}, &LinearF32Step{}, &LayerNormStep{}, &AttentionStep{},
		&AttentionMaskStep{}, &AddStep{}, &ActivationStep{}, &GatherStep{}, &EmbedStep{}, &OpStep{},
	}
}
