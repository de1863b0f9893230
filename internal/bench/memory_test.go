package bench

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestResetPeakRSS touches 64 MiB, frees it, resets the peak and checks
// that the peak then reads below what it was.
func TestResetPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		if err := ResetPeakRSS(); err == nil {
			t.Error("ResetPeakRSS succeeded without /proc/self/clear_refs")
		}
		t.Skip("needs Linux")
	}
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i)
	}
	_, before, ok := RSS()
	if !ok {
		t.Fatal("RSS unknown on Linux")
	}
	runtime.KeepAlive(big)
	big = nil
	runtime.GC()
	debug.FreeOSMemory()
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	cur, after, _ := RSS()
	t.Logf("peak %d MiB before the reset, %d MiB after (RSS %d MiB)", before>>20, after>>20, cur>>20)
	if after > before-32<<20 {
		t.Errorf("peak %d bytes after the reset, %d before: not reset", after, before)
	}
}

// TestRunMemory benchmarks bert-tiny and checks the memory report: what
// the program holds adds up, and on Linux the run's peak is measured
// apart from the build's and gives the ratio.
func TestRunMemory(t *testing.T) {
	r, err := Run(Options{Source: Source{Config: "bert-tiny"}, Batch: 2, Seq: 16, Threads: 1, Measure: MeasureOptions{Runs: 3, Warmup: 1}})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Memory
	if m == nil || m.Held == nil {
		t.Fatalf("no memory report: %+v", m)
	}
	h := m.Held
	if sum := h.PackedGEMMBytes + h.GEMMParamBytes + h.EmbeddingBytes + h.NormParamBytes + h.F32LinearBytes + h.ConstantBytes; h.WeightBytes != sum || sum == 0 {
		t.Errorf("weights %d, parts add up to %d", h.WeightBytes, sum)
	}
	// bert-tiny: 30522 x 128 f32 word embeddings alone are 15.6 MB.
	if h.EmbeddingBytes < 30522*128*4 || h.PackedGEMMBytes == 0 || h.I8InitializerBytes != 0 {
		t.Errorf("held %+v", h)
	}
	if h.ArenaBytes != h.ActivationBytes+h.ScratchBytes || h.ActivationBytes < 2*16*128*4 || h.PlannedArenaBytes <= 0 {
		t.Errorf("arena %+v", h)
	}
	if runtime.GOOS == "linux" {
		if m.RunPeakRSSBytes < m.StartRSSBytes || m.StartRSSBytes <= 0 || m.BuildPeakRSSBytes < m.StartRSSBytes || r.PeakRSSBytes < m.BuildPeakRSSBytes {
			t.Errorf("RSS: start %d, run peak %d, build peak %d, process peak %d", m.StartRSSBytes, m.RunPeakRSSBytes, m.BuildPeakRSSBytes, r.PeakRSSBytes)
		}
		if want := float64(m.RunPeakRSSBytes) / float64(h.WeightBytes+h.ArenaBytes); m.Ratio != want {
			t.Errorf("ratio %g, want %g", m.Ratio, want)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memory     weights", "+ arena", "run RSS", "peak RSS"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"memory":{`, `"weight_bytes":`, `"arena_bytes":`, `"run_peak_rss_bytes":`, `"ratio":`} {
		if !strings.Contains(string(js), key) && (runtime.GOOS == "linux" || !strings.Contains(key, "rss") && key != `"ratio":`) {
			t.Errorf("JSON lacks %s: %s", key, js)
		}
	}
}
