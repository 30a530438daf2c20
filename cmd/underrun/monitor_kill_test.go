//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestMonitorSIGKILLAfterBurstKeepsRecording: a monitor process killed
// (SIGKILL, no chance to flush) right after a burst of messages has the
// whole burst in its recording. The burst is 400 messages on 8 sessions;
// once the monitor has accepted them all, one more turn starts whose 30 ms
// of audio drains at once: the moment its underrun_started event arrives,
// 30 ms of the monitor's own clock have passed since the burst, ten times
// the recording's 2 ms, and the monitor is killed.
// monitorProcess is a monitor running as a process of its own: this test
// binary as the underrun command.
type monitorProcess struct {
	cmd *exec.Cmd
	url string // http://127.0.0.1:PORT
	// rest is its standard error after the line saying where it listens,
	// complete once done is closed
	rest strings.Builder
	done chan struct{}
}

// startMonitorProcess starts `underrun monitor --listen 127.0.0.1:0 args...`
// and waits until it says where it listens; the test's end kills it.
func startMonitorProcess(t *testing.T, args ...string) *monitorProcess {
	t.Helper()
	return startProcess(t, append([]string{"monitor", "--listen", "127.0.0.1:0"}, args...)...)
}

// startProcess starts underrun (this test binary) with args, a command
// that serves, and waits for it to say where it listens (an
// http://127.0.0.1:PORT on stderr); the test's end kills it.
func startProcess(t *testing.T, args ...string) *monitorProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UNDERRUN_TEST_EXEC=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &monitorProcess{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	for p.url == "" && lines.Scan() {
		if m := listenRe.FindStringSubmatch(lines.Text()); m != nil {
			p.url = "http://" + m[1]
		}
	}
	go func() {
		io.Copy(&p.rest, stderr)
		close(p.done)
	}()
	if p.url == "" {
		t.Fatal("the monitor never said where it listens")
	}
	return p
}

func TestMonitorSIGKILLAfterBurstKeepsRecording(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	mon := startMonitorProcess(t, "--record", rec, "--events", "",
		"--chunking", "token", "--token-audio", "30ms", "--tts-latency", "0", "--rtf", "0", "--burst", "1000")
	url := mon.url
	ws := "ws" + strings.TrimPrefix(url, "http")
	events, _, err := websocket.DefaultDialer.Dial(ws+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if _, _, err := events.ReadMessage(); err != nil { // hello: every event from now on comes
		t.Fatal(err)
	}

	const sessions, chunks = 8, 48 // 8 x (turn_start + 48 chunks + turn_end) = 400
	for i := range sessions {
		c := dialSession(t, url, "app"+strconv.Itoa(i))
		id := `"t` + strconv.Itoa(i) + `"`
		msgs := []string{`{"type":"turn_start","turn":` + id + `}`}
		for k := range chunks {
			msgs = append(msgs, `{"type":"chunk","turn":`+id+`,"text":" w`+strconv.Itoa(k)+`","t_ms":`+strconv.Itoa(k)+`}`)
		}
		msgs = append(msgs, `{"type":"turn_end","turn":`+id+`}`)
		for _, m := range msgs {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const burst = sessions * (chunks + 2)
	ctx, cancel := context.WithDeadline(context.Background(), testDeadline(t))
	defer cancel()
	for {
		n, err := monitor.ScrapeReceived(ctx, url, "")
		if err != nil {
			t.Fatal(err)
		}
		if n == burst {
			break
		}
		if n > burst || ctx.Err() != nil {
			t.Fatalf("the monitor accepted %d messages, want %d", n, burst)
		}
		time.Sleep(time.Millisecond)
	}
	clock := dialSession(t, url, "clock")
	for _, m := range []string{`{"type":"turn_start","turn":"c"}`, `{"type":"chunk","turn":"c","text":"tick"}`} {
		if err := clock.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	events.SetReadDeadline(testDeadline(t))
	for {
		_, data, err := events.ReadMessage()
		if err != nil {
			t.Fatalf("no underrun_started from the clock session: %v", err)
		}
		if strings.Contains(string(data), `"type":"underrun_started"`) && strings.Contains(string(data), `"session":"clock"`) {
			break
		}
	}
	if err := mon.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	mon.cmd.Wait()

	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := trace.NewNativeReader(f, rec)
	records, turns := 0, 0
	for _, tn := range testkit.All(t, r.Next) { // the recording after SIGKILL
		turns++
		records += 1 + len(tn.Chunks)
		if tn.Status != "incomplete" {
			records++ // its end
		}
	}
	if want := burst + 2; records != want || turns != sessions+1 {
		t.Errorf("the recording after SIGKILL holds %d records of %d turns, want all %d of %d", records, turns, want, sessions+1)
	}
}
