package codegen

import "github.com/sqc-dev/sqc/compiler/exec"

// ArenaBytes is the size in bytes of the activation arenas a package
// generated from prog for batches of maxBatch sequences of maxSeq tokens
// would allocate: its float32, u8 and int32 arenas, planned as Generate
// plans them (every buffer exec lowers to, the u8 copies of quantised
// activations included, reused by lifetime). The token inputs and the
// attention scratch, which Model.MemoryBytes also counts, are not
// included. `sqc inspect` sets it beside passes.PlanMemory's plan of the
// graph's values.
func ArenaBytes(prog *exec.Schedule, maxBatch, maxSeq int) (int64, error) {
	pl, err := newPlan(prog, maxBatch, maxSeq)
	if err != nil {
		return 0, err
	}
	return 4*int64(pl.arena[arenaF32]) + int64(pl.arena[arenaU8]) + 4*int64(pl.arena[arenaI32]), nil
}
