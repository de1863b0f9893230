// Package realbatch times encoders on batches of real sentences side by
// side: a sentence file (GLUE SST-2's dev.tsv) is tokenized, cut into
// batches in arrival order, and every batch is sent, call by call and in
// rotating order, to each target: a (worker, mode) of the peer harness's
// JSON-lines protocol (see internal/bench's Worker).
//
// A request carries the batch's lengths (sqc's extension of the protocol,
// bench.Request.Lengths) and Seq = the batch's longest sentence. sqc runs
// the real tokens only (padding-free batches); the peer harness's workers
// ignore the field and run batch x longest, which is what padding each
// batch to its longest costs them. A target marked Padded gets the same
// request without lengths, so sqc's own padded cost is shown beside its
// packed one.
//
// The figure to quote is the median over (batch, round) pairs of the
// paired ratio t(reference)/t(target), taken from calls made within a few
// hundred milliseconds of each other; the table also gives each target's
// time for the whole file (the sum over batches of the median over
// rounds).
package realbatch
