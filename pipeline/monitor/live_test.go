package monitor

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/plot"
	"github.com/speech-pipeline/underrun/tts"
)

// liveScene drives a monitor on a manual clock into the state the live
// page tests look at (each token is 100 ms of audio, ready at once):
//   - "gone" streamed a turn with a 200 ms interruption and closed;
//   - "n10" and "n9" are connected and idle;
//   - "multi" has two turns open: a's player ran dry 50 ms ago (a drained
//     at 100 ms, its last event underrun_started), b has 3 s buffered.
func liveScene(t *testing.T, opts Options) (*Server, *httptest.Server, *pipeline.ManualClock) {
	t.Helper()
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.Clock = clock
	s, ts := startServer(t, opts)
	ev := subscribe(t, ts)
	gone := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "gone")}
	gone.send(`{"type":"turn_start","turn":"x"}`)
	gone.send(`{"type":"chunk","turn":"x","text":"Hi"}`)
	clock.Advance(300 * time.Millisecond)
	gone.send(`{"type":"chunk","turn":"x","text":" there"}`)
	clock.Advance(time.Second)
	gone.send(`{"type":"turn_end","turn":"x"}`)
	ev.wait(t, "turn", nil)
	gone.c.Close()
	ev.wait(t, "session_close", nil)
	sent := gone.sent
	for _, id := range []string{"n10", "n9"} {
		ingest(t, ts, id)
	}
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "multi"), sent: sent}
	m.send(`{"type":"turn_start","turn":"a"}`)
	m.send(`{"type":"chunk","turn":"a","text":"Hi"}`)
	clock.Advance(150 * time.Millisecond) // a's player runs dry at 100 ms
	ev.wait(t, "underrun_started", func(e map[string]any) bool { return e["session"] == "multi" })
	m.send(`{"type":"turn_start","turn":"b"}`)
	for i := range 30 {
		m.send(fmt.Sprintf(`{"type":"chunk","turn":"b","text":" w%d"}`, i))
	}
	return s, ts, clock
}

// snapshotOf fetches /api/snapshot for a session.
func snapshotOf(t *testing.T, ts *httptest.Server, session string) map[string]any {
	t.Helper()
	resp, err := http.Get(ts.URL + "/api/snapshot?session=" + session)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("snapshot %s: %v", b, err)
	}
	return m
}

// TestLiveDataPerTurn checks what the live page is sent: a row and a chart
// per turn's player, totals that keep closed sessions, idle sessions in
// numeric order.
func TestLiveDataPerTurn(t *testing.T) {
	t.Parallel()
	_, ts, _ := liveScene(t, Options{})
	snap := snapshotOf(t, ts, "multi")
	var order []string
	var multi map[string]any
	for _, r := range snap["sessions"].([]any) {
		row := r.(map[string]any)
		order = append(order, row["session"].(string))
		if row["session"] == "multi" {
			multi = row
		}
	}
	if got, want := strings.Join(order, " "), "multi n9 n10"; got != want {
		t.Errorf("table order %q, want %q (the dry session first, idle ones by number)", got, want)
	}
	if multi["state"] != StateUnderrun || multi["turn"] != "a" || multi["open_turns"] != 2.0 || multi["buffered_ms"] != 0.0 {
		t.Errorf("multi's row %v, want turn a's dry player, of 2 open", multi)
	}
	totals := snap["totals"].(map[string]any)
	for k, want := range map[string]float64{"sessions": 3, "closed": 1, "dry": 1, "interruptions": 1, "turns": 1, "underrun_ms": 200} {
		if got := totals[k]; got != want {
			t.Errorf("totals[%s] = %v, want %v (closed sessions count)", k, got, want)
		}
	}
	var kinds []string
	for _, e := range snap["events"].([]any) {
		kinds = append(kinds, e.(map[string]any)["type"].(string))
	}
	if got, want := strings.Join(kinds, " "), "session_open underrun_started"; got != want {
		t.Errorf("the snapshot's recent events of multi: %q, want %q", got, want)
	}
	turns := snap["chart"].(map[string]any)["turns"].([]any)
	if len(turns) != 2 {
		t.Fatalf("chart of %d turns, want a and b", len(turns))
	}
	for _, tr := range turns {
		h := tr.(map[string]any)
		gaps, _ := h["gaps"].([]any)
		samples := h["samples"].([]any)
		lastSample := samples[len(samples)-1].([]any)
		switch h["turn"] {
		case "a":
			if len(gaps) != 1 || gaps[0].([]any)[1] != 0.0 || lastSample[1] != 0.0 {
				t.Errorf("turn a: gaps %v, last sample %v; want its player dry, nothing buffered", gaps, lastSample)
			}
		case "b":
			if len(gaps) != 0 || lastSample[1] != 3000.0 || lastSample[2] != 3000.0 {
				t.Errorf("turn b: gaps %v, last sample %v; want no gap, 3 s buffered and ready", gaps, lastSample)
			}
		default:
			t.Errorf("chart turn %v", h["turn"])
		}
	}
}

