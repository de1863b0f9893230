// Package bench is the shared logic of `sqc bench` and `sqc roofline`:
// building a model from a file or from a named shape with deterministic
// random weights (no checkpoint needed), quantising it the way sqc does for
// real models (calibration on random token ids, since random weights have
// no data distribution to speak of), preparing inputs, timing repeated
// forward passes and summarising the times, and serving the JSON-lines
// worker protocol of the shared peer harness (../shared/bench/peers).
//
// Timing is wall-clock time of complete forward passes on prepared inputs;
// Measure also reports heap allocations per run (runtime.MemStats around
// the timed runs) and the process's peak resident set size.
package bench
