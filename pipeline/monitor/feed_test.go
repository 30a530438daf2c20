package monitor

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestFeedMatchesOfflineAnalysis feeds a recorded turn into a monitor at
// its real pace and checks the monitor raises exactly the underruns that
// offline analysis of the same turn finds. The turn compared is the one
// the monitor recorded: a chunk whose t_ms runs ahead of the monitor's
// clock for the turn (its turn_start came late, on a busy machine) is
// timed at most 25 ms ahead, by design, and the recording says so.
func TestFeedMatchesOfflineAnalysis(t *testing.T) {
	t.Parallel()
	cfg := tokenConfig(60*time.Millisecond, 20*time.Millisecond)
	ms := time.Millisecond
	turn := &pipeline.Turn{ID: "kitchen/t1", Session: "kitchen", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
		{At: 40 * ms, Text: "Sure", Tokens: 1}, {At: 70 * ms, Text: ",", Tokens: 1}, {At: 100 * ms, Text: " the", Tokens: 1},
		{At: 380 * ms, Text: " oven", Tokens: 1}, // a stall: the player runs dry
		{At: 400 * ms, Text: " is", Tokens: 1}, {At: 420 * ms, Text: " on.", Tokens: 1},
	}}
	offline, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(offline.Underruns) == 0 {
		t.Fatal("the test turn has no underrun offline")
	}
	st, ev, rec := feedOne(t, cfg, turn)
	if st.Sessions != 1 || st.Turns != 1 || st.Messages != 8 || st.Refused != 0 {
		t.Errorf("feed stats %+v", st)
	}
	sum := ev.wait(t, "turn", nil)
	if sum["session"] != "kitchen" || sum["turn"] != "t1" {
		t.Errorf("turn summary %v: want session kitchen, turn t1", sum)
	}
	// the turn as the monitor timed it, once its end is recorded
	waitFor(t, func() bool { return strings.Contains(rec.String(), `"type":"end"`) })
	recorded, err := trace.NewNativeReader(strings.NewReader(rec.String()), "recording").Next()
	if err != nil || len(recorded.Chunks) != len(turn.Chunks) {
		t.Fatalf("recording: %v, %d chunks", err, len(recorded.Chunks))
	}
	for i, c := range recorded.Chunks {
		if c.At != turn.Chunks[i].At {
			t.Logf("chunk %d timed at %v, sent with t_ms %v: the monitor's clock for the turn started late; the underruns are compared with the turn as recorded", i, c.At, turn.Chunks[i].At)
			if offline, err = pipeline.Play(cfg, recorded); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if got := ev.count("underrun"); got != len(offline.Underruns) {
		t.Fatalf("%d underrun events, want %d", got, len(offline.Underruns))
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	i := 0
	for _, m := range ev.list {
		if m["type"] != "underrun" {
			continue
		}
		u := offline.Underruns[i]
		i++
		if d := m["duration_ms"].(float64); math.Abs(d-pipeline.Millis(u.Duration)) > 1e-6 {
			t.Errorf("live underrun %d lasts %.6f ms, offline %.6f ms", i, d, pipeline.Millis(u.Duration))
		}
		if a := m["at_ms"].(float64); math.Abs(a-pipeline.Millis(u.Start)) > 1e-6 {
			t.Errorf("live underrun %d starts at %.6f ms, offline %.6f ms", i, a, pipeline.Millis(u.Start))
		}
	}
}

// feedOne feeds turn, as a native trace, into a monitor of engine cfg
// that records, and returns the feed's stats, the monitor's events and
// its recording.
func feedOne(t *testing.T, cfg pipeline.Config, turn *pipeline.Turn) (FeedStats, *events, *testkit.Buffer) {
	t.Helper()
	var native strings.Builder
	if err := trace.NewWriter(&native, "test").WriteTurn(turn); err != nil {
		t.Fatal(err)
	}
	rec := &testkit.Buffer{}
	_, ts := startServer(t, Options{Config: cfg, Record: rec})
	ev := subscribe(t, ts)
	st, err := Feed(context.Background(), trace.NewNativeReader(strings.NewReader(native.String()), "turn"), FeedOptions{URLs: []string{ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return st, ev, rec
}

// TestFeedToolCall: a recorded turn with a tool call feeds as tool_call
// and tool_result at their times; the monitor hears its silence as the
// tool's, as offline analysis does, and records the call as it came.
func TestFeedToolCall(t *testing.T) {
	t.Parallel()
	cfg := tokenConfig(60*time.Millisecond, 20*time.Millisecond)
	ms := time.Millisecond
	turn := &pipeline.Turn{ID: "kitchen/t1", Session: "kitchen", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
		{At: 20 * ms, Text: "Let", Tokens: 1}, {At: 30 * ms, Text: " me", Tokens: 1}, {At: 40 * ms, Text: " check.", Tokens: 1},
		{At: 460 * ms, Text: " It", Tokens: 1}, {At: 470 * ms, Text: " is", Tokens: 1}, {At: 480 * ms, Text: " on.", Tokens: 1},
	}, ToolCalls: []pipeline.ToolCall{{At: 45 * ms, Duration: 400 * ms, Name: "oven_status"}}}
	offline, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(offline.Underruns) != 1 || offline.Underruns[0].Cause != pipeline.CauseTool {
		t.Fatalf("offline gaps %+v: the test wants one tool-call silence", offline.Underruns)
	}
	st, ev, rec := feedOne(t, cfg, turn)
	if st.Messages != 10 || st.Refused != 0 {
		t.Errorf("feed stats %+v, want 10 messages (with the tool call and its result), none refused", st)
	}
	ev.wait(t, "turn", nil)
	waitFor(t, func() bool { return strings.Contains(rec.String(), `"type":"end"`) })
	recorded, err := trace.NewNativeReader(strings.NewReader(rec.String()), "recording").Next()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded.ToolCalls, turn.ToolCalls) {
		t.Logf("tool calls recorded as %+v, fed as %+v: the monitor's clock for the turn started late", recorded.ToolCalls, turn.ToolCalls)
	}
	if offline, err = pipeline.Play(cfg, recorded); err != nil {
		t.Fatal(err)
	}
	if n := ev.count("underrun"); n != 0 {
		t.Errorf("%d underrun events, want none", n)
	}
	g := ev.wait(t, "tool_silence", nil)
	if d := g["duration_ms"].(float64); len(offline.Underruns) != 1 || math.Abs(d-pipeline.Millis(offline.Underruns[0].Duration)) > 1e-6 {
		t.Errorf("live tool silence of %.6f ms; offline %+v", d, offline.Underruns)
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	turns := []*pipeline.Turn{
		{Start: t0.Add(500 * ms), Chunks: []pipeline.Chunk{{At: 100 * ms}}},
		{Start: t0, Chunks: []pipeline.Chunk{{At: 900 * ms}}},
		{Chunks: []pipeline.Chunk{{At: 10 * ms}}}, // no start: after the latest end so far
	}
	got := schedule(turns)
	want := []time.Duration{500 * ms, 0, 900 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("turn %d starts at %v, want %v", i, got[i], want[i])
		}
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	tests := []struct{ base, session, want string }{
		{"http://127.0.0.1:8765", "s1", "ws://127.0.0.1:8765/ingest?session=s1"},
		{"https://mon.example.com/", "", "wss://mon.example.com/ingest"},
		{"127.0.0.1:9", "a b", "ws://127.0.0.1:9/ingest?session=a+b"},
		{"ws://h:1/ingest", "x", "ws://h:1/ingest?session=x"},
	}
	for _, tc := range tests {
		got, err := IngestURL(tc.base, tc.session)
		if err != nil || got != tc.want {
			t.Errorf("IngestURL(%q, %q) = %q, %v; want %q", tc.base, tc.session, got, err, tc.want)
		}
	}
	if _, err := IngestURL("ftp://x", ""); err == nil {
		t.Error("ftp:// accepted")
	}
}

// TestShard: the values of a reference implementation (the jump consistent
// hash of Lamping and Veach's paper over FNV-1a 64, written in Python for
// this table), so that apps in other languages can check theirs.
func TestShard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		session string
		n, want int
	}{
		{"kitchen", 3, 0},
		{"car", 3, 1},
		{"desk", 3, 0},
		{"kitchen", 10, 3},
		{"call-000017", 7, 4},
		{"", 5, 1},
		{"sess-42", 1000, 714},
		{"kitchen", 1, 0},
		{"kitchen", 0, 0}, // taken as one monitor
	}
	for _, tc := range tests {
		if got := Shard(tc.session, tc.n); got != tc.want {
			t.Errorf("Shard(%q, %d) = %d, want %d", tc.session, tc.n, got, tc.want)
		}
	}
}

// TestShardSpreadsAndMovesLittle: sessions spread evenly, and a fleet grown
// by one monitor moves only sessions that go to the new one.
func TestShardSpreadsAndMovesLittle(t *testing.T) {
	t.Parallel()
	const names = 30000
	for n := 1; n <= 8; n++ {
		count := make([]int, n)
		moved := 0
		for i := range names {
			s := "call-" + itoa(i)
			k := Shard(s, n)
			count[k]++
			if k2 := Shard(s, n+1); k2 != k {
				moved++
				if k2 != n {
					t.Fatalf("growing %d -> %d monitors moved %s from %d to %d, not to the new one", n, n+1, s, k, k2)
				}
			}
		}
		for k, c := range count {
			if share := float64(c) / names; math.Abs(share-1/float64(n)) > 0.03/float64(n)+0.005 {
				t.Errorf("%d monitors: monitor %d gets %.3f of the sessions, want about %.3f", n, k, share, 1/float64(n))
			}
		}
		if share := float64(moved) / names; math.Abs(share-1/float64(n+1)) > 0.02 {
			t.Errorf("growing %d -> %d monitors moved %.3f of the sessions, want about %.3f", n, n+1, share, 1/float64(n+1))
		}
	}
}

// TestFeedShardsSessions feeds a trace of twelve sessions into three
// monitors: each session reaches the monitor Shard names for it, and only
// that one.
func TestFeedShardsSessions(t *testing.T) {
	t.Parallel()
	const monitors, sessions = 3, 12
	recs := make([]*testkit.Buffer, monitors)
	srvs := make([]*Server, monitors)
	urls := make([]string, monitors)
	for i := range monitors {
		recs[i] = &testkit.Buffer{}
		var ts *httptest.Server
		srvs[i], ts = startServer(t, Options{Record: recs[i]})
		urls[i] = ts.URL
	}
	var native strings.Builder
	w := trace.NewWriter(&native, "test")
	want := make([]int, monitors)
	for i := range sessions {
		s := "room" + itoa(i)
		want[Shard(s, monitors)]++
		if err := w.WriteTurn(&pipeline.Turn{ID: s + "/t1", Session: s, Status: pipeline.StatusOK,
			Chunks: []pipeline.Chunk{{At: time.Millisecond, Text: "Hi", Tokens: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Feed(context.Background(), trace.NewNativeReader(strings.NewReader(native.String()), "rooms"), FeedOptions{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != sessions || st.Refused != 0 || !slices.Equal(st.PerMonitor, want) {
		t.Errorf("feed stats %+v, want %d sessions spread %v", st, sessions, want)
	}
	for i, s := range srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		r := trace.NewNativeReader(strings.NewReader(recs[i].String()), "rec")
		turns := testkit.All(t, r.Next)
		if len(turns) != want[i] {
			t.Errorf("monitor %d recorded %d turns, want %d", i, len(turns), want[i])
		}
		for _, tn := range turns {
			if k := Shard(tn.Session, monitors); k != i {
				t.Errorf("session %s reached monitor %d, want %d", tn.Session, i, k)
			}
		}
	}
}
