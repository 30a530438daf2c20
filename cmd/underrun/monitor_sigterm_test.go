//go:build unix

package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
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
	cmd := exec.Command(os.Args[0], "monitor", "--listen", "127.0.0.1:0", "--record", rec, "--events", "")
	cmd.Env = append(os.Environ(), "UNDERRUN_TEST_EXEC=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		if m := listenRe.FindStringSubmatch(lines.Text()); m != nil {
			url = "ws://" + m[1]
		}
	}
	if url == "" {
		t.Fatal("the monitor never said where it listens")
	}
	var rest strings.Builder
	restDone := make(chan struct{})
	go func() {
		io.Copy(&rest, stderr)
		close(restDone)
	}()

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
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("monitor after SIGTERM: %v", err)
	}
	wg.Wait()
	<-restDone
	m := regexp.MustCompile(`stopped; (\d+) messages accepted`).FindStringSubmatch(rest.String())
	if m == nil {
		t.Fatalf("the monitor did not report what it accepted: %s", rest.String())
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
