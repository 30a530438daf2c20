package speak_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/sim"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/player"
)

// toneSession is a Session of cfg speaking with toneSynth in real time,
// recording into recorded, its guard's events told to onEvent (if set),
// its player and guard closed with the test.
func toneSession(t *testing.T, ctx context.Context, cfg pipeline.Config, recorded *bytes.Buffer, onEvent func(pipeline.Event)) *speak.Session {
	t.Helper()
	pl, err := player.New(22050, player.Options{Preroll: cfg.Preroll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	go pl.Run(ctx, 0)
	p, err := speak.New(speak.Config{Engine: cfg, Synthesizer: toneSynth{}, Player: pl})
	if err != nil {
		t.Fatal(err)
	}
	guard, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: pipeline.RealClock(), OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guard.Close() })
	s, err := speak.NewSession(speak.SessionOptions{Pipeline: p, Guard: guard, Recorder: speak.NewRecorder(recorded, "test"), Rate: 22050})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSessionReplay replays a turn and then one whose chunks go back in
// time: the first is heard, compared, reported and recorded; the second
// is refused as a TurnError before anything of it is heard.
func TestSessionReplay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := pipeline.DefaultConfig()
	cfg.Synth.Mode = tts.ModeRequest
	var recorded bytes.Buffer
	s := toneSession(t, ctx, cfg, &recorded, nil)
	good := sim.ConstantTurn("t1", "One two three four.", 10*time.Millisecond, 10*time.Millisecond, nil)
	bad := &pipeline.Turn{ID: "t2", Chunks: []pipeline.Chunk{{At: 20 * time.Millisecond, Text: "Later", Tokens: 1}, {At: 10 * time.Millisecond, Text: " sooner", Tokens: 1}}}
	var heard []string
	err := s.Replay(ctx, []*pipeline.Turn{good, bad}, 0, func(st *speak.SessionTurn, res *speak.Result, cmp *speak.Comparison) error {
		heard = append(heard, st.ID())
		return nil
	})
	var te *speak.TurnError
	if !errors.As(err, &te) || te.Turn != "t2" || !errors.Is(err, pipeline.ErrOrder) {
		t.Fatalf("Replay = %v, want turn t2 refused for its order", err)
	}
	if strings.Join(heard, ",") != "t1" {
		t.Errorf("heard %q, want t1 alone", heard)
	}
	rep := s.Report()
	if len(rep.Results) != 1 || len(rep.Comparisons) != 1 || rep.Synthesizer != "tone" || rep.Mode != tts.ModeRequest {
		t.Fatalf("report: %d results, %d comparisons, %q, %s", len(rep.Results), len(rep.Comparisons), rep.Synthesizer, rep.Mode)
	}
	if j := rep.JSON(); len(j.Turns) != 1 || j.Turns[0].Turn != "t1" || j.Agrees != rep.Agrees() {
		t.Errorf("JSON = %+v", j)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "heard versus predicted") || !strings.Contains(text.String(), "tone, request mode: 4 chunks") {
		t.Errorf("WriteText = %v:\n%s", err, text.String())
	}
	// the timings come from the pipeline's chunk events, which the caller
	// hands to RecordTiming; here the heard record and the turn are in
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	r, err := speak.ReadRecording(bytes.NewReader(recorded.Bytes()), "recorded")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Heard["t1"]; !ok || !strings.Contains(recorded.String(), `"turn":"t1"`) {
		t.Errorf("recording holds no heard record of t1:\n%s", recorded.String())
	}
}

// TestSessionReplayToolCall: a replayed tool call ends the LLM's reply in
// the real pipeline as in the engine: the policy lets go of the words
// before it at once, the silence while the tool runs is heard as
// predicted, with the cause tool_call, and the recording keeps the call.
func TestSessionReplayToolCall(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := pipeline.DefaultConfig()
	cfg.Synth.Mode = tts.ModeRequest
	cfg.Policy, _ = tts.ParsePolicy("word")
	var recorded bytes.Buffer
	var mu sync.Mutex
	var events []pipeline.Event
	s := toneSession(t, ctx, cfg, &recorded, func(e pipeline.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})
	// the reply ends with a second call, after its last words
	turn := &pipeline.Turn{ID: "t1", ToolCalls: []pipeline.ToolCall{{At: 50 * ms, Duration: 800 * ms, Name: "get_weather"}, {At: 880 * ms, Duration: 30 * ms, Name: "log_answer"}}}
	for i, w := range []string{"Sure,", " let", " me", " check.", " It", " is", " sunny."} {
		at := time.Duration(10*(i+1)) * ms
		if i >= 4 {
			at += 800 * ms
		}
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	var res *speak.Result
	var cmp *speak.Comparison
	err := s.Replay(ctx, []*pipeline.Turn{turn}, 0, func(_ *speak.SessionTurn, r *speak.Result, c *speak.Comparison) error {
		res, cmp = r, c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Record.ToolCalls) != 2 || res.Record.ToolCalls[0].Name != "get_weather" || res.Record.ToolCalls[1].Name != "log_answer" {
		t.Fatalf("recorded tool calls %+v", res.Record.ToolCalls)
	}
	// the live guard was told of both calls and their returns
	mu.Lock()
	var guarded []pipeline.ToolCall
	for _, e := range events {
		if e.Kind == pipeline.EventTurn {
			guarded = e.Record.ToolCalls
		}
	}
	mu.Unlock()
	if !slices.Equal(guarded, res.Record.ToolCalls) {
		t.Errorf("the guard's tool calls %+v, want %+v", guarded, res.Record.ToolCalls)
	}
	for _, c := range res.Chunks {
		if strings.Contains(c.Text, "check.") && c.Release != 50*ms {
			t.Errorf("%q released at %v, want 50ms: the tool call ends the reply", c.Text, c.Release)
		}
	}
	if !cmp.Agrees() {
		t.Fatalf("heard differs from predicted: %+v", cmp.Pairs)
	}
	// the report says what a filler would cover of what was heard
	withFiller := cfg
	withFiller.Filler = pipeline.Filler{Kind: pipeline.FillerKeepalive, Delay: 200 * ms}
	r := pipeline.NewReport(withFiller, pipeline.ReportOptions{TPOTSLO: time.Second})
	r.Add(res.Record, cmp.Heard)
	r.Close()
	if r.ToolSilences.Count != 1 || r.Underruns.Count != 0 || r.FillerCover.TotalMs <= 0 {
		t.Fatalf("heard: %d tool-call silences, %d underruns, filler covers %v ms; want 1, 0 and some", r.ToolSilences.Count, r.Underruns.Count, r.FillerCover.TotalMs)
	}
	for _, want := range []string{`{"type":"tool","turn":"t1","t_ns":50000000,"duration_ns":800000000,"name":"get_weather"}`,
		`{"type":"tool","turn":"t1","t_ns":880000000,"duration_ns":30000000,"name":"log_answer"}`} {
		if !strings.Contains(recorded.String(), want) {
			t.Errorf("the recording lacks the tool call %s:\n%s", want, recorded.String())
		}
	}
}
