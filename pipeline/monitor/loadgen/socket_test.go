package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// TestMonitorOverUnixSocket serves a monitor on a Unix socket and drives
// it as a client does with unix:PATH: ingest, events and /metrics.
func TestMonitorOverUnixSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.sock")
	ln, err := monitor.Listen(monitor.UnixPrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	base := monitor.BaseURL(ln)
	if base != monitor.UnixPrefix+path {
		t.Errorf("BaseURL = %q, want %q", base, monitor.UnixPrefix+path)
	}
	srv, err := monitor.New(monitor.Options{Config: Config(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()

	if _, err := monitor.Listen(base); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Errorf("a second Listen on a live socket: %v, want a refusal", err)
	}
	res, err := Run(context.Background(), Options{URL: base, Sessions: 5, Rate: 50, Duration: 500 * time.Millisecond,
		TurnChunks: 10, StallAfter: 4, Stall: 200 * time.Millisecond,
		Received: func() int64 {
			n, err := monitor.ScrapeReceived(context.Background(), base, "")
			if err != nil {
				t.Errorf("metrics over the socket: %v", err)
				return -1
			}
			return n
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Lost != 0 || res.Received != res.Sent || res.Drains == 0 {
		t.Errorf("over the socket: sent %d, received %d, lost %d, drains %d; want all received and some drains",
			res.Sent, res.Received, res.Lost, res.Drains)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after the monitor stopped: %v", err)
	}
}
