package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestRecorderNames: a name the recording holds already gets the first
// free suffix, whatever made it taken (a reused turn id, a session that
// connected again, a client's own id that looks like a suffixed one).
func TestRecorderNames(t *testing.T) {
	t.Parallel()
	r := newRecorder(io.Discard, time.Millisecond, DefaultRecordBacklog, zerolog.Nop())
	defer r.close()
	tests := []struct{ session, turn, want string }{
		{"kitchen", "t1", "kitchen/t1"},
		{"kitchen", "t1", "kitchen/t1#2"},
		{"car", "t1", "car/t1"},
		{"kitchen", "t1#2", "kitchen/t1#2#2"}, // the client's own "t1#2"
		{"kitchen", "t1", "kitchen/t1#3"},
		{"kitchen", "t1#3", "kitchen/t1#3#2"},
		{"kitchen", "t1", "kitchen/t1#4"},
		{"kitchen", "t2", "kitchen/t2"},
	}
	for _, tc := range tests {
		if got := r.begin(tc.session, tc.turn, time.Time{}); got != tc.want {
			t.Errorf("begin(%q, %q) = %q, want %q", tc.session, tc.turn, got, tc.want)
		}
	}
}

// TestRecordedReusedTurnsReadBack: a session reuses its turn id, then
// connects again and reuses it once more; the recording reads back turn by
// turn as streamed, each under a name of its own.
func TestRecordedReusedTurnsReadBack(t *testing.T) {
	t.Parallel()
	var rec testkit.Buffer
	s, ts := startServer(t, Options{Record: &rec})
	turn := func(c *websocket.Conn, text string) {
		t.Helper()
		sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
		sendT(t, c, `{"type":"chunk","turn":"t1","text":"`+text+`"}`)
		sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	}
	c := ingest(t, ts, "kitchen")
	turn(c, "one")
	turn(c, "two")
	c.Close()
	// the name is free again once the monitor has closed the first session
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	c = ingest(t, ts, "kitchen")
	turn(c, "three")
	waitFor(t, func() bool { return s.Stats().Received == 9 })
	c.Close()
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := trace.NewNativeReader(strings.NewReader(rec.String()), "rec.jsonl")
	var got []string
	for {
		tn, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the recording does not read back: %v\n%s", err, rec.String())
		}
		if len(tn.Chunks) != 1 || tn.Status != pipeline.StatusOK || tn.Session != "kitchen" {
			t.Errorf("turn %s: %+v", tn.ID, tn)
		}
		got = append(got, tn.ID+"="+tn.Chunks[0].Text)
	}
	if want := "kitchen/t1=one kitchen/t1#2=two kitchen/t1#3=three"; strings.Join(got, " ") != want {
		t.Errorf("recorded %v, want %s", got, want)
	}
}

// TestRecorderWritesWithinDelay: records reach the destination a delay
// after they were accepted, with no other event to push them out; a
// write the destination holds up does not hold ingestion up until the
// backlog is full.
func TestRecorderWritesWithinDelay(t *testing.T) {
	t.Parallel()
	gate := &gateWriter{open: make(chan struct{}), waiting: make(chan struct{})}
	r := newRecorder(gate, time.Millisecond, 1<<10, zerolog.Nop())
	<-gate.waiting // the header's write, held up
	// records keep coming while the write is held up
	name := r.begin("s", "t", time.Unix(0, 1))
	for k := range 10 {
		r.chunk(name, pipeline.Chunk{At: time.Duration(k+1) * time.Millisecond, Text: "w", Tokens: 1})
	}
	close(gate.open)
	// the records written while the header's write was held up come in
	// the next write, with no further record or close
	waitFor(t, func() bool {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return strings.Count(gate.buf.String(), `"type":"chunk"`) == 10
	})
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(gate.buf.String(), "\n"); got != 12 {
		t.Errorf("%d lines written, want the header, the turn and 10 chunks:\n%s", got, gate.buf.String())
	}
}

