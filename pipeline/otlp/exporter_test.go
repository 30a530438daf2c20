package otlp_test

import (
	"context"
	"errors"
	"math"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
	"github.com/speech-pipeline/underrun/scenarios"
)

// played is the built-in default turn (two stalls, an interruption)
// through the default engine, with its start time.
func played(t *testing.T, start time.Time) (*pipeline.Turn, *pipeline.Playout) {
	t.Helper()
	turn := scenarios.DefaultTurn()
	turn.Session, turn.Start, turn.Status = "s1", start, pipeline.StatusOK
	p, err := pipeline.NewPlayout(pipeline.DefaultConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PlayTurn(turn); err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) == 0 {
		t.Fatal("the default turn has no underrun: the test needs one")
	}
	return turn, p
}

func newExporter(t *testing.T, o otlp.Options) *otlp.Exporter {
	t.Helper()
	e, err := otlp.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func wantStr(t *testing.T, what string, m pcommon.Map, key, want string) {
	t.Helper()
	v, ok := m.Get(key)
	if !ok || v.Str() != want {
		t.Errorf("%s %s = %v (present %v), want %q", what, key, raw(v, ok), ok, want)
	}
}

func wantFloat(t *testing.T, what string, m pcommon.Map, key string, want float64) {
	t.Helper()
	v, ok := m.Get(key)
	if !ok || math.Abs(v.Double()-want) > 1e-9 {
		t.Errorf("%s %s = %v (present %v), want %v", what, key, raw(v, ok), ok, want)
	}
}

func wantInt(t *testing.T, what string, m pcommon.Map, key string, want int) {
	t.Helper()
	v, ok := m.Get(key)
	if !ok || v.Int() != int64(want) {
		t.Errorf("%s %s = %v (present %v), want %d", what, key, raw(v, ok), ok, want)
	}
}

func raw(v pcommon.Value, ok bool) any {
	if !ok {
		return nil
	}
	return v.AsRaw()
}

// genAIKeys lists a map's gen_ai.* keys.
func genAIKeys(m pcommon.Map) []string {
	var keys []string
	for k := range m.All() {
		if strings.HasPrefix(k, "gen_ai.") {
			keys = append(keys, k)
		}
	}
	return keys
}

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentID = "00f067aa0ba902b7"
)

// lastHist returns the latest copy of a histogram metric's single point.
func lastHist(t *testing.T, rcv *otlptest.Receiver, name string) pmetric.HistogramDataPoint {
	t.Helper()
	ms := rcv.Metric(name)
	if len(ms) == 0 {
		t.Fatalf("no metric %s; got %v", name, rcv.MetricNames())
	}
	m := ms[len(ms)-1]
	if m.Type() != pmetric.MetricTypeHistogram || m.Histogram().DataPoints().Len() != 1 {
		t.Fatalf("%s: %v with %d points, want one histogram point", name, m.Type(), m.Histogram().DataPoints().Len())
	}
	if m.Unit() != "s" && name != "gen_ai.client.token.usage" {
		t.Errorf("%s: unit %q, want s", name, m.Unit())
	}
	return m.Histogram().DataPoints().At(0)
}

