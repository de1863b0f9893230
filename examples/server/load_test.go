package main

import (
	"bytes"
	"flag"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The CI run is short; loadtest.sh runs the full one (60 s, 64 clients).
var (
	loadDuration = flag.Duration("load.duration", 3*time.Second, "TestLoad: how long to attack")
	loadClients  = flag.Int("load.clients", 64, "TestLoad: concurrent clients")
	loadTexts    = flag.Int("load.texts", 256, "TestLoad: distinct sentences")
	loadMaxReqs  = flag.Int64("load.max-requests", 2_000_000, "TestLoad: stop after this many requests")
	loadRSSLimit = flag.Int64("load.rss-limit-mb", 256, "TestLoad, TestOverload: peak RSS bound")
)

// attack runs clients closed-loop vegeta workers (each sends its next
// request when the last is answered) against addr's /predict for d, at
// most maxReqs requests, cycling through bodies; check sees every result
// with the index of its body.
func attack(addr string, bodies [][]byte, clients int, d time.Duration, maxReqs int64, check func(i int, r *vegeta.Result)) vegeta.Metrics {
	var next atomic.Int64
	header := http.Header{"Content-Type": {"application/json"}}
	targeter := func(tgt *vegeta.Target) error {
		i := int(next.Add(1)-1) % len(bodies)
		*tgt = vegeta.Target{Method: http.MethodPost, URL: addr + "/predict?i=" + strconv.Itoa(i), Body: bodies[i], Header: header}
		return nil
	}
	atk := vegeta.NewAttacker(vegeta.Workers(uint64(clients)), vegeta.MaxWorkers(uint64(clients)),
		vegeta.Connections(clients), vegeta.KeepAlive(true), vegeta.MaxBody(-1), vegeta.Timeout(30*time.Second))
	var m vegeta.Metrics
	var n int64
	for r := range atk.Attack(targeter, vegeta.Rate{Freq: 0}, d, "load") {
		m.Add(r)
		if u, err := url.Parse(r.URL); err == nil {
			i, _ := strconv.Atoi(u.Query().Get("i"))
			check(i, r)
		}
		if n++; n >= maxReqs {
			atk.Stop()
		}
	}
	m.Close()
	return m
}

func report(t *testing.T, name string, clients int, m vegeta.Metrics, rss int64) {
	t.Logf("%s: %d requests in %s, %d clients: throughput %.1f req/s, latency p50 %s p99 %s max %s, status codes %v, peak RSS %.1f MB",
		name, m.Requests, m.Duration.Round(time.Millisecond), clients, m.Throughput, m.Latencies.P50.Round(10*time.Microsecond),
		m.Latencies.P99.Round(10*time.Microsecond), m.Latencies.Max.Round(10*time.Microsecond), m.StatusCodes, float64(rss)/(1<<20))
}

// TestLoad: many concurrent clients, mixed-length SST-2 sentences against
// the real server process: no errors, every answer the bytes of the same
// request sent alone, bounded memory.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not in -short")
	}
	p := startServer(t)
	texts := sentences(t, *loadTexts)
	ref := alone(t, p.addr, texts)
	bodies := make([][]byte, len(texts))
	for i, text := range texts {
		bodies[i] = predictBody(text)
	}
	var bad atomic.Int64
	cpu0 := p.cpuTime()
	m := attack(p.addr, bodies, *loadClients, *loadDuration, *loadMaxReqs, func(i int, r *vegeta.Result) {
		if r.Code != 200 || !bytes.Equal(r.Body, ref[i]) {
			if bad.Add(1) <= 5 {
				t.Errorf("%q: status %d error %q body %s; alone %s", texts[i], r.Code, r.Error, r.Body, ref[i])
			}
		}
	})
	rss := p.peakRSS()
	report(t, "load", *loadClients, m, rss)
	if cpu := p.cpuTime() - cpu0; cpu > 0 && m.Requests > 0 {
		t.Logf("load: server process CPU %s, %s per request", cpu.Round(time.Millisecond), (cpu / time.Duration(m.Requests)).Round(time.Microsecond))
	}
	if bad.Load() > 0 || m.Success != 1 {
		t.Errorf("%d of %d answers wrong or failed (success ratio %g)", bad.Load(), m.Requests, m.Success)
	}
	if rss > *loadRSSLimit<<20 {
		t.Errorf("peak RSS %d MB, bound %d MB", rss>>20, *loadRSSLimit)
	}
	if accepted, answered, err := p.stop(t); err != nil || accepted != answered {
		t.Errorf("after the load: exit %v, %d accepted, %d answered", err, accepted, answered)
	}
}

