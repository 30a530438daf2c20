package otlp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
	"github.com/speech-pipeline/underrun/scenarios"
)

// TestCollector sends through a real OpenTelemetry Collector (v0.165.0,
// built from the Go module proxy: its OTLP receiver and the file
// exporter) what each backend reads: a speech turn under the app's own
// span, a call underrun saw, a turn with a tool call, and turns without
// start times, laid so that the last ends as the export shuts down. What
// the Collector wrote is decoded with its own pdata.
func TestCollector(t *testing.T) {
	t.Parallel()
	col := otlptest.StartCollector(t)
	e := newExporter(t, otlp.Options{Endpoint: col.URL, Command: "test", Provider: "openai", Server: "http://127.0.0.1:8000", Offline: true})
	start := time.Now().Add(-time.Minute)
	under, p1 := played(t, start)
	under.ID = "under-app-span"
	e.Export(otlp.TurnRecord{Turn: under, Playout: p1, Traceparent: "00-" + traceID + "-" + parentID + "-01"})
	call, p2 := played(t, start.Add(10*time.Second))
	call.ID, call.Model = "call", "voice-8b"
	e.Export(otlp.TurnRecord{Turn: call, Playout: p2})
	ms := time.Millisecond
	tool := &pipeline.Turn{ID: "tool", Start: start.Add(20 * time.Second), Status: pipeline.StatusOK,
		ToolCalls: []pipeline.ToolCall{{At: 305 * ms, Duration: 2000 * ms, Name: "get_weather"}}}
	for i, w := range strings.Fields("Let me check that for you. It is sunny and warm today.") {
		at := time.Duration(200+25*i) * ms
		if i >= 5 {
			at += 2000 * ms
		}
		tool.Chunks = append(tool.Chunks, pipeline.Chunk{At: at, Text: " " + w, Tokens: 1})
	}
	p3, err := pipeline.Play(pipeline.DefaultConfig(), tool)
	if err != nil {
		t.Fatal(err)
	}
	e.Export(otlp.TurnRecord{Turn: tool, Playout: p3})
	const virtual = 20
	for i := range virtual {
		turn := scenarios.DefaultTurn()
		turn.ID = "virtual-" + string(rune('a'+i))
		e.Export(otlp.TurnRecord{Turn: turn})
	}
	before := time.Now()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	got := col.Stop(t)
	if d := e.Delivery(); d.Delivered != 3+virtual || len(got.Spans) != 3+virtual {
		t.Fatalf("delivery %+v, %d spans through the Collector; want %d", d, len(got.Spans), 3+virtual)
	}
	byID := map[string]otlptest.Span{}
	for _, s := range got.Spans {
		id, _ := s.Attributes().Get(string(otlp.AttrTurn))
		byID[id.Str()] = s
		res := s.Resource.Attributes()
		for _, k := range []string{"telemetry.sdk.name", "telemetry.sdk.language", "telemetry.sdk.version", "service.instance.id"} {
			if v, ok := res.Get(k); !ok || v.Str() == "" {
				t.Errorf("resource %s missing", k)
			}
		}
		if s.Resource.Attributes().Len() == 0 {
			t.Error("empty resource")
		}
	}

	s := byID["under-app-span"]
	if s.Name() != otlp.SpanTurn || s.ParentSpanID().String() != parentID || s.TraceID().String() != traceID {
		t.Errorf("speech turn %q under %s in %s, want %q under %s in %s", s.Name(), s.ParentSpanID(), s.TraceID(), otlp.SpanTurn, parentID, traceID)
	}
	if keys := genAIKeys(s.Attributes()); len(keys) > 0 || langfuseType(s.Attributes()) != "SPAN" {
		t.Errorf("speech turn: gen_ai keys %v, Langfuse type %s; want none and SPAN", keys, langfuseType(s.Attributes()))
	}
	if kind, _ := phoenixKind(s.Attributes()); kind != "" {
		t.Errorf("Phoenix files the speech turn as %s", kind)
	}
	if s.Events().Len() != len(p1.Underruns) || s.Events().At(0).Name() != otlp.EventUnderrun {
		t.Errorf("speech turn: %d events, want its %d underruns", s.Events().Len(), len(p1.Underruns))
	}

	c := byID["call"]
	if c.Name() != "chat voice-8b" || c.Kind() != ptrace.SpanKindClient || !c.ParentSpanID().IsEmpty() {
		t.Errorf("call %q of kind %v under %q, want a root \"chat voice-8b\" client span", c.Name(), c.Kind(), c.ParentSpanID())
	}
	wantStr(t, "call", c.Attributes(), "gen_ai.provider.name", "openai")
	wantStr(t, "call", c.Attributes(), "server.address", "127.0.0.1")
	wantInt(t, "call", c.Attributes(), "gen_ai.usage.output_tokens", call.Tokens())
	if langfuseType(c.Attributes()) != "GENERATION" {
		t.Errorf("Langfuse files the call as %s, want GENERATION", langfuseType(c.Attributes()))
	}
	if kind, tokens := phoenixKind(c.Attributes()); kind != "LLM" || tokens != int64(call.Tokens()) {
		t.Errorf("Phoenix files the call as %q with %d tokens", kind, tokens)
	}

	tl := byID["tool"]
	if tl.Events().Len() != 1 || tl.Events().At(0).Name() != otlp.EventToolSilence {
		t.Fatalf("tool turn: %d events, want one tool_silence", tl.Events().Len())
	}
	wantStr(t, "tool_silence", tl.Events().At(0).Attributes(), string(otlp.AttrToolName), "get_weather")

	var laid []otlptest.Span
	for _, s := range got.Spans {
		if v, _ := s.Attributes().Get(string(otlp.AttrClock)); v.Str() == "virtual" {
			laid = append(laid, s)
		}
	}
	if len(laid) != virtual {
		t.Fatalf("%d turns without start times arrived, want %d", len(laid), virtual)
	}
	var last time.Time
	for _, s := range laid {
		if end := s.EndTimestamp().AsTime(); end.After(last) {
			last = end
		}
	}
	if last.Before(before) || last.After(after) {
		t.Errorf("the last turn without a start time ends %v, want when the export shut down (%v to %v)", last, before, after)
	}

	// the metrics, the time per output chunk from the exporter's own
	// histogram among them
	tpoc := got.Metrics["gen_ai.client.operation.time_per_output_chunk"]
	if len(tpoc) == 0 {
		t.Fatalf("no time_per_output_chunk through the Collector; got %d metrics", len(got.Metrics))
	}
	var count uint64
	pts := tpoc[len(tpoc)-1].Histogram().DataPoints()
	for i := range pts.Len() {
		count += pts.At(i).Count()
	}
	want := uint64(len(under.Chunks) + len(call.Chunks) + len(tool.Chunks) - 3 + virtual*(len(scenarios.DefaultTurn().Chunks)-1))
	if count != want {
		t.Errorf("time_per_output_chunk counts %d ITLs, want %d", count, want)
	}
	for _, name := range []string{otlp.MetricTurns, otlp.MetricUnderruns, otlp.MetricToolSilence, "gen_ai.client.operation.time_to_first_chunk"} {
		if len(got.Metrics[name]) == 0 {
			t.Errorf("no %s through the Collector", name)
		}
	}
}