// TestExportTurn sends one played turn with a traceparent (the app's own
// LLM span) to a real OTLP/HTTP receiver and checks the span, its
// underrun events, the resource and the metrics as the Collector's pdata
// decodes them: under the app's span the turn is a speech turn, with
// underrun's attributes alone, so neither Langfuse nor Phoenix files it as
// a second LLM call.
func TestExportTurn(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	start := time.Unix(1764669600, 0)
	turn, p := played(t, start)
	turn.Model = "m" // the app saw the call, and so does its own span
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Command: "test"})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p, Traceparent: "00-" + traceID + "-" + parentID + "-01"})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := e.Delivery(); d.Spans != 1 || d.Delivered != 1 {
		t.Errorf("delivery %+v, want the one span delivered", d)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans received, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != otlp.SpanTurn || s.Kind() != ptrace.SpanKindInternal {
		t.Errorf("span %q of kind %v, want %q, internal", s.Name(), s.Kind(), otlp.SpanTurn)
	}
	if got := s.TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the traceparent's %s", got, traceID)
	}
	if got := s.ParentSpanID().String(); got != parentID {
		t.Errorf("parent span id %s, want the traceparent's %s", got, parentID)
	}
	if got := s.StartTimestamp().AsTime(); !got.Equal(start) {
		t.Errorf("span starts %v, want the turn's start %v", got, start)
	}
	end := turn.Chunks[len(turn.Chunks)-1].At
	for _, c := range p.Chunks {
		end = max(end, c.PlayEnd)
	}
	if got := s.EndTimestamp().AsTime(); !got.Equal(start.Add(end)) {
		t.Errorf("span ends %v, want the last audio's end %v", got, start.Add(end))
	}
	res := s.Resource.Attributes()
	wantStr(t, "resource", res, "service.name", otlp.DefaultService)
	wantStr(t, "resource", res, "telemetry.sdk.language", "go")
	wantStr(t, "resource", res, "telemetry.sdk.name", "opentelemetry")
	wantStr(t, "resource", res, "underrun.command", "test")
	if id, ok := res.Get("service.instance.id"); !ok || len(id.Str()) != 36 {
		t.Errorf("service.instance.id %v, want a UUID", raw(id, ok))
	}

	a := s.Attributes()
	if keys := genAIKeys(a); len(keys) > 0 {
		t.Errorf("a speech turn under the app's span carries %v; want underrun.* attributes only", keys)
	}
	if typ := langfuseType(a); typ != "SPAN" {
		t.Errorf("Langfuse files the speech turn as %s, want SPAN", typ)
	}
	if u := langfuseUsage(a); len(u) > 0 || langfuseInputOutput(a) {
		t.Errorf("Langfuse reads usage %v or an input/output from the speech turn, want neither", u)
	}
	if kind, tokens := phoenixKind(a); kind != "" || tokens >= 0 {
		t.Errorf("Phoenix files the speech turn as %q with %d completion tokens, want no kind and no tokens", kind, tokens)
	}
	tm, _ := turn.Timing()
	tpot, _ := turn.TPOTSeconds()
	ttfa, _ := p.Started()
	tally := pipeline.TallyUnderruns(p.Underruns)
	wantStr(t, "span", a, string(otlp.AttrTurn), "default")
	wantStr(t, "span", a, string(otlp.AttrSession), "s1")
	wantStr(t, "span", a, string(otlp.AttrVerdict), "fail")
	wantStr(t, "span", a, string(otlp.AttrStatus), "ok")
	wantStr(t, "span", a, string(otlp.AttrClock), "wall")
	wantFloat(t, "span", a, string(otlp.AttrTTFT), pipeline.Millis(tm.TTFT))
	wantFloat(t, "span", a, string(otlp.AttrTPOT), tpot*1000)
	wantFloat(t, "span", a, string(otlp.AttrTTFA), pipeline.Millis(ttfa))
	wantFloat(t, "span", a, string(otlp.AttrSpeech), pipeline.Millis(p.Speech()))
	wantInt(t, "span", a, string(otlp.AttrInterrupts), tally.Interruptions)
	wantInt(t, "span", a, string(otlp.AttrGlitches), tally.Glitches)
	wantInt(t, "span", a, string(otlp.AttrTokens), turn.Tokens())
	if v, _ := a.Get(string(otlp.AttrSpeechGood)); v.Bool() != (tally.Interruptions == 0) {
		t.Errorf("underrun.speech.good = %v with %d interruptions", v.Bool(), tally.Interruptions)
	}

	evs := s.Events()
	if evs.Len() != len(p.Underruns) {
		t.Fatalf("%d events, want one per underrun (%d)", evs.Len(), len(p.Underruns))
	}
	for i, u := range p.Underruns {
		ev := evs.At(i)
		what := "event " + string(rune('0'+i))
		if ev.Name() != otlp.EventUnderrun {
			t.Errorf("%s name %q, want %q", what, ev.Name(), otlp.EventUnderrun)
		}
		if got := ev.Timestamp().AsTime(); !got.Equal(start.Add(u.Start)) {
			t.Errorf("%s at %v, want the gap's start %v", what, got, start.Add(u.Start))
		}
		ea := ev.Attributes()
		wantStr(t, what, ea, string(otlp.AttrClass), string(u.Class))
		wantStr(t, what, ea, string(otlp.AttrCause), string(u.Cause))
		wantStr(t, what, ea, string(otlp.AttrPosition), string(u.Position))
		wantInt(t, what, ea, string(otlp.AttrToken), u.Token)
		wantFloat(t, what, ea, string(otlp.AttrITL), pipeline.Millis(u.ITL))
		wantFloat(t, what, ea, string(otlp.AttrTolerance), pipeline.Millis(u.Tolerance))
		wantFloat(t, what, ea, string(otlp.AttrDuration), pipeline.Millis(u.Duration))
	}

	// metrics: the GenAI names as the semantic conventions give them
	ttfc := lastHist(t, rcv, "gen_ai.client.operation.time_to_first_chunk")
	if ttfc.Count() != 1 || math.Abs(ttfc.Sum()-tm.TTFT.Seconds()) > 1e-9 {
		t.Errorf("time_to_first_chunk: count %d sum %v, want 1 and %v", ttfc.Count(), ttfc.Sum(), tm.TTFT.Seconds())
	}
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.operation.name", "chat")
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.provider.name", otlp.DefaultProvider)
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.request.model", "m")
	tpoc := lastHist(t, rcv, "gen_ai.client.operation.time_per_output_chunk")
	if got, want := tpoc.Count(), uint64(len(turn.Chunks)-1); got != want {
		t.Errorf("time_per_output_chunk: %d values, want one per chunk after the first (%d)", got, want)
	}
	if got, want := tpoc.Sum(), (tm.E2E - tm.TTFT).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("time_per_output_chunk: sum %v, want E2E - TTFT = %v", got, want)
	}
	wantStr(t, "time_per_output_chunk", tpoc.Attributes(), "gen_ai.request.model", "m")
	if got := lastHist(t, rcv, otlp.MetricTPOT); math.Abs(got.Sum()-tpot) > 1e-9 {
		t.Errorf("%s: sum %v, want %v", otlp.MetricTPOT, got.Sum(), tpot)
	}
	if got := lastHist(t, rcv, otlp.MetricTTFA); math.Abs(got.Sum()-ttfa.Seconds()) > 1e-9 {
		t.Errorf("%s: sum %v, want %v", otlp.MetricTTFA, got.Sum(), ttfa.Seconds())
	}
	lastHist(t, rcv, "gen_ai.client.operation.duration")
	wantStr(t, "token usage", lastHist(t, rcv, "gen_ai.client.token.usage").Attributes(), "gen_ai.token.type", "output")
	var underruns int64
	for _, m := range rcv.Metric(otlp.MetricUnderruns)[len(rcv.Metric(otlp.MetricUnderruns))-1:] {
		for i := range m.Sum().DataPoints().Len() {
			underruns += m.Sum().DataPoints().At(i).IntValue()
		}
	}
	if underruns != int64(len(p.Underruns)) {
		t.Errorf("%s: %d, want %d", otlp.MetricUnderruns, underruns, len(p.Underruns))
	}
	turns := rcv.Metric(otlp.MetricTurns)
	if len(turns) == 0 || turns[len(turns)-1].Sum().DataPoints().Len() != 1 {
		t.Fatalf("%s: want one point", otlp.MetricTurns)
	}
	pt := turns[len(turns)-1].Sum().DataPoints().At(0)
	wantStr(t, otlp.MetricTurns, pt.Attributes(), string(otlp.AttrVerdict), "fail")
	if pt.IntValue() != 1 {
		t.Errorf("%s = %d, want 1", otlp.MetricTurns, pt.IntValue())
	}
}