// TestOverload: clients at 4x the server's --max-concurrent-requests get
// 429s (never another error, never a crash); the admitted requests are
// answered right, memory stays bounded, the server stays healthy.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not in -short")
	}
	const capacity = 8
	p := startServer(t, "--max-concurrent-requests", strconv.Itoa(capacity))
	texts := sentences(t, 64)
	ref := alone(t, p.addr, texts)
	bodies := make([][]byte, len(texts))
	for i, text := range texts {
		bodies[i] = predictBody(text)
	}
	var bad, ok429 atomic.Int64
	m := attack(p.addr, bodies, 4*capacity, 2*time.Second, 200_000, func(i int, r *vegeta.Result) {
		switch {
		case r.Code == 429 && bytes.Contains(r.Body, []byte(`"error_type":"Overloaded"`)):
			ok429.Add(1)
		case r.Code == 200 && bytes.Equal(r.Body, ref[i]):
		default:
			if bad.Add(1) <= 5 {
				t.Errorf("%q: status %d error %q body %s", texts[i], r.Code, r.Error, r.Body)
			}
		}
	})
	rss := p.peakRSS()
	report(t, "overload (4x)", 4*capacity, m, rss)
	if ok429.Load() == 0 {
		t.Error("no 429 at 4x capacity")
	}
	if m.StatusCodes["200"] == 0 {
		t.Error("no request succeeded under overload")
	}
	if rss > *loadRSSLimit<<20 {
		t.Errorf("peak RSS %d MB, bound %d MB", rss>>20, *loadRSSLimit)
	}
	resp, err := http.Get(p.addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after overload: /health %v %v", resp, err)
	}
	resp.Body.Close()
	if _, _, err := p.stop(t); err != nil {
		t.Errorf("exit after overload: %v", err)
	}
}

// TestShutdownUnderLoad: SIGTERM while clients keep sending: the server
// stops accepting, answers every request it accepted (the client got a
// 200 for each one), and exits 0.
func TestShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not in -short")
	}
	p := startServer(t, "--shutdown-timeout", "30s")
	texts := sentences(t, 64)
	var got200, other atomic.Int64
	stopClients := make(chan struct{})
	done := make(chan struct{})
	const clients = 32
	for c := range clients {
		go func() {
			defer func() { done <- struct{}{} }()
			// A connection per request: an idle keep-alive connection closed
			// by the shutdown is a client-side race, not a lost request.
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
			for i := c; ; i += clients {
				select {
				case <-stopClients:
					return
				default:
				}
				resp, err := client.Post(p.addr+"/predict", "application/json", bytes.NewReader(predictBody(texts[i%len(texts)])))
				if err != nil { // refused or reset: not accepted
					time.Sleep(5 * time.Millisecond)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					got200.Add(1)
				} else if resp.StatusCode != 503 {
					other.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	accepted, answered, exitErr := p.stop(t)
	close(stopClients)
	for range clients {
		<-done
	}
	t.Logf("shutdown under load: server accepted %d, answered %d; clients got %d 200s, %d other statuses", accepted, answered, got200.Load(), other.Load())
	if exitErr != nil {
		t.Errorf("exit status after SIGTERM: %v, want 0", exitErr)
	}
	if accepted == 0 || accepted != answered || got200.Load() != accepted || other.Load() != 0 {
		t.Errorf("accepted %d, answered %d, clients got %d 200s and %d other statuses: want all equal, none other", accepted, answered, got200.Load(), other.Load())
	}
}
