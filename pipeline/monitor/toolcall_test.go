package monitor

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestToolCallIsNotAnUnderrun: a turn's stream stops for a tool call
// after its first token. The drain says the silence is the tool's, the
// gap comes as a tool_silence event and not as an underrun, the turn is
// good, the metrics count it apart, and the recording keeps the call, so
// that analysing it finds the same silence.
func TestToolCallIsNotAnUnderrun(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var rec testkit.Buffer
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := tokenConfig(100*ms, 50*ms)
	s, ts := startServer(t, Options{Config: cfg, Clock: clock, Record: &rec})
	ev := subscribe(t, ts)
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "kitchen")}
	m.send(`{"type":"turn_start","turn":"t1"}`)
	m.send(`{"type":"chunk","turn":"t1","text":"Sure"}`) // plays 50-150 ms
	clock.Advance(10 * ms)
	m.send(`{"type":"tool_call","turn":"t1","name":"get_weather"}`)
	clock.Advance(1000 * ms)
	m.send(`{"type":"tool_result","turn":"t1"}`)
	clock.Advance(10 * ms)
	m.send(`{"type":"chunk","turn":"t1","text":" sunny"}`) // ready at 1070 ms
	clock.Advance(10 * ms)
	m.send(`{"type":"turn_end","turn":"t1"}`)

	if call := ev.wait(t, "tool_call", nil); call["name"] != "get_weather" || call["at_ms"] != 10.0 {
		t.Errorf("tool_call event %v, want get_weather at 10 ms", call)
	}
	if d := ev.wait(t, "underrun_started", nil); d["cause"] != string(pipeline.CauseTool) || d["at_ms"] != 150.0 {
		t.Errorf("underrun_started %v, want the tool call's at 150 ms", d)
	}
	if g := ev.wait(t, "tool_silence", nil); math.Abs(g["duration_ms"].(float64)-920) > 1e-6 {
		t.Errorf("tool_silence %v, want 920 ms", g)
	}
	turn := ev.wait(t, "turn", nil)
	if turn["interruptions"] != 0.0 || turn["glitches"] != 0.0 || turn["tool_silences"] != 1.0 || math.Abs(turn["tool_silence_ms"].(float64)-920) > 1e-6 {
		t.Errorf("turn summary %v, want no underrun and one 920 ms tool silence", turn)
	}
	if n := ev.count("underrun"); n != 0 {
		t.Errorf("%d underrun events, want none", n)
	}
	for name, want := range map[string]float64{
		"underrun_tool_silences_total":        1,
		"underrun_tool_silence_seconds_total": 0.92,
		"underrun_interruptions_total":        0,
		"underrun_glitches_total":             0,
		"underrun_good_turns_total":           1,
	} {
		if got := testCounter(t, s, name); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	m.c.Close()
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	turns := testkit.All(t, trace.NewNativeReader(strings.NewReader(rec.String()), "rec.jsonl").Next)
	if len(turns) != 1 {
		t.Fatalf("%d turns recorded, want 1:\n%s", len(turns), rec.String())
	}
	want := []pipeline.ToolCall{{At: 10 * ms, Duration: 1000 * ms, Name: "get_weather"}}
	if got := turns[0].ToolCalls; !slices.Equal(got, want) {
		t.Errorf("recorded tool calls %+v, want %+v", got, want)
	}
	p, err := pipeline.Play(cfg, turns[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) != 1 || p.Underruns[0].Cause != pipeline.CauseTool || p.Underruns[0].Duration != 920*ms {
		t.Errorf("the recording analyses to %+v, want one 920 ms tool-call silence", p.Underruns)
	}
}

// TestToolMessagesRefused: a tool_result without a call running, a tool
// call timed before the last chunk, and a tool name too long are refused,
// saying why.
func TestToolMessagesRefused(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{})
	c := ingest(t, ts, "")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	for _, tc := range []struct{ msg, reason, want string }{
		{`{"type":"tool_result","turn":"t1"}`, reasonRejected, `turn "t1" has no tool call running`},
		{`{"type":"chunk","turn":"t1","text":"a","t_ms":5}`, "", ""},
		{`{"type":"tool_call","turn":"t1","t_ms":2}`, reasonRejected, "tool call: t_ms 2.000 is before the last chunk's 5.000"},
		{`{"type":"tool_call","turn":"t1","name":"` + strings.Repeat("x", MaxName+1) + `"}`, reasonMalformed, `field "name": want at most 256 bytes`},
		{`{"type":"tool_call","turn":"t2"}`, reasonRejected, "not streaming"},
	} {
		sendT(t, c, tc.msg)
		if tc.want == "" {
			continue
		}
		m := readMsg(t, c)
		if m["type"] != "error" || m["reason"] != tc.reason || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("%s: answered %v, want an error (%s) saying %q", tc.msg, m, tc.reason, tc.want)
		}
	}
}