// TestExportCall: a turn whose call underrun saw (it knows the model, and
// no app span is its parent) is the GenAI client-inference span of the
// semantic conventions v1.41.0: named "chat {model}", kind client, with
// the operation, provider, model, server and output tokens; Langfuse
// files it as a GENERATION and Phoenix as an LLM span, once.
func TestExportCall(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	turn, p := played(t, time.Unix(1764669600, 0))
	turn.Model = "meta-llama/Llama-3.1-8B-Instruct"
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Provider: "openai", Server: "http://127.0.0.1:8000/v1"})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if want := "chat " + turn.Model; s.Name() != want || s.Kind() != ptrace.SpanKindClient {
		t.Errorf("span %q of kind %v, want %q, client", s.Name(), s.Kind(), want)
	}
	if !s.ParentSpanID().IsEmpty() {
		t.Errorf("the call's span has parent %s, want a root span", s.ParentSpanID())
	}
	a := s.Attributes()
	tm, _ := turn.Timing()
	wantStr(t, "span", a, "gen_ai.operation.name", "chat")
	wantStr(t, "span", a, "gen_ai.provider.name", "openai")
	wantStr(t, "span", a, "gen_ai.request.model", turn.Model)
	wantStr(t, "span", a, "gen_ai.conversation.id", "s1")
	wantStr(t, "span", a, "server.address", "127.0.0.1")
	wantInt(t, "span", a, "server.port", 8000)
	wantInt(t, "span", a, "gen_ai.usage.output_tokens", turn.Tokens())
	wantFloat(t, "span", a, "gen_ai.response.time_to_first_chunk", tm.TTFT.Seconds())
	if v, ok := a.Get("gen_ai.request.stream"); !ok || !v.Bool() {
		t.Errorf("gen_ai.request.stream %v, want true", raw(v, ok))
	}
	wantStr(t, "span", a, string(otlp.AttrVerdict), "fail") // and underrun's findings beside them
	if typ := langfuseType(a); typ != "GENERATION" {
		t.Errorf("Langfuse files the call as %s, want GENERATION", typ)
	}
	if u := langfuseUsage(a); u["output"] != float64(turn.Tokens()) || len(u) != 1 {
		t.Errorf("Langfuse reads usage %v, want output %d alone", u, turn.Tokens())
	}
	if kind, tokens := phoenixKind(a); kind != "LLM" || tokens != int64(turn.Tokens()) {
		t.Errorf("Phoenix files the call as %q with %d completion tokens, want LLM with %d", kind, tokens, turn.Tokens())
	}
	ttfc := lastHist(t, rcv, "gen_ai.client.operation.time_to_first_chunk")
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.provider.name", "openai")
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "server.address", "127.0.0.1")
}

