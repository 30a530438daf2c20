package monitor

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts/player"
)

// TestHeardEvent: an app reports the text it gave its synthesizer, the
// audio that reached its player and what its player counted; the monitor's
// heard event holds the gap of those pieces, the player's, and the engine's
// prediction with the measured timings, alike.
func TestHeardEvent(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0)})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "lk")
	for _, m := range []string{
		`{"type":"turn_start","turn":"speech_1"}`,
		`{"type":"chunk","turn":"speech_1","text":"Hello","t_ms":1}`,
		`{"type":"speech","turn":"speech_1","text":"Hello","t_ms":1}`,
		`{"type":"audio","turn":"speech_1","audio_ms":100,"t_ms":50}`,
		`{"type":"chunk","turn":"speech_1","text":" there.","t_ms":200}`,
		`{"type":"speech","turn":"speech_1","text":"there.","t_ms":200}`,
		`{"type":"turn_end","turn":"speech_1"}`,
		`{"type":"audio","turn":"speech_1","audio_ms":60,"t_ms":400,"speech":1}`,
		`{"type":"audio","turn":"speech_1","audio_ms":40,"t_ms":410}`,
		`{"type":"playout","turn":"speech_1","start_ms":50,"gaps":[{"start_ms":150,"duration_ms":250}]}`,
	} {
		sendT(t, c, m)
	}
	h := ev.wait(t, "heard", nil)
	if h["session"] != "lk" || h["turn"] != "speech_1" || h["ttfa_ms"] != 50.0 {
		t.Fatalf("heard event %v", h)
	}
	gaps := func(field string) [][2]float64 {
		var out [][2]float64
		switch v := h[field].(type) {
		case []any:
			for _, g := range v {
				m := g.(map[string]any)
				out = append(out, [2]float64{m["at_ms"].(float64), m["duration_ms"].(float64)})
			}
		case map[string]any: // player
			for _, g := range v["gaps"].([]any) {
				m := g.(map[string]any)
				out = append(out, [2]float64{m["at_ms"].(float64), m["duration_ms"].(float64)})
			}
		}
		return out
	}
	want := [2]float64{150, 250}
	for _, field := range []string{"heard", "predicted", "player"} {
		got := gaps(field)
		if len(got) != 1 || math.Abs(got[0][0]-want[0]) > 0.01 || math.Abs(got[0][1]-want[1]) > 0.01 {
			t.Errorf("%s gaps %v, want one of %v ms at %v ms", field, got, want[1], want[0])
		}
	}
	if h["agrees"] != true || h["measured_chunks"] != 2.0 || h["speech_chunks"] != 2.0 {
		t.Errorf("agrees %v, %v of %v chunks measured; want true, 2 of 2", h["agrees"], h["measured_chunks"], h["speech_chunks"])
	}
}

// TestHeardEventFiller: a filler the app plays while a tool runs is
// heard: the tool's silence is two gaps, before and after it, and the
// engine's prediction, the LLM's speech alone, less the filler's measured
// play, is the same two gaps.
func TestHeardEventFiller(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, ts := startServer(t, Options{Config: tokenConfig(100*ms, 0), Clock: clock})
	ev := subscribe(t, ts)
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "lk")}
	m.send(`{"type":"turn_start","turn":"speech_1"}`)
	clock.Advance(ms)
	m.send(`{"type":"chunk","turn":"speech_1","text":"Hello"}`)
	m.send(`{"type":"speech","turn":"speech_1","text":"Hello"}`)
	m.send(`{"type":"audio","turn":"speech_1","audio_ms":100,"t_ms":50}`) // plays 50-150 ms
	clock.Advance(99 * ms)
	m.send(`{"type":"tool_call","turn":"speech_1","name":"get_weather"}`)
	// the app's filler: 300 ms of audio from 200 ms
	m.send(`{"type":"audio","turn":"speech_1","audio_ms":200,"t_ms":200,"filler":true}`)
	m.send(`{"type":"audio","turn":"speech_1","audio_ms":100,"t_ms":210,"filler":true}`)
	clock.Advance(750 * ms)
	m.send(`{"type":"tool_result","turn":"speech_1"}`)
	clock.Advance(50 * ms)
	m.send(`{"type":"chunk","turn":"speech_1","text":" there."}`)
	m.send(`{"type":"speech","turn":"speech_1","text":"there."}`)
	m.send(`{"type":"turn_end","turn":"speech_1"}`)
	m.send(`{"type":"audio","turn":"speech_1","audio_ms":100,"t_ms":950}`)
	m.send(`{"type":"playout","turn":"speech_1","start_ms":50,"gaps":[{"start_ms":150,"duration_ms":50},{"start_ms":500,"duration_ms":450}]}`)
	h := ev.wait(t, "heard", nil)
	gaps := func(field string) [][2]float64 {
		var out [][2]float64
		v, _ := h[field].([]any)
		for _, g := range v {
			m := g.(map[string]any)
			out = append(out, [2]float64{m["at_ms"].(float64), m["duration_ms"].(float64)})
			if c, ok := m["cause"]; field != "fillers" && (!ok || c != "tool_call") {
				t.Errorf("%s gap %v: cause %v, want tool_call", field, m, c)
			}
		}
		return out
	}
	for _, tc := range []struct {
		field string
		want  [][2]float64
	}{
		{"heard", [][2]float64{{150, 50}, {500, 450}}},
		{"predicted", [][2]float64{{150, 50}, {500, 450}}},
		{"fillers", [][2]float64{{200, 300}}},
	} {
		got := gaps(tc.field)
		ok := len(got) == len(tc.want)
		for i := range min(len(got), len(tc.want)) {
			ok = ok && math.Abs(got[i][0]-tc.want[i][0]) < 0.01 && math.Abs(got[i][1]-tc.want[i][1]) < 0.01
		}
		if !ok {
			t.Errorf("%s %v, want %v ([at ms, duration ms])", tc.field, got, tc.want)
		}
	}
	if h["agrees"] != true {
		t.Errorf("agrees %v, want true: %v", h["agrees"], h)
	}
}

