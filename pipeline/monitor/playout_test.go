package monitor

import (
	"math"
	"strings"
	"testing"
	"time"
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