// waitFor polls cond until it holds: however long a busy machine takes,
// up to a second before the test's own deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline, ok := t.Deadline()
	for !cond() {
		if ok && time.Until(deadline) < time.Second {
			t.Fatal("condition not met before the test's deadline")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRecordingFailsAtOnce: a recording whose destination fails after N
// bytes (a disk that fills) says so on the event log the moment it fails,
// once, while the monitor goes on taking its sessions' messages; Shutdown
// returns the error, so the command exits non-zero (issue 45).
func TestRecordingFailsAtOnce(t *testing.T) {
	t.Parallel()
	dst := &testkit.FailWriter{N: 400}
	var log testkit.Buffer
	s, ts := startServer(t, Options{Record: dst, Logger: zerolog.New(&log), FlushInterval: time.Millisecond})
	c := ingest(t, ts, "kitchen")
	sent := 0
	send := func(msg string) { sendT(t, c, msg); sent++ }
	for turn := 0; !strings.Contains(log.String(), `"event":"record_error"`); turn++ {
		if turn == 1000 {
			t.Fatalf("no record_error after %d bytes were kept: %s", len(dst.Bytes()), log.String())
		}
		id := `"t` + strconv.Itoa(turn) + `"`
		send(`{"type":"turn_start","turn":` + id + `}`)
		send(`{"type":"chunk","turn":` + id + `,"text":"Hello there"}`)
		send(`{"type":"turn_end","turn":` + id + `}`)
		waitFor(t, func() bool { return s.Stats().Received == int64(sent) })
	}
	// the monitor goes on
	send(`{"type":"turn_start","turn":"after"}`)
	send(`{"type":"chunk","turn":"after","text":"still here"}`)
	send(`{"type":"turn_end","turn":"after"}`)
	waitFor(t, func() bool { return s.Stats().Received == int64(sent) })
	if st := s.Stats(); st.Refused != 0 {
		t.Errorf("%d messages refused after the recording failed", st.Refused)
	}
	c.Close()
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, testkit.ErrDeviceFull) {
		t.Errorf("Shutdown: %v, want the recording's error", err)
	}
	if n := strings.Count(log.String(), `"event":"record_error"`); n != 1 {
		t.Errorf("%d record_error events, want 1", n)
	}
	if dst.Failed() != 1 {
		t.Errorf("%d writes reached the full destination, want the one that failed", dst.Failed())
	}
}

// TestRecordingHoldsTheLimits: a chunk of 2147483647 tokens (issue 45: it
// was recorded, and then every reader refused the whole recording while
// 33 years of speech entered the metrics) is refused with the reason; a
// turn whose chunks pass the limit together is ended as an error at the
// chunk that would pass it; the recording reads back, every turn in it.
func TestRecordingHoldsTheLimits(t *testing.T) {
	t.Parallel()
	var rec testkit.Buffer
	s, ts := startServer(t, Options{Record: &rec, FlushInterval: time.Millisecond})
	c := ingest(t, ts, "kitchen")
	refused := func(msg, why string) {
		t.Helper()
		sendT(t, c, msg)
		m := readMsg(t, c)
		if m["type"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), why) {
			t.Errorf("%s: answered %v, want an error saying %q", msg, m, why)
		}
	}
	sendT(t, c, `{"type":"turn_start","turn":"a"}`)
	refused(`{"type":"chunk","turn":"a","text":"Hi","tokens":2147483647}`, `field "tokens": want a count from 0 to 262144 tokens, got 2147483647`)
	sendT(t, c, `{"type":"chunk","turn":"a","text":"Hi"}`)
	sendT(t, c, `{"type":"turn_end","turn":"a"}`)
	sendT(t, c, `{"type":"turn_start","turn":"b"}`)
	sendT(t, c, `{"type":"chunk","turn":"b","text":"One","tokens":200000}`)
	refused(`{"type":"chunk","turn":"b","text":" two","tokens":200000}`, `turn "b": chunk 1 takes the turn past 262144 tokens; want at most that in one turn; the turn is ended as an error`)
	refused(`{"type":"chunk","turn":"b","text":" three"}`, `turn "b" is not streaming`)
	refused(`{"type":"turn_end","turn":"c","output_tokens":2147483647}`, `field "output_tokens"`)
	waitFor(t, func() bool { return s.Stats().Received+s.Stats().Refused == 9 })
	c.Close()
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	turns := testkit.All(t, trace.NewNativeReader(strings.NewReader(rec.String()), "rec.jsonl").Next)
	if len(turns) != 2 {
		t.Fatalf("%d turns read back, want 2:\n%s", len(turns), rec.String())
	}
	a, b := turns[0], turns[1]
	if a.Status != pipeline.StatusOK || len(a.Chunks) != 1 || a.Chunks[0].TokenCount() != 1 {
		t.Errorf("turn a: %s, %d chunks", a.Status, len(a.Chunks))
	}
	if b.Status != pipeline.StatusError || len(b.Chunks) != 1 || !strings.Contains(b.Error, "refused at the limits") {
		t.Errorf("turn b: %s %q, %d chunks; want an error at the limit, its first chunk kept", b.Status, b.Error, len(b.Chunks))
	}
}
