package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBenchCPUProfile checks the hidden --cpuprofile flag writes a pprof
// profile (gzipped protobuf), and that the JSON reports CPU time per run
// and, on one thread, no heap allocations per forward pass.
func TestBenchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	args := []string{"bench", "--config", "bert-tiny", "--batch", "2", "--seq", "16", "--threads", "1", "--runs", "20", "--warmup", "2", "--json"}
	if code, _, errs := runCLI(t, append(args, "--cpuprofile", path)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	prof, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(prof, []byte{0x1f, 0x8b}) {
		t.Errorf("--cpuprofile wrote %d bytes that are not a gzipped pprof profile", len(prof))
	}
	// Without the profiler, whose writer goroutine allocates.
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		CPUMsPerRun  float64 `json:"cpu_ms_per_run"`
		SeqPerCPUS   float64 `json:"seq_per_cpu_s"`
		AllocsPerRun float64 `json:"allocs_per_run"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.CPUMsPerRun <= 0 || r.SeqPerCPUS <= 0 {
		t.Errorf("cpu_ms_per_run %g, seq_per_cpu_s %g: want both > 0", r.CPUMsPerRun, r.SeqPerCPUS)
	}
	if r.AllocsPerRun >= 1 {
		t.Errorf("%g heap allocations per forward pass, want 0 in steady state", r.AllocsPerRun)
	}
	if code, _, errs := runCLI(t, "bench", "--config", "bert-tiny", "--serve", "--cpuprofile", path); code != 2 {
		t.Errorf("--cpuprofile with --serve: exit %d, stderr %q; want exit 2", code, errs)
	}
}