// TestExportToolCall: a turn whose stream stops for a 3 s tool call and
// is otherwise smooth exports a tool-call silence, not an interruption:
// its own tool_silence event (no underrun event, no class), the span
// counts it apart and stays good, the underrun metric leaves it out, and
// the time per output chunk leaves the tool's time out.
func TestExportToolCall(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	ms := time.Millisecond
	turn := &pipeline.Turn{ID: "tool", Session: "s1", Start: time.Unix(1764669600, 0), Status: pipeline.StatusOK,
		ToolCalls: []pipeline.ToolCall{{At: 305 * ms, Duration: 3000 * ms, Name: "get_weather"}}}
	for i, w := range strings.Fields("Let me check that for you. It is sunny and warm today, with a light breeze.") {
		at := time.Duration(200+25*i) * ms
		if i >= 5 {
			at += 3000 * ms
		}
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: " " + w, Tokens: 1})
	}
	filler := pipeline.Filler{Kind: pipeline.FillerPhrase, Delay: 1500 * ms, Phrase: "One moment, please."}
	cfg := pipeline.DefaultConfig()
	cfg.Filler = filler
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	tally := pipeline.TallyUnderruns(p.Underruns)
	if tally.ToolSilences != 1 || tally.Interruptions+tally.Glitches != 0 {
		t.Fatalf("the turn's gaps %+v: want one tool-call silence and no underrun", p.Underruns)
	}
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Command: "test"})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	span := rcv.Spans()[0]
	a := span.Attributes()
	// the silence's event says what the filler covers, and how long the
	// phrase, asked for late in it, holds back the reply
	cov := filler.Cover(tally.ToolSilence, p.Config())
	if cov.Late <= 0 || cov.Covered <= 0 {
		t.Fatalf("the filler's cover %+v: want a phrase that starts in the silence and outlasts it", cov)
	}
	if span.Events().Len() != 1 {
		t.Fatalf("%d events, want the tool-call silence's", span.Events().Len())
	}
	ev := span.Events().At(0)
	if ev.Name() != otlp.EventToolSilence {
		t.Errorf("event %q, want %q", ev.Name(), otlp.EventToolSilence)
	}
	ea := ev.Attributes()
	for _, k := range []string{string(otlp.AttrClass), string(otlp.AttrCause)} {
		if v, ok := ea.Get(k); ok {
			t.Errorf("the tool-call silence's event has %s = %v: it is no underrun", k, v.AsRaw())
		}
	}
	wantStr(t, "event", ea, string(otlp.AttrToolName), "get_weather")
	wantFloat(t, "event", ea, string(otlp.AttrToolMs), 3000)
	wantFloat(t, "event", ea, string(otlp.AttrDuration), pipeline.Millis(tally.ToolSilence))
	wantFloat(t, "event", ea, string(otlp.AttrFillerCovered), pipeline.Millis(cov.Covered))
	wantFloat(t, "event", ea, string(otlp.AttrFillerLate), pipeline.Millis(cov.Late))
	wantInt(t, "span", a, string(otlp.AttrToolSilences), 1)
	wantFloat(t, "span", a, string(otlp.AttrToolSilence), pipeline.Millis(tally.ToolSilence))
	wantInt(t, "span", a, string(otlp.AttrInterrupts), 0)
	wantFloat(t, "span", a, string(otlp.AttrUnderrunMs), 0)
	wantStr(t, "span", a, string(otlp.AttrVerdict), "pass")
	if typ := langfuseType(a); typ != "SPAN" {
		t.Errorf("Langfuse files a turn with a tool call as %s, want SPAN (no gen_ai.tool.* on it)", typ)
	}
	if ms := rcv.Metric(otlp.MetricUnderruns); len(ms) > 0 && ms[len(ms)-1].Sum().DataPoints().Len() > 0 {
		t.Errorf("%s counts the tool-call silence", otlp.MetricUnderruns)
	}
	if ms := rcv.Metric(otlp.MetricToolSilence); len(ms) == 0 || ms[len(ms)-1].Histogram().DataPoints().Len() != 1 ||
		math.Abs(ms[len(ms)-1].Histogram().DataPoints().At(0).Sum()-tally.ToolSilence.Seconds()) > 1e-9 {
		t.Errorf("%s: want one point summing the tool-call silence, %v", otlp.MetricToolSilence, tally.ToolSilence)
	}
	tpoc := rcv.Metric("gen_ai.client.operation.time_per_output_chunk")
	tm, _ := turn.Timing()
	if got, want := tpoc[len(tpoc)-1].Histogram().DataPoints().At(0).Sum(), (tm.E2E - tm.TTFT - 3000*ms).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("time_per_output_chunk: sum %v, want E2E - TTFT less the tool's 3 s = %v", got, want)
	}
}

