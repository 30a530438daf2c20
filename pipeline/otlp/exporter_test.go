package otlp_test

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

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

// attr returns a span's or event's attribute (ok false when absent).
func attr(m pcommon.Map, key string) (pcommon.Value, bool) { return m.Get(key) }

func wantStr(t *testing.T, what string, m pcommon.Map, key, want string) {
	t.Helper()
	v, ok := attr(m, key)
	if !ok || v.Str() != want {
		t.Errorf("%s %s = %v (present %v), want %q", what, key, v.AsRaw(), ok, want)
	}
}

func wantFloat(t *testing.T, what string, m pcommon.Map, key string, want float64) {
	t.Helper()
	v, ok := attr(m, key)
	if !ok || math.Abs(v.Double()-want) > 1e-9 {
		t.Errorf("%s %s = %v (present %v), want %v", what, key, v.AsRaw(), ok, want)
	}
}

func wantInt(t *testing.T, what string, m pcommon.Map, key string, want int) {
	t.Helper()
	v, ok := attr(m, key)
	if !ok || v.Int() != int64(want) {
		t.Errorf("%s %s = %v (present %v), want %d", what, key, v.AsRaw(), ok, want)
	}
}

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentID = "00f067aa0ba902b7"
)

// TestExportTurn sends one played turn with a traceparent to a real
// OTLP/HTTP receiver and checks the span, its underrun events and the
// metrics as the Collector's pdata decodes them.
func TestExportTurn(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	start := time.Unix(1764669600, 0)
	turn, p := played(t, start)
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL, Command: "test"})
	e.Export(otlp.TurnRecord{Turn: turn, Playout: p, Traceparent: "00-" + traceID + "-" + parentID + "-01"})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans received, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != otlp.SpanTurn {
		t.Errorf("span name %q, want %q", s.Name(), otlp.SpanTurn)
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
	svc, _ := s.Resource.Attributes().Get("service.name")
	if svc.Str() != otlp.DefaultService {
		t.Errorf("service.name %q, want %q", svc.Str(), otlp.DefaultService)
	}
	tm, _ := turn.Timing()
	tpot, _ := turn.TPOTSeconds()
	ttfa, _ := p.Started()
	tally := pipeline.TallyUnderruns(p.Underruns)
	a := s.Attributes()
	wantStr(t, "span", a, string(otlp.AttrTurn), "default")
	wantStr(t, "span", a, string(otlp.AttrSession), "s1")
	wantStr(t, "span", a, "gen_ai.conversation.id", "s1")
	wantStr(t, "span", a, "gen_ai.operation.name", "chat")
	wantStr(t, "span", a, string(otlp.AttrVerdict), "fail")
	wantStr(t, "span", a, string(otlp.AttrStatus), "ok")
	wantStr(t, "span", a, string(otlp.AttrClock), "wall")
	wantFloat(t, "span", a, string(otlp.AttrTTFT), pipeline.Millis(tm.TTFT))
	wantFloat(t, "span", a, "gen_ai.response.time_to_first_chunk", tm.TTFT.Seconds())
	wantFloat(t, "span", a, string(otlp.AttrTPOT), tpot*1000)
	wantFloat(t, "span", a, string(otlp.AttrTTFA), pipeline.Millis(ttfa))
	wantFloat(t, "span", a, string(otlp.AttrSpeech), pipeline.Millis(p.Speech()))
	wantInt(t, "span", a, string(otlp.AttrInterrupts), tally.Interruptions)
	wantInt(t, "span", a, string(otlp.AttrGlitches), tally.Glitches)
	wantInt(t, "span", a, "gen_ai.usage.output_tokens", turn.Tokens())
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
	hist := func(name string) pmetric.HistogramDataPoint {
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
	ttfc := hist("gen_ai.client.operation.time_to_first_chunk")
	if ttfc.Count() != 1 || math.Abs(ttfc.Sum()-tm.TTFT.Seconds()) > 1e-9 {
		t.Errorf("time_to_first_chunk: count %d sum %v, want 1 and %v", ttfc.Count(), ttfc.Sum(), tm.TTFT.Seconds())
	}
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.operation.name", "chat")
	wantStr(t, "time_to_first_chunk", ttfc.Attributes(), "gen_ai.provider.name", otlp.DefaultProvider)
	tpoc := hist("gen_ai.client.operation.time_per_output_chunk")
	if got, want := tpoc.Count(), uint64(len(turn.Chunks)-1); got != want {
		t.Errorf("time_per_output_chunk: %d values, want one per chunk after the first (%d)", got, want)
	}
	if got, want := tpoc.Sum(), (tm.E2E - tm.TTFT).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("time_per_output_chunk: sum %v, want E2E - TTFT = %v", got, want)
	}
	if got := hist(otlp.MetricTPOT); math.Abs(got.Sum()-tpot) > 1e-9 {
		t.Errorf("%s: sum %v, want %v", otlp.MetricTPOT, got.Sum(), tpot)
	}
	if got := hist(otlp.MetricTTFA); math.Abs(got.Sum()-ttfa.Seconds()) > 1e-9 {
		t.Errorf("%s: sum %v, want %v", otlp.MetricTTFA, got.Sum(), ttfa.Seconds())
	}
	hist("gen_ai.client.operation.duration")
	hist("gen_ai.client.token.usage")
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

// TestExportToolCall: a turn whose stream stops for a 3 s tool call and
// is otherwise smooth exports a tool-call silence, not an interruption:
// the span counts it apart and stays good, the underrun metric leaves it
// out, and the time per output chunk leaves the tool's time out.
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
	ea := span.Events().At(0).Attributes()
	wantStr(t, "event", ea, string(otlp.AttrCause), string(pipeline.CauseTool))
	wantFloat(t, "event", ea, string(otlp.AttrFillerCovered), pipeline.Millis(cov.Covered))
	wantFloat(t, "event", ea, string(otlp.AttrFillerLate), pipeline.Millis(cov.Late))
	wantInt(t, "span", a, string(otlp.AttrToolSilences), 1)
	wantFloat(t, "span", a, string(otlp.AttrToolSilence), pipeline.Millis(tally.ToolSilence))
	wantInt(t, "span", a, string(otlp.AttrInterrupts), 0)
	wantFloat(t, "span", a, string(otlp.AttrUnderrunMs), 0)
	wantStr(t, "span", a, string(otlp.AttrVerdict), "pass")
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

// TestVirtualTimes: turns without a start time follow one another from
// the export's start, and a turn without a traceparent is a root span.
func TestVirtualTimes(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	before := time.Now()
	first, p1 := played(t, time.Time{})
	e := newExporter(t, otlp.Options{Endpoint: rcv.URL})
	e.Export(otlp.TurnRecord{Turn: first, Playout: p1})
	second := scenarios.DefaultTurn()
	second.ID = "second"
	e.Export(otlp.TurnRecord{Turn: second}) // no speech model: timings alone
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	slices.SortFunc(spans, func(a, b otlptest.Span) int { return a.StartTimestamp().AsTime().Compare(b.StartTimestamp().AsTime()) })
	a, b := spans[0], spans[1]
	if a.StartTimestamp().AsTime().Before(before) {
		t.Errorf("first turn starts %v, before the export began (%v)", a.StartTimestamp().AsTime(), before)
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
// OnError, and Shutdown returns in bounded time with ErrExport.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	var reported []error
	e := newExporter(t, otlp.Options{Endpoint: "http://" + addr, Timeout: time.Second,
		OnError: func(err error) { reported = append(reported, err) }})
	for range 3 {
		turn, p := played(t, time.Unix(1764669600, 0))
		e.Export(otlp.TurnRecord{Turn: turn, Playout: p})
	}
	err = e.Shutdown(context.Background())
	if !errors.Is(err, otlp.ErrExport) {
		t.Fatalf("Shutdown: %v, want ErrExport", err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], otlp.ErrExport) {
		t.Fatalf("OnError called with %v, want one ErrExport", reported)
	}
	t.Logf("reported: %v", reported[0])
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
}
