package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// TestTokenFields: "token" names the chunk an underrun blames, counted
// from 0 and sent even when it is 0; "last_token" names the last chunk
// that had arrived when the buffer drained or the tolerance fell. The
// subscriber messages and the event log use the same names.
func TestTokenFields(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		rtf       float64
		gapAfter  time.Duration // before the second chunk
		lastToken float64       // of underrun_started
		token     float64       // of the underrun
	}{
		// the player drains 100 ms after chunk 0; chunk 1 comes 400 ms
		// after it and is the one that came late
		{"stall", 0, 400 * ms, 0, 1},
		// a synthesizer at half real time starves the player inside chunk
		// 0: the late audio is chunk 0's own
		{"slow synthesizer", 2, 50 * ms, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			cfg := tokenConfig(100*ms, 0)
			cfg.Synth.RTF = tc.rtf
			cfg.Interruption = 10 * ms
			var log testkit.Buffer
			s, ts := startServer(t, Options{Config: cfg, Clock: clock, Logger: zerolog.New(&log)})
			ev := subscribe(t, ts)
			m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "a")}
			m.send(`{"type":"turn_start","turn":"t1"}`)
			m.send(`{"type":"chunk","turn":"t1","text":"Hi"}`)
			clock.Advance(tc.gapAfter)
			m.send(`{"type":"chunk","turn":"t1","text":" there"}`)
			clock.Advance(time.Second)
			m.send(`{"type":"turn_end","turn":"t1"}`)
			ev.wait(t, "turn", nil)
			drain := ev.wait(t, "underrun_started", nil)
			u := ev.wait(t, "underrun", nil)
			if got, ok := drain["last_token"].(float64); !ok || got != tc.lastToken {
				t.Errorf("underrun_started last_token %v, want %v: %v", drain["last_token"], tc.lastToken, drain)
			}
			if _, ok := drain["token"]; ok {
				t.Errorf("underrun_started carries token (the chunk an underrun blames is not known yet): %v", drain)
			}
			if got, ok := u["token"].(float64); !ok || got != tc.token {
				t.Errorf("underrun token %v, want %v: %v", u["token"], tc.token, u)
			}
			// the event log says the same under the same names
			logged := map[string]map[string]any{}
			sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
			for sc.Scan() {
				var e map[string]any
				if json.Unmarshal(sc.Bytes(), &e) == nil {
					if k, _ := e["event"].(string); k != "" && logged[k] == nil {
						logged[k] = e
					}
				}
			}
			if d := logged["underrun_started"]; d == nil || d["last_token"] != tc.lastToken || d["token"] != nil {
				t.Errorf("logged underrun_started %v, want last_token %v and no token", d, tc.lastToken)
			}
			if l := logged["underrun"]; l == nil || l["token"] != tc.token {
				t.Errorf("logged underrun %v, want token %v", l, tc.token)
			}
		})
	}
}