// TestVirtualTimes: turns without a start time are laid one after another
// so that the last ends when the export shuts down, never in the future,
// and a turn without a traceparent is a root span.
func TestVirtualTimes(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	first, p1 := played(t, time.Time{})
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Offline: true})
	e.Export(otlp.TurnRecord{Turn: first, Playout: p1})
	second := scenarios.DefaultTurn()
	second.ID = "second"
	e.Export(otlp.TurnRecord{Turn: second}) // no speech model: timings alone
	if n := len(rcv.Spans()); n != 0 {
		t.Errorf("%d spans sent before the run ended, want none: their times are known only then", n)
	}
	before := time.Now()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	slices.SortFunc(spans, func(a, b otlptest.Span) int { return a.StartTimestamp().AsTime().Compare(b.StartTimestamp().AsTime()) })
	a, b := spans[0], spans[1]
	if end := b.EndTimestamp().AsTime(); end.Before(before) || end.After(after) {
		t.Errorf("the last turn ends %v, want when the export shut down (%v to %v)", end, before, after)
	}
	if !b.StartTimestamp().AsTime().Equal(a.EndTimestamp().AsTime()) {
		t.Errorf("second turn starts %v, want where the first ended, %v", b.StartTimestamp().AsTime(), a.EndTimestamp().AsTime())
	}
	for _, s := range spans {
		wantStr(t, "span", s.Attributes(), string(otlp.AttrClock), "virtual")
		if !s.ParentSpanID().IsEmpty() {
			t.Errorf("span %s has parent %s, want a root span", s.Name(), s.ParentSpanID())
		}
	}
	if _, ok := b.Attributes().Get(string(otlp.AttrTTFA)); ok {
		t.Error("a turn exported without a playout has a time to first audio")
	}
	if a.TraceID() == b.TraceID() {
		t.Error("two root turns share a trace id")
	}
}

// TestSpeed: a turn replayed ten times as fast keeps the wall-clock
// length of its playing: the span lasts a tenth of the turn, its events
// fall at a tenth of their times, and the figures stay the turn's.
func TestSpeed(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	start := time.Unix(1764669600, 0)
	turn, p := played(t, time.Time{})
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Offline: true})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p, Start: start, Speed: 10})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := rcv.Spans()[0]
	end := turn.Chunks[len(turn.Chunks)-1].At
	for _, c := range p.Chunks {
		end = max(end, c.PlayEnd)
	}
	if got, want := s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime()), end/10; got != want || !s.StartTimestamp().AsTime().Equal(start) {
		t.Errorf("span from %v lasts %v, want from %v for %v", s.StartTimestamp().AsTime(), got, start, want)
	}
	for i, u := range p.Underruns {
		if got, want := s.Events().At(i).Timestamp().AsTime(), start.Add(u.Start/10); !got.Equal(want) {
			t.Errorf("event %d at %v, want %v", i, got, want)
		}
	}
	tm, _ := turn.Timing()
	wantFloat(t, "span", s.Attributes(), string(otlp.AttrTTFT), pipeline.Millis(tm.TTFT))
	wantFloat(t, "span", s.Attributes(), string(otlp.AttrSpeed), 10)
}

// TestBadTraceparent: a traceparent that is not W3C trace context starts
// a trace of its own and is kept as it came.
func TestBadTraceparent(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	turn, p := played(t, time.Unix(1764669600, 0))
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL})
	const bad = "00-00000000000000000000000000000000-00f067aa0ba902b7-01" // an all-zero trace id is invalid
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p, Traceparent: bad})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	if !spans[0].ParentSpanID().IsEmpty() || spans[0].TraceID().IsEmpty() {
		t.Errorf("parent %s trace %s: want a root span of a fresh trace", spans[0].ParentSpanID(), spans[0].TraceID())
	}
	wantStr(t, "span", spans[0].Attributes(), string(otlp.AttrTraceparent), bad)
}

