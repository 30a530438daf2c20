package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// testDeadline is the deadline of a wait for something that must come: a
// second before the test's own (none without one), so that a busy machine
// makes a test slow, not wrong.
func testDeadline(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Second)
	}
	return time.Now().Add(24 * time.Hour)
}

// dialSession opens an ingest session on the monitor at base, trying again
// while the name is still taken by a session the monitor is closing (409),
// and reads the hello.
func dialSession(t *testing.T, base, session string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + "/ingest?session=" + session
	for deadline := testDeadline(t); ; time.Sleep(5 * time.Millisecond) {
		c, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			if _, _, err := c.ReadMessage(); err != nil { // hello
				t.Fatal(err)
			}
			return c
		}
		if resp == nil || resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("dial %s: %v", url, err)
		}
	}
}

// TestMonitorRecordingWithReusedTurnIDs: an app that names every turn "t1"
// (as the README's clients do) and reconnects under the same session name
// gets a recording that analyze, convert and monitor feed all read, each
// turn under a name of its own; fed into a second monitor, it records
// again under the same names.
func TestMonitorRecordingWithReusedTurnIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recA, recB, conv := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "conv.jsonl")
	a := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--record", recA, "--events", "")
	send := func(c *websocket.Conn, msgs ...string) {
		t.Helper()
		for _, m := range msgs {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	turn := func(c *websocket.Conn, id, text string) {
		t.Helper()
		send(c, `{"type":"turn_start","turn":"`+id+`"}`, `{"type":"chunk","turn":"`+id+`","text":"`+text+`","t_ms":20}`,
			`{"type":"turn_end","turn":"`+id+`"}`)
	}
	c := dialSession(t, a.url, "kitchen")
	turn(c, "t1", "Sure.")
	turn(c, "t1", "Again.")
	turn(c, "t1#2", "Mine.") // an id of the client's own that looks like a suffixed one
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break // the monitor has closed the session
		}
	}
	c = dialSession(t, a.url, "kitchen") // the same session name again
	turn(c, "t1", "Back.")
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
	}
	if code := a.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, a.stderr.String())
	}
	names := func(path string) string {
		t.Helper()
		var s []string
		for _, tn := range readTurns(t, path) {
			s = append(s, tn.ID+"="+tn.Chunks[0].Text)
		}
		return strings.Join(s, " ")
	}
	want := "kitchen/t1=Sure. kitchen/t1#2=Again. kitchen/t1#2#2=Mine. kitchen/t1#3=Back."
	if got := names(recA); got != want {
		t.Fatalf("recorded %s, want %s", got, want)
	}

	if code, out, errOut := runCLI(t, "", "analyze", "--per-turn", recA); code == exitUsage || !strings.Contains(out, "kitchen/t1#3") {
		t.Errorf("analyze: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "convert", recA, "-o", conv); code != exitOK {
		t.Errorf("convert: exit %d: %s", code, errOut)
	} else if got := names(conv); got != want {
		t.Errorf("converted %s, want %s", got, want)
	}
	b := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--record", recB, "--events", "")
	code, out, errOut := runCLI(t, "", "monitor", "feed", recA, "--monitor", b.url)
	if code != exitOK || !strings.Contains(out, "fed 4 turns of 1 sessions: 12 messages, 0 refused") {
		t.Fatalf("feed: exit %d: %s%s", code, out, errOut)
	}
	if code := b.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, b.stderr.String())
	}
	// feed sends the turns' ends as their last chunks come, which need not
	// be in the order the turns began
	sorted := func(s string) string { f := strings.Fields(s); slices.Sort(f); return strings.Join(f, " ") }
	if got := names(recB); sorted(got) != sorted(want) {
		t.Errorf("fed and recorded again: %s, want %s", got, want)
	}
}
