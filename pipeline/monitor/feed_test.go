package monitor

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestFeedMatchesOfflineAnalysis feeds a recorded turn into a monitor at
// its real pace and checks the monitor raises exactly the underruns that
// offline analysis of the same turn finds.
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
	var native strings.Builder
	if err := trace.NewWriter(&native, "test").WriteTurn(turn); err != nil {
		t.Fatal(err)
	}

	_, ts := startServer(t, Options{Config: cfg})
	ev := subscribe(t, ts)
	st, err := Feed(context.Background(), trace.NewNativeReader(strings.NewReader(native.String()), "turn"), FeedOptions{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 1 || st.Turns != 1 || st.Messages != 8 || st.Refused != 0 {
		t.Errorf("feed stats %+v", st)
	}
	sum := ev.wait(t, "turn", 2*time.Second, nil)
	if sum["session"] != "kitchen" || sum["turn"] != "t1" {
		t.Errorf("turn summary %v: want session kitchen, turn t1", sum)
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