// TestUnreachable: an endpoint nobody listens on gives one error through
// OnError, and Shutdown returns in bounded time with ErrExport, saying
// how many spans of how many were delivered.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	for _, offline := range []bool{false, true} {
		var reported []error
		e := newExporter(t, otlp.Options{Endpoint: "http://" + addr, Timeout: time.Second, Offline: offline,
			OnError: func(err error) { reported = append(reported, err) }})
		for range 3 {
			turn, p := played(t, time.Unix(1764669600, 0))
			e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
		}
		start := time.Now()
		err = e.Shutdown(context.Background())
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("offline %v: Shutdown took %v", offline, took)
		}
		if !errors.Is(err, otlp.ErrExport) || !strings.Contains(err.Error(), "0 of 3 spans delivered") {
			t.Fatalf("offline %v: Shutdown: %v, want ErrExport saying 0 of 3 spans delivered", offline, err)
		}
		if len(reported) != 1 || !errors.Is(reported[0], otlp.ErrExport) {
			t.Fatalf("offline %v: OnError called with %v, want one ErrExport", offline, reported)
		}
		if d := e.Delivery(); d.Failed != 3 || d.Waiting() != 0 {
			t.Errorf("offline %v: delivery %+v, want the 3 spans failed", offline, d)
		}
		t.Logf("reported: %v; at shutdown: %v", reported[0], err)
	}
}

// TestEndpoints: where each signal goes, and what is refused.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"localhost:4318", "ftp://host/", "http://", "http://[::1", ""} {
		if _, err := otlp.ParseEndpoint(bad); !errors.Is(err, otlp.ErrEndpoint) {
			t.Errorf("ParseEndpoint(%q): %v, want ErrEndpoint", bad, err)
		}
		if bad == "" {
			continue
		}
		if _, err := otlp.New(context.Background(), otlp.Options{Endpoint: bad}); !errors.Is(err, otlp.ErrEndpoint) {
			t.Errorf("New with %q: %v, want ErrEndpoint", bad, err)
		}
	}
	if _, err := otlp.New(context.Background(), otlp.Options{}); !errors.Is(err, otlp.ErrEndpoint) {
		t.Errorf("New with no endpoint: %v, want ErrEndpoint", err)
	}
	if _, err := otlp.New(context.Background(), otlp.Options{Endpoint: "http://localhost:4318", NoTraces: true, NoMetrics: true}); !errors.Is(err, otlp.ErrEndpoint) {
		t.Errorf("New with both signals off: %v, want ErrEndpoint", err)
	}
	// a base with a path keeps it; a traces endpoint is used as it is
	rcv := otlptest.NewReceiver(t)
	turn, p := played(t, time.Unix(1764669600, 0))
	e := newExporter(t, otlp.Options{TracesEndpoint: rcv.URL + "/v1/traces"})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(rcv.Spans()); got != 1 {
		t.Errorf("traces endpoint alone: %d spans, want 1", got)
	}
	if names := rcv.MetricNames(); len(names) != 0 {
		t.Errorf("traces endpoint alone: metrics %v sent, want none", names)
	}
	// metrics turned off: none are sent though the base names them
	rcv = otlptest.NewReceiver(t)
	e = newExporter(t, otlp.Options{Endpoint: rcv.URL, NoMetrics: true})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, names := len(rcv.Spans()), rcv.MetricNames(); got != 1 || len(names) != 0 || rcv.Refused("/v1/metrics") != 0 {
		t.Errorf("NoMetrics: %d spans, metrics %v: want the span and no metrics request", got, names)
	}
}

