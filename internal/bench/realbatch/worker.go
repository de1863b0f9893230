package realbatch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/sqc-dev/sqc/internal/bench"
)

// Process is one worker process speaking the peer protocol on its stdin
// and stdout.
type Process struct {
	Name  string
	Modes []string // from its hello line
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
}

// helloTimeout bounds a worker's start-up (model build or export load: BERT-large
// in ONNX Runtime takes ~20 s).
const helloTimeout = 10 * time.Minute

// Start runs command (a shell command line, leading VAR=value words
// allowed) in its own process group, with its stderr going to log, and
// waits for its hello line.
func Start(name, command string, log io.Writer) (*Process, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stderr = log
	setProcessGroup(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("worker %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(make([]byte, 64<<10), 16<<20)
	// Not bench.Hello: the harness's workers send load_s as an object.
	var hello struct {
		Ready bool     `json:"ready"`
		Modes []string `json:"modes"`
	}
	if err := p.read(&hello, helloTimeout); err != nil {
		p.kill()
		return nil, fmt.Errorf("worker %s (%s): no hello line: %w", name, command, err)
	}
	if !hello.Ready || len(hello.Modes) == 0 {
		p.kill()
		return nil, fmt.Errorf("worker %s (%s): hello without ready and modes", name, command)
	}
	p.Modes = hello.Modes
	return p, nil
}

// HasMode reports whether the worker offers mode.
func (p *Process) HasMode(mode string) bool {
	for _, m := range p.Modes {
		if m == mode {
			return true
		}
	}
	return false
}

// runTimeout bounds one run call (bert-large 32x128 in FP32 on one slow
// core is about a minute).
const runTimeout = 10 * time.Minute

// Run times one forward pass of a batch, sending lengths when given.
func (p *Process) Run(mode string, batch []int, lengths bool) (float64, error) {
	req := bench.Request{Op: "run", Mode: mode, Batch: len(batch), Seq: slices.Max(batch), N: 1}
	if lengths {
		req.Lengths = batch
	}
	if err := p.send(req); err != nil {
		return 0, fmt.Errorf("worker %s: run %s: %w", p.Name, mode, err)
	}
	var rep bench.Reply
	if err := p.read(&rep, runTimeout); err != nil {
		return 0, fmt.Errorf("worker %s: run %s: %w", p.Name, mode, err)
	}
	if rep.Error != "" {
		return 0, fmt.Errorf("worker %s: run %s %dx%d: %s", p.Name, mode, req.Batch, req.Seq, rep.Error)
	}
	if len(rep.Ms) != 1 || !(rep.Ms[0] > 0) {
		return 0, fmt.Errorf("worker %s: run %s replied ms %v, want one positive time", p.Name, mode, rep.Ms)
	}
	return rep.Ms[0], nil
}

func (p *Process) send(req bench.Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		// A worker that died before reading fails the write (broken pipe)
		// rather than the read: say the same as read does.
		return fmt.Errorf("worker exited or closed its input: %w", err)
	}
	return nil
}

// read decodes the next line into v, failing after timeout.
func (p *Process) read(v any, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		if !p.out.Scan() {
			err := p.out.Err()
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			done <- fmt.Errorf("worker exited or closed its output: %w", err)
			return
		}
		line := p.out.Bytes()
		if err := json.Unmarshal(line, v); err != nil {
			done <- fmt.Errorf("reply %q is not JSON: %w", truncate(string(line), 80), err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		p.kill() // unblocks the reader
		return fmt.Errorf("no reply within %v", timeout)
	}
}

// quitTimeout is how long Close waits for a worker to answer quit and exit.
const quitTimeout = 30 * time.Second

// Close asks the worker to quit and waits for it, killing its process
// group if it does not exit in time.
func (p *Process) Close() error {
	err := p.send(bench.Request{Op: "quit"})
	if err == nil {
		var rep bench.Reply
		if err = p.read(&rep, quitTimeout); err == nil && !rep.Bye {
			err = errors.New("quit not answered with bye")
		}
	}
	p.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case werr := <-exited:
		if err == nil && werr != nil {
			err = werr
		}
	case <-time.After(quitTimeout):
		p.kill()
		<-exited
	}
	if err != nil {
		return fmt.Errorf("worker %s: %w", p.Name, err)
	}
	return nil
}

func (p *Process) kill() { killProcessGroup(p.cmd) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