// TestLiveHistoryOnConnect: a page gets the recent events of the session
// it charts as soon as it connects, and those of another when it selects
// it; live events carry seq numbers to merge them with.
func TestLiveHistoryOnConnect(t *testing.T) {
	t.Parallel()
	_, ts, _ := liveScene(t, Options{SnapshotInterval: time.Hour})
	page := dialT(t, ts, "/live?session=multi", nil)
	if m := readMsg(t, page); m["type"] != "hello" {
		t.Fatalf("first message %v, want hello", m)
	}
	kinds := func(m map[string]any, session string) []string {
		t.Helper()
		if m["type"] != "history" || m["session"] != session {
			t.Fatalf("message %v, want the history of %s", m, session)
		}
		var out []string
		last := 0.0
		for _, e := range m["events"].([]any) {
			ev := e.(map[string]any)
			if seq := ev["seq"].(float64); seq <= last {
				t.Errorf("history out of order: seq %v after %v", seq, last)
			} else {
				last = seq
			}
			out = append(out, ev["type"].(string))
		}
		return out
	}
	if got, want := strings.Join(kinds(readMsg(t, page), "multi"), " "), "session_open underrun_started"; got != want {
		t.Errorf("multi's history %q, want %q", got, want)
	}
	if err := page.WriteJSON(map[string]string{"select": "n9"}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(kinds(readMsg(t, page), "n9"), " "), "session_open"; got != want {
		t.Errorf("n9's history %q, want %q", got, want)
	}
}

// TestLiveBacklogMatchesTimeline: the live chart's two measures of audio
// not yet played are, at every sample, those the offline timeline of the
// same turn draws at that moment: one name, one quantity.
func TestLiveBacklogMatchesTimeline(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cfg := pipeline.DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy("word")
	cfg.Synth = tts.Synth{Mode: tts.ModeRequest, TTFA: 120 * ms, RTF: 0.5}
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, ts := startServer(t, Options{Config: cfg, Clock: clock})
	ev := subscribe(t, ts)
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "a")}
	m.send(`{"type":"turn_start","turn":"t1"}`)
	words := strings.Fields("Sure, the station is north of the river, past the market and the second bridge.")
	turn := &pipeline.Turn{ID: "t1", Status: pipeline.StatusOK}
	var at time.Duration
	for i, w := range words {
		step := 60 * ms
		if i == 4 {
			step = 900 * ms // a stall
		}
		clock.Advance(step)
		at += step
		text := " " + w
		if i == 0 {
			text = w
		}
		m.send(fmt.Sprintf(`{"type":"chunk","turn":"t1","text":%q}`, text))
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: text, Tokens: 1})
		s.Sessions() // a sample between tokens, as each snapshot takes
	}
	var samples []any
	var begin float64
	for _, tr := range snapshotOf(t, ts, "a")["chart"].(map[string]any)["turns"].([]any) {
		samples = tr.(map[string]any)["samples"].([]any)
	}
	begin = unixMs(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m.send(`{"type":"turn_end","turn":"t1"}`)
	ev.wait(t, "turn", nil)

	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	tl := plot.NewTimeline(turn, p)
	peak := 0.0
	for _, x := range samples {
		sm := x.([]any)
		tt := time.Duration(math.Round((sm[0].(float64) - begin) * 1e6))
		if tt >= at {
			// offline, the turn's end releases what the policy still
			// holds at the last chunk; live, when turn_end comes
			continue
		}
		// a chunk that comes at tt makes a step there, and so may a
		// chunk's first frame: a sample taken just before the guard took
		// the chunk has the left limit of either
		want, left := tl.BacklogAt(tt), tl.BacklogAt(tt-1)
		near := func(got float64, limits ...time.Duration) bool {
			for _, d := range limits {
				if math.Abs(got-pipeline.Millis(d)) < 1e-3 {
					return true
				}
			}
			return false
		}
		if !near(sm[1].(float64), want.Buffered, left.Buffered) || !near(sm[2].(float64), want.Ready, left.Ready) {
			t.Errorf("at %v the live chart has buffered %.3f ms, ready %.3f ms; the timeline %v, %v", tt, sm[1], sm[2], want.Buffered, want.Ready)
		}
		peak = max(peak, sm[1].(float64))
	}
	if len(samples) < len(words) || peak == 0 {
		t.Fatalf("%d samples, peak %.0f ms: the test saw nothing", len(samples), peak)
	}
	// the timeline's curves are the same quantities at their breakpoints
	for _, c := range []struct {
		name  string
		curve []float64
		of    func(pipeline.Backlog) time.Duration
	}{
		{"buffered", tl.BufferedCurve(), func(b pipeline.Backlog) time.Duration { return b.Buffered }},
		{"ready", tl.ReadyCurve(), func(b pipeline.Backlog) time.Duration { return b.Ready }},
	} {
		for i := 0; i+1 < len(c.curve); i += 2 {
			if i+3 < len(c.curve) && c.curve[i+2] == c.curve[i] {
				continue // the left limit of a step
			}
			tt := time.Duration(math.Round(c.curve[i] * 1e9))
			if got, want := c.curve[i+1], c.of(tl.BacklogAt(tt)).Seconds(); math.Abs(got-want) > 1e-6 {
				t.Errorf("%s curve at %v: %.6f s, BacklogAt %.6f s", c.name, tt, got, want)
			}
		}
	}
}