// TestFromEnv: the standard variables, as the OpenTelemetry SDK
// specification names them.
func TestFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   otlp.Options
		env  map[string]string
		want otlp.Options
		err  bool
	}{
		{"nothing", otlp.Options{}, nil, otlp.Options{}, false},
		{"base", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			otlp.Options{Endpoint: "http://c:4318"}, false},
		{"per signal", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/v1/traces", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m/v1/metrics"},
			otlp.Options{Endpoint: "http://c:4318", TracesEndpoint: "http://t/v1/traces", MetricsEndpoint: "http://m/v1/metrics"}, false},
		{"the flag wins", otlp.Options{Endpoint: "http://flag:4318"}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/v1/traces"},
			otlp.Options{Endpoint: "http://flag:4318"}, false},
		{"metrics none", otlp.Options{Endpoint: "http://flag:4318"}, map[string]string{"OTEL_METRICS_EXPORTER": "none"},
			otlp.Options{Endpoint: "http://flag:4318", NoMetrics: true}, false},
		{"traces none", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": " None "},
			otlp.Options{Endpoint: "http://c:4318", NoTraces: true}, false},
		{"otlp", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp"},
			otlp.Options{Endpoint: "http://c:4318"}, false},
		{"sdk disabled", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
			otlp.Options{Endpoint: "http://c:4318", NoTraces: true, NoMetrics: true}, false},
		{"zipkin", otlp.Options{}, map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, otlp.Options{}, true},
		{"prometheus", otlp.Options{}, map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, otlp.Options{}, true},
		{"grpc", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, otlp.Options{}, true},
		{"json", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, otlp.Options{}, true},
		{"protobuf", otlp.Options{}, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, otlp.Options{}, false},
	} {
		got, err := otlp.FromEnv(tc.in, func(k string) string { return tc.env[k] })
		if tc.err {
			if !errors.Is(err, otlp.ErrEnv) {
				t.Errorf("%s: %v, want ErrEnv", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if (otlp.Options{Endpoint: "http://c:4318", NoTraces: true, NoMetrics: true}).Enabled() {
		t.Error("Enabled with both signals off")
	}
	if !(otlp.Options{MetricsEndpoint: "http://m/v1/metrics"}).Enabled() {
		t.Error("not Enabled with a metrics endpoint")
	}
}

// TestNotTaken: a backend that answers a signal's path with 404 or 405
// does not take that signal: it is said once, through OnNotTaken, and is
// neither an error nor a loss.
func TestNotTaken(t *testing.T) {
	t.Parallel()
	// a trace-only backend: 404 on /v1/metrics
	rcv := otlptest.NewReceiverWith(t, otlptest.Options{TracesOnly: true})
	var mu sync.Mutex
	var notes, errs []error
	o := otlp.Options{Endpoint: rcv.URL, MetricInterval: 50 * time.Millisecond,
		OnNotTaken: func(err error) { mu.Lock(); notes = append(notes, err); mu.Unlock() },
		OnError:    func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }}
	e := newExporter(t, o)
	for range 3 {
		turn, p := played(t, time.Unix(1764669600, 0))
		e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	}
	time.Sleep(200 * time.Millisecond) // a few metric exports
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v, want no error: every span landed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 || len(notes) != 1 || !errors.Is(notes[0], otlp.ErrNotTaken) || !strings.Contains(notes[0].Error(), "/v1/metrics") {
		t.Fatalf("errors %v, notes %v: want one note that the backend takes no metrics", errs, notes)
	}
	if n := rcv.Refused("/v1/metrics"); n != 1 {
		t.Errorf("%d metric exports after the 404, want 1: the signal is not sent again", n)
	}
	if d := e.Delivery(); d.Delivered != 3 || len(rcv.Spans()) != 3 {
		t.Errorf("delivery %+v, %d spans received: want 3", d, len(rcv.Spans()))
	}
	t.Logf("note: %v", notes[0])

	// 405 on traces: the spans are refused, not lost
	notes, errs = nil, nil
	refuse := otlptest.NewReceiver(t)
	e = newExporter(t, otlp.Options{TracesEndpoint: refuse.URL + "/", Offline: true,
		OnNotTaken: func(err error) { notes = append(notes, err) }, OnError: func(err error) { errs = append(errs, err) }})
	for range 3 {
		turn, p := played(t, time.Unix(1764669600, 0))
		e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v, want no error", err)
	}
	if d := e.Delivery(); d.Refused != 3 || d.Lost() != 0 || len(errs) != 0 || len(notes) != 1 {
		t.Errorf("delivery %+v, errors %v, notes %v: want 3 refused, one note", d, errs, notes)
	}
}

// TestSlowBackend: a trace-only backend that answers each export in
// 300 ms, as hosted ones do. An offline run delivers every one of 10,000
// spans; a live run that outpaces it drops what does not fit the queue,
// and says how many of how many were delivered.
func TestSlowBackend(t *testing.T) {
	t.Parallel()
	const n = 10000
	rcv := otlptest.NewReceiverWith(t, otlptest.Options{Latency: 300 * time.Millisecond, TracesOnly: true})
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Offline: true, NoMetrics: true})
	turn := scenarios.DefaultTurn()
	start := time.Now()
	for i := range n {
		turn.Start = start.Add(time.Duration(i) * time.Millisecond)
		e.Export(otlp.TurnRecord{Turn: turn})
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("offline: %v", err)
	}
	if d := e.Delivery(); d.Delivered != n || len(rcv.Spans()) != n {
		t.Fatalf("offline: delivery %+v, %d spans received; want all %d", d, len(rcv.Spans()), n)
	}
	t.Logf("offline: %d of %d spans delivered in %v", e.Delivery().Delivered, n, time.Since(start).Round(time.Millisecond))

	slow := otlptest.NewReceiverWith(t, otlptest.Options{Latency: 300 * time.Millisecond, TracesOnly: true})
	live := newExporter(t, otlp.Options{Endpoint: slow.URL, NoMetrics: true})
	for i := range n {
		turn.Start = start.Add(time.Duration(i) * time.Millisecond)
		live.Export(otlp.TurnRecord{Turn: turn})
	}
	err := live.Shutdown(context.Background())
	d := live.Delivery()
	if d.Dropped == 0 || d.Delivered+d.Dropped+d.Failed+d.Waiting() != n || int(d.Delivered) != len(slow.Spans()) {
		t.Errorf("live: delivery %+v, %d received; want drops, every span counted", d, len(slow.Spans()))
	}
	if err == nil || !strings.Contains(err.Error(), "of 10000 spans delivered") || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("live: Shutdown: %v; want how many of 10000 were delivered, and the drops", err)
	}
	t.Logf("live: %v", err)
}

