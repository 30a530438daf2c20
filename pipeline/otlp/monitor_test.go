package otlp_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
)

// TestMonitorTraceparent runs a real monitor, streams a turn with a
// stall over its ingest websocket with a traceparent on turn_start, and
// checks that the turn's span reached the OTLP receiver inside the
// caller's trace, under the caller's span, with an event for every
// underrun the monitor counted.
func TestMonitorTraceparent(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	exp := newExporter(t, otlp.Options{Endpoint: rcv.URL, Command: "monitor"})
	done := make(chan monitor.TurnDone, 1)
	srv, err := monitor.New(monitor.Options{Config: pipeline.DefaultConfig(),
		OnTurn: func(d monitor.TurnDone) {
			exp.Export(otlp.TurnRecord{Turn: d.Turn, Playout: d.Playout, Underruns: d.Underruns, Status: d.Status,
				Traceparent: d.Traceparent, Tracestate: d.Tracestate})
			d.Playout = nil // reused after the call
			d.Underruns = append([]pipeline.Underrun(nil), d.Underruns...)
			done <- d
		}})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv)
	defer web.Close()
	app, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(web.URL, "http")+"/ingest?session=kitchen", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	send := func(msg map[string]any) {
		t.Helper()
		if err := app.WriteJSON(msg); err != nil {
			t.Fatal(err)
		}
	}
	const tp = "00-" + traceID + "-" + parentID + "-01"
	send(map[string]any{"type": "turn_start", "turn": "t1", "traceparent": tp, "tracestate": "vendor=1"})
	words := strings.Fields("Sure, the oven is preheating to two hundred degrees and will be ready in about ten minutes.")
	for i, w := range words {
		if i == 3 {
			// the LLM stalls: a second without a token, far more than the
			// few words buffered can cover
			time.Sleep(time.Second)
		}
		send(map[string]any{"type": "chunk", "turn": "t1", "text": " " + w, "tokens": 1})
	}
	send(map[string]any{"type": "turn_end", "turn": "t1", "status": "ok"})
	var d monitor.TurnDone
	select {
	case d = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the monitor did not end the turn within a minute")
	}
	app.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(d.Underruns) == 0 {
		t.Fatal("the monitor counted no underrun in a turn with a one-second stall")
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != otlp.SpanTurn || s.TraceID().String() != traceID || s.ParentSpanID().String() != parentID {
		t.Errorf("span %q trace %s parent %s, want %q in trace %s under span %s",
			s.Name(), s.TraceID(), s.ParentSpanID(), otlp.SpanTurn, traceID, parentID)
	}
	if got := s.TraceState().AsRaw(); got != "vendor=1" {
		t.Errorf("trace state %q, want the turn_start's vendor=1", got)
	}
	if got := s.StartTimestamp().AsTime(); !got.Equal(d.Turn.Start) {
		t.Errorf("span starts %v, want the turn_start's arrival %v", got, d.Turn.Start)
	}
	a := s.Attributes()
	wantStr(t, "span", a, string(otlp.AttrTurn), "t1")
	wantStr(t, "span", a, string(otlp.AttrSession), "kitchen")
	wantStr(t, "span", a, string(otlp.AttrStatus), "ok")
	wantStr(t, "span", a, string(otlp.AttrClock), "wall")
	wantInt(t, "span", a, string(otlp.AttrChunks), len(words))
	if s.Events().Len() != len(d.Underruns) {
		t.Fatalf("%d underrun events, want the monitor's %d", s.Events().Len(), len(d.Underruns))
	}
	for i, u := range d.Underruns {
		ev := s.Events().At(i)
		what := "event"
		wantStr(t, what, ev.Attributes(), string(otlp.AttrClass), string(u.Class))
		wantStr(t, what, ev.Attributes(), string(otlp.AttrCause), string(u.Cause))
		wantInt(t, what, ev.Attributes(), string(otlp.AttrToken), u.Token)
		wantFloat(t, what, ev.Attributes(), string(otlp.AttrITL), pipeline.Millis(u.ITL))
		wantFloat(t, what, ev.Attributes(), string(otlp.AttrDuration), pipeline.Millis(u.Duration))
		if got, want := ev.Timestamp().AsTime(), d.Turn.Start.Add(u.Start); !got.Equal(want) {
			t.Errorf("event %d at %v, want %v", i, got, want)
		}
	}
	stall := false
	for _, u := range d.Underruns {
		stall = stall || u.Token == 3 && u.Cause == pipeline.CauseStall
	}
	if !stall {
		t.Errorf("no underrun blames the stalled token 3 as a stall: %+v", d.Underruns)
	}
}
