//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestMonitorSIGTERMUnderLoad starts the monitor as its own process,
// streams sessions into it, sends SIGTERM mid-stream, and checks that the
// recording is complete and readable: every accepted message is in it and
// every turn has its end.
func TestMonitorSIGTERMUnderLoad(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	// no grace period to run out on a busy machine: the shutdown is waited for
	mon := startMonitorProcess(t, "--record", rec, "--events", "", "--grace", "10m")
	url := "ws" + strings.TrimPrefix(mon.url, "http")

	// 20 sessions, each streaming turns of 20 chunks every 2 ms
	var wg sync.WaitGroup
	for i := range 20 {
		c, _, err := websocket.DefaultDialer.Dial(url+"/ingest?session=app"+strconv.Itoa(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			send := func(m string) bool { return c.WriteMessage(websocket.TextMessage, []byte(m)) == nil }
			for turn := 0; ; turn++ {
				id := `"t` + strconv.Itoa(turn) + `"`
				if !send(`{"type":"turn_start","turn":` + id + `}`) {
					return
				}
				for k := range 20 {
					if !send(`{"type":"chunk","turn":` + id + `,"text":" w` + strconv.Itoa(k) + `"}`) {
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				if !send(`{"type":"turn_end","turn":` + id + `}`) {
					return
				}
			}
		}()
	}
	// SIGTERM once the monitor has taken 200 messages (however long a busy
	// machine takes to get there), while the sessions are mid-stream
	waitAccepted(t, mon.url, 200)
	if err := mon.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-mon.done
	if err := mon.cmd.Wait(); err != nil {
		t.Fatalf("monitor after SIGTERM: %v", err)
	}
	wg.Wait()
	m := regexp.MustCompile(`stopped; (\d+) messages accepted`).FindStringSubmatch(mon.rest.String())
	if m == nil {
		t.Fatalf("the monitor did not report what it accepted: %s", mon.rest.String())
	}
	accepted, _ := strconv.Atoi(m[1])

	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := trace.NewNativeReader(f, rec)
	records := 0
	for _, turn := range testkit.All(t, r.Next) {
		records += 1 + len(turn.Chunks) // turn_start and chunks
		switch turn.Status {
		case pipeline.StatusOK:
			records++ // its turn_end
		case pipeline.StatusIncomplete: // open at SIGTERM
		default:
			t.Errorf("turn %s ended %s", turn.ID, turn.Status)
		}
	}
	if records != accepted || accepted < 100 {
		t.Errorf("the recording holds %d messages, the monitor accepted %d", records, accepted)
	}
}

// waitAccepted waits until the monitor at url reports n messages accepted
// on /metrics.
func waitAccepted(t *testing.T, url string, n float64) {
	t.Helper()
	for {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		got := 0.0
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "underrun_messages_total{"); ok {
				if _, v, ok := strings.Cut(rest, "} "); ok {
					x, _ := strconv.ParseFloat(v, 64)
					got += x
				}
			}
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