// BenchmarkExport: one played turn of the default scenario into an
// exporter whose spans and metrics go to a receiver that discards them:
// the cost analyze --otlp adds per turn.
func BenchmarkExport(b *testing.B) {
	rcv := otlptest.NewReceiverWith(b, otlptest.Options{Discard: true})
	turn := scenarios.DefaultTurn()
	turn.Start = time.Now()
	p, err := pipeline.Play(pipeline.DefaultConfig(), turn)
	if err != nil {
		b.Fatal(err)
	}
	e, err := otlp.New(context.Background(), otlp.Options{Endpoint: rcv.URL, Offline: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	}
	b.StopTimer()
	if err := e.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// TestFailedTurnManyGaps: a failed stream sets the span's status and,
// on a call's span, error.type; a turn of 1,100 gaps keeps the first
// 1,000 events and counts the rest as dropped; a tracestate rides along.
func TestFailedTurnManyGaps(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	turn, p := played(t, time.Unix(1764669600, 0))
	turn.Status, turn.Error, turn.Model = pipeline.StatusError, "upstream closed the stream", "m"
	many := make([]pipeline.Underrun, 1100)
	for i := range many {
		many[i] = pipeline.Underrun{Turn: turn.ID, Start: time.Duration(i) * time.Millisecond, Duration: time.Millisecond,
			Class: pipeline.Glitch, Cause: pipeline.CauseStall, Tolerance: pipeline.Unbounded}
	}
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p, Underruns: many, Traceparent: "00-" + traceID + "-" + parentID + "-01", Tracestate: "vendor=1"})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	slices.SortFunc(spans, func(a, b otlptest.Span) int { return a.Events().Len() - b.Events().Len() })
	call, speech := spans[0], spans[1]
	for _, s := range spans {
		if s.Status().Code() != ptrace.StatusCodeError || s.Status().Message() != turn.Error {
			t.Errorf("span %q status %v %q, want an error with the turn's text", s.Name(), s.Status().Code(), s.Status().Message())
		}
	}
	wantStr(t, "call", call.Attributes(), "error.type", "_OTHER")
	if _, ok := speech.Attributes().Get("error.type"); ok {
		t.Error("the speech turn carries error.type: underrun.* attributes only")
	}
	if speech.Events().Len() != 1000 || speech.DroppedEventsCount() != 100 {
		t.Errorf("%d events, %d dropped; want 1000 and 100", speech.Events().Len(), speech.DroppedEventsCount())
	}
	if got := speech.TraceState().AsRaw(); got != "vendor=1" {
		t.Errorf("trace state %q, want vendor=1", got)
	}
	if speech.Flags()&0x300 != 0x300 || call.Flags()&0x300 != 0x100 || call.Flags()&1 != 1 {
		t.Errorf("flags %#x (under a remote parent) and %#x (root): want the parent-is-remote bits as the SDK sets them, and sampled", speech.Flags(), call.Flags())
	}
}

// TestCollectorCounts: the Prometheus counters say what became of the
// spans.
func TestCollectorCounts(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, NoMetrics: true})
	turn, p := played(t, time.Unix(1764669600, 0))
	for range 3 {
		e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetValue()
			}
			got[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"underrun_otlp_spans_total,delivered": 3, "underrun_otlp_spans_total,dropped": 0,
		"underrun_otlp_spans_total,failed": 0, "underrun_otlp_spans_total,refused": 0, "underrun_otlp_spans_waiting": 0,
		"underrun_otlp_exports_failed_total,traces": 0, "underrun_otlp_exports_failed_total,metrics": 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gathered %v, want %v", got, want)
	}
}
