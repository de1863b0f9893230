package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sqc-dev/sqc/examples/sentiment/sentimentmodel"
)

// memoryHelperEnv makes the test binary, re-executed, the measured
// process of TestMemoryBytesMatchesRSS instead of running tests.
const memoryHelperEnv = "SENTIMENT_MEMORY_HELPER"

// procStatus reads fields of /proc/self/status in bytes (kB values).
func procStatus(names ...string) (map[string]int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, want := range names {
			if name == want {
				f := strings.Fields(rest)
				if len(f) != 2 || f[1] != "kB" {
					return nil, fmt.Errorf("/proc/self/status %s: %q", name, rest)
				}
				v, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return nil, err
				}
				out[name] = v << 10
			}
		}
	}
	return out, nil
}

// memoryReport is what the helper process measures.
type memoryReport struct {
	MemoryBytes int64            `json:"memory_bytes"`
	Before      map[string]int64 `json:"before"` // before New
	After       map[string]int64 `json:"after"`  // after New and full-size Runs
	// HeapBefore, HeapNew and HeapRun are the Go heap's live bytes (after
	// a GC) before New, after it and after the Runs; Sys what the runtime
	// got from the OS.
	HeapBefore, HeapNew, HeapRun, Sys uint64
}

// runMemoryHelper is the measured process: RSS before New, then New and
// Runs of MaxBatch x MaxSequence random tokens, then the peak.
func runMemoryHelper() error {
	fields := []string{"VmRSS", "VmHWM", "RssAnon", "RssFile"}
	var r memoryReport
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.HeapBefore = ms.HeapAlloc
	var err error
	if r.Before, err = procStatus(fields...); err != nil {
		return err
	}
	m, err := sentimentmodel.New()
	if err != nil {
		return err
	}
	defer m.Close()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.HeapNew = ms.HeapAlloc
	rng := rand.New(rand.NewPCG(1, 2))
	b := sentimentmodel.Batch{InputIDs: make([][]int64, sentimentmodel.MaxBatch)}
	for i := range b.InputIDs {
		b.InputIDs[i] = make([]int64, sentimentmodel.MaxSequence)
		for j := range b.InputIDs[i] {
			b.InputIDs[i][j] = rng.Int64N(sentimentmodel.VocabSize)
		}
	}
	for range 3 {
		if _, err := m.Run(context.Background(), b); err != nil {
			return err
		}
	}
	if r.After, err = procStatus(fields...); err != nil {
		return err
	}
	r.MemoryBytes = m.MemoryBytes()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.HeapRun, r.Sys = ms.HeapAlloc, ms.Sys
	return json.NewEncoder(os.Stdout).Encode(r)
}

// TestMemoryBytesMatchesRSS runs the model in a fresh process (this test
// binary re-executed) at MaxBatch x MaxSequence and compares the growth
// of its peak resident set, from before New to after the Runs, with
// MemoryBytes: at least 0.9 times, at most 1.25 times plus the
// tokenizer's vocabulary (measured: New's heap growth). The weights are resident once,
// as the pages of the embedded weights.bin (read in place on
// little-endian hosts), and the workspace on the Go heap; the tokenizer's
// vocabulary and the runtime's own memory are the uncounted rest.
func TestMemoryBytesMatchesRSS(t *testing.T) {
	if os.Getenv(memoryHelperEnv) == "1" {
		if err := runMemoryHelper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory dwarfs what the model holds")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryBytesMatchesRSS$", "-test.count=1")
	cmd.Env = append(os.Environ(), memoryHelperEnv+"=1", "GOMAXPROCS=2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	var r memoryReport
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&r); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	weightsBin := int64(len(mustRead(t, "sentimentmodel/weights.bin")))
	peakGrowth := r.After["VmHWM"] - r.Before["VmRSS"]
	anonGrowth := r.After["RssAnon"] - r.Before["RssAnon"]
	fileGrowth := r.After["RssFile"] - r.Before["RssFile"]
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	t.Logf("Go heap live before New %s, after it %s, after the Runs %s; runtime Sys %s",
		mib(int64(r.HeapBefore)), mib(int64(r.HeapNew)), mib(int64(r.HeapRun)), mib(int64(r.Sys)))
	t.Logf("MemoryBytes %s; weights.bin %s; RSS before New %s; peak RSS growth %s (anonymous %s, file-backed %s) = %.3f x MemoryBytes",
		mib(r.MemoryBytes), mib(weightsBin), mib(r.Before["VmRSS"]), mib(peakGrowth), mib(anonGrowth), mib(fileGrowth),
		float64(peakGrowth)/float64(r.MemoryBytes))
	if peakGrowth < r.MemoryBytes*9/10 {
		t.Errorf("peak RSS grew %s, less than 0.9 x MemoryBytes %s: MemoryBytes overstates", mib(peakGrowth), mib(r.MemoryBytes))
	}
	// New's heap besides the weights (read in place on little-endian
	// hosts) is the tokenizer's vocabulary, which MemoryBytes leaves out.
	tokenizer := int64(0)
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		tokenizer = int64(r.HeapNew) - int64(r.HeapBefore)
	}
	if limit := r.MemoryBytes*5/4 + tokenizer; peakGrowth > limit {
		t.Errorf("peak RSS grew %s, more than 1.25 x MemoryBytes %s + the tokenizer's %s: memory is held that MemoryBytes misses (weights twice?)",
			mib(peakGrowth), mib(r.MemoryBytes), mib(tokenizer))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