// TestLivePageTurnsHistoryTotals loads the live page in headless Chromium
// on the scene of liveScene: the chart and the gap list are per turn (turn
// a dry, b not, though b has 3 s buffered), the events before the page
// came are listed, the totals keep the closed session, idle sessions come
// in numeric order, and both measures of audio are named.
func TestLivePageTurnsHistoryTotals(t *testing.T) {
	// not parallel: the browser is heavy, and the timing tests of the
	// package run after it, not beside it
	bin := chromium(t)
	_, ts, _ := liveScene(t, Options{SnapshotInterval: 50 * time.Millisecond})
	wants := []*regexp.Regexp{
		regexp.MustCompile(`<tr data-session="multi" data-state="underrun" class="sel"><td>multi</td><td class="state">underrun</td><td>a \(of 2 open\)</td>`),
		regexp.MustCompile(`<li data-turn="a" data-class="dry">turn a: player dry for \d+ ms`),
		regexp.MustCompile(`id="chart-summary" data-turns="2" data-open="2" data-tokens="31" data-gaps="1" data-dry="1" data-closed="false">[^<]*player dry now in turn a<`),
		regexp.MustCompile(`<li data-kind="underrun_started" data-session="multi" data-seq="\d+">[^<]*multi/a underrun_started at 100 ms, after token 0</li>`),
		regexp.MustCompile(`<li data-kind="session_open" data-session="multi"`),
		regexp.MustCompile(`<b id="n-interruptions">1</b>`),
		regexp.MustCompile(`<b id="n-closed">1</b>`),
		regexp.MustCompile(`<tr data-session="n9" [^>]*>.*<tr data-session="n10" `),
		regexp.MustCompile(`buffered: released to the synthesizer, not yet played`),
		regexp.MustCompile(`ready at the player, not yet played`),
	}
	dom := loadPage(t, bin, ts.URL+"/?session=multi")
	for _, want := range wants {
		if !want.MatchString(dom) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if regexp.MustCompile(`<li data-turn="b" data-class="dry">`).MatchString(dom) {
		t.Error("the page shows turn b's player dry: it has 3 s buffered")
	}
	if t.Failed() {
		logPage(t, dom)
	}
}

// TestClosedSessionsKept: the monitor keeps the ClosedKept sessions that
// closed last for its pages, newest first, each with its row, its chart
// (its turns and their gaps, up to its close) and its events; an older one
// is dropped, so the memory they take is bounded.
func TestClosedSessionsKept(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{})
	ev := subscribe(t, ts)
	for i := range ClosedKept + 2 {
		id := fmt.Sprintf("c%d", i)
		c := ingest(t, ts, id)
		sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
		sendT(t, c, `{"type":"chunk","turn":"t1","text":"Hi","t_ms":0}`)
		sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
		c.Close()
		ev.wait(t, "session_close", func(m map[string]any) bool { return m["session"] == id })
	}
	snap := snapshotOf(t, ts, "c33")
	closed := snap["closed"].([]any)
	if len(closed) != ClosedKept {
		t.Fatalf("%d closed sessions kept, want %d", len(closed), ClosedKept)
	}
	first, last := closed[0].(map[string]any), closed[len(closed)-1].(map[string]any)
	if first["session"] != "c33" || last["session"] != "c2" || first["state"] != StateClosed || first["turns"] != 1.0 || first["closed_unix_ms"].(float64) <= 0 {
		t.Errorf("closed rows from %v to %v, want c33 (newest) to c2", first, last)
	}
	chart := snap["chart"].(map[string]any)
	turns := chart["turns"].([]any)
	if chart["closed_ms"] != first["closed_unix_ms"] || len(turns) != 1 || turns[0].(map[string]any)["turn"] != "t1" {
		t.Errorf("the closed session's chart %v", chart)
	}
	var kinds []string
	for _, e := range snap["events"].([]any) {
		kinds = append(kinds, e.(map[string]any)["type"].(string))
	}
	if got := strings.Join(kinds, " "); !strings.HasPrefix(got, "session_open") || !strings.HasSuffix(got, "turn") {
		t.Errorf("the closed session's events: %q", got)
	}
	if snap := snapshotOf(t, ts, "c0"); snap["chart"] != nil || len(snap["events"].([]any)) != 0 {
		t.Errorf("c0, the oldest, is still kept: %v", snap["chart"])
	}
}
