package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqc-dev/sqc/internal/dataio"
	"github.com/sqc-dev/sqc/internal/demomodel"
	"github.com/sqc-dev/sqc/internal/testmodels"
)

// The server binary, built once per test run (CGO_ENABLED=0).
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "sqc-server-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "server")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestStaticBinary: `CGO_ENABLED=0 go build` gives one static executable
// (no interpreter, no shared libraries): all a FROM scratch image needs.
func TestStaticBinary(t *testing.T) {
	f, err := elf.Open(serverBinary(t))
	if err != nil {
		t.Skipf("not an ELF platform: %v", err)
	}
	defer f.Close()
	if f.Section(".interp") != nil {
		t.Error("the binary has a dynamic loader (.interp): not static")
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// proc is a running server process.
type proc struct {
	cmd    *exec.Cmd
	addr   string // http://127.0.0.1:port
	mu     sync.Mutex
	logs   bytes.Buffer // JSON log lines
	exited chan error
}

// startServer runs the binary on a free loopback port and waits until it
// listens.
func startServer(t testing.TB, args ...string) *proc {
	t.Helper()
	p := &proc{exited: make(chan error, 1)}
	p.cmd = exec.Command(serverBinary(t), append([]string{"--hostname", "127.0.0.1", "--port", "0", "--log-format", "json"}, args...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
	})
	select {
	case a := <-addr:
		p.addr = "http://" + a
	case err := <-p.exited:
		t.Fatalf("server exited before listening: %v\n%s", err, p.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not listen within 60s:\n%s", p.logText())
	}
	return p
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// peakRSS is the process's peak resident set (VmHWM), in bytes; 0 where
// /proc is absent.
func (p *proc) peakRSS() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the CPU time (user + system) the process has used; 0 where
// /proc is absent.
func (p *proc) cpuTime() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name: state is 3, utime 14, stime 15.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// stop sends SIGTERM and returns the final log record's counts and the
// exit error (nil: status 0).
func (p *proc) stop(t testing.TB) (accepted, answered int64, exitErr error) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case exitErr = <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("server did not exit within 60s of SIGTERM")
	}
	for _, line := range strings.Split(p.logText(), "\n") {
		var rec struct {
			Msg      string
			Accepted int64 `json:"requests_accepted"`
			Answered int64 `json:"requests_answered"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "stopped" {
			return rec.Accepted, rec.Answered, exitErr
		}
	}
	t.Fatalf("no \"stopped\" log record:\n%s", p.logText())
	return
}

// sentences are the load's texts: SST-2 dev sentences (mixed lengths)
// when ../shared is there, else the demo model's calibration sentences.
func sentences(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	if shared, ok := testmodels.SharedDir(); ok {
		exs, err := dataio.ReadTexts(filepath.Join(shared, "data", "glue-sst2", "dev.tsv"))
		if err == nil {
			for _, ex := range exs {
				out = append(out, ex.Text)
			}
		}
	}
	if len(out) == 0 {
		t.Log("no ../shared/data/glue-sst2/dev.tsv: loading with the demo model's calibration sentences")
		out = strings.Split(strings.TrimSpace(demomodel.Calibration), "\n")
	}
	return out[:min(n, len(out))]
}

func predictBody(text string) []byte {
	b, _ := json.Marshal(map[string]string{"inputs": text})
	return b
}

// alone sends each text by itself, one at a time: the reference answers.
func alone(t testing.TB, addr string, texts []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(texts))
	for i, text := range texts {
		resp, err := http.Post(addr+"/predict", "application/json", bytes.NewReader(predictBody(text)))
		if err != nil {
			t.Fatal(err)
		}
		out[i], _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%q alone: %d %s", text, resp.StatusCode, out[i])
		}
	}
	return out
}
