//go:build unix

package main

import (
	"errors"
	"io"
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
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestMonitorSIGTERMUnderLoad starts the monitor as its own process,
// streams sessions into it, sends SIGTERM mid-stream, and checks that the
// recording is complete and readable: every accepted message is in it and
// every turn has its end.
func TestMonitorSIGTERMUnderLoad(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	mon := startMonitorProcess(t, "--record", rec, "--events", "")
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
	time.Sleep(400 * time.Millisecond)
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
	for {
		turn, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("recording: %v", err)
		}
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