// TestHeardGapsFiller: filler audio fills the start-up delay without
// starting the turn's speech, delays what arrives while it plays, and a
// silence before filler audio after the last speech is no gap.
func TestHeardGapsFiller(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	speech := func(at, audio time.Duration, chunk int) audioPiece {
		return audioPiece{at: at, audio: audio, speech: chunk}
	}
	filler := func(at, audio time.Duration) audioPiece { return audioPiece{at: at, audio: audio, speech: -1} }
	ta := &turnAudio{
		id:      "t",
		pieces:  []audioPiece{speech(300*ms, 100*ms, 0), speech(600*ms, 100*ms, 1), speech(900*ms, 100*ms, 2)},
		fillers: []audioPiece{filler(100*ms, 250*ms), filler(500*ms, 150*ms), filler(1200*ms, 50*ms)},
	}
	h := heardGaps(ta, 24000)
	// filler 100-350; speech 0 waits for it: 350-450; gap 450-500; filler
	// 500-650; speech 1 waits: 650-750; gap 750-900; speech 2 900-1000;
	// filler 1200-1250 after the last speech: no gap before it
	if !h.Started || h.Start != 350*ms || h.End != 1000*ms || h.Speech != 300*ms {
		t.Errorf("started %v at %v, ends %v, %v of speech; want at 350ms, ending 1s, 300ms", h.Started, h.Start, h.End, h.Speech)
	}
	type gap struct {
		start, d time.Duration
		chunk    int
	}
	var got []gap
	for _, g := range h.Gaps {
		got = append(got, gap{g.Start, g.Duration, g.Chunk})
	}
	if want := []gap{{450 * ms, 50 * ms, 1}, {750 * ms, 150 * ms, 2}}; !slices.Equal(got, want) {
		t.Errorf("gaps %+v, want %+v", got, want)
	}
	if want := []player.Span{{Start: 100 * ms, Duration: 250 * ms}, {Start: 500 * ms, Duration: 150 * ms}, {Start: 1200 * ms, Duration: 50 * ms}}; !slices.Equal(h.Fillers, want) {
		t.Errorf("fillers %+v, want %+v", h.Fillers, want)
	}
}

// TestSpeechMessagesRefused: audio without a turn, before any speech, of
// a chunk that does not exist, or after the playout is refused.
func TestSpeechMessagesRefused(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0)})
	c := ingest(t, ts, "")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	for _, tc := range []struct{ msg, want string }{
		{`{"type":"audio","turn":"nope","audio_ms":10}`, "no turn of that name"},
		{`{"type":"audio","turn":"t1","audio_ms":10}`, "audio before any speech"},
		{`{"type":"speech","turn":"t1","text":"Hi"}`, ""},
		{`{"type":"audio","turn":"t1","audio_ms":10,"speech":3}`, "but 1 speech messages came"},
		{`{"type":"playout","turn":"t1"}`, ""},
		{`{"type":"audio","turn":"t1","audio_ms":10}`, "its playout has come already"},
	} {
		sendT(t, c, tc.msg)
		if tc.want == "" {
			continue
		}
		m := readMsg(t, c)
		if m["type"] != "error" || m["reason"] != "rejected" || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("%s: answered %v, want a rejection saying %q", tc.msg, m, tc.want)
		}
	}
}
