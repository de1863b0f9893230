package goroutines

import (
	"testing"
	"time"
)

func startParked(stop chan struct{}) {
	go func() { <-stop }()
}

func TestCreatedByCountsAndWaits(t *testing.T) {
	const creator = "github.com/sqc-dev/sqc/internal/goroutines.startParked"
	if got := CreatedBy(creator); got != 0 {
		t.Fatalf("%d goroutines before any was started", got)
	}
	stop := make(chan struct{})
	for range 3 {
		startParked(stop)
	}
	go func() { <-stop }() // created by the test: not counted
	if got := CreatedBy(creator); got != 3 {
		t.Errorf("CreatedBy = %d after 3 starts, want 3", got)
	}
	close(stop)
	if got := WaitCreatedBy(creator, 0, 5*time.Second); got != 0 {
		t.Errorf("%d goroutines left 5 s after they were released", got)
	}
}
