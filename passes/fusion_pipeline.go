package passes

// FusionPipeline is the list of passes that run on a quantised graph,
// after QuantPipeline: they fuse what the INT8 kernels compute in one
// call, in the IR, so that compiler/exec and code generation lower one
// node to one step. Neither changes a bit of what exec computes (see each
// pass). Memory planning (PlanMemory) follows them where the maximum batch
// and sequence are known (`sqc compile`, `sqc inspect`).
func FusionPipeline() []Pass {
	return []Pass{
		// Epilogues first or second does not matter (FuseQKV only merges
		// projections without activation or residual); this order keeps
		// the listing of `sqc inspect --dump-all` in block order.
		FuseQLinearEpilogues,
		FuseQKV,
		// Both passes sweep what they replace; this catches anything else
		// they strand.
		EliminateDeadNodes,
	}
}
