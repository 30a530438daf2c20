package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
	"github.com/speech-pipeline/underrun/sim"
)

// runUnderrun runs this test binary as the underrun command, a real
// process, with extra environment.
func runUnderrun(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "UNDERRUN_TEST_EXEC=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestAnalyzeOTLP: analyze --otlp sends a span per turn, with one event
// per underrun the report lists, to a real OTLP/HTTP receiver, and the
// exit status is the report's. A trace that does not say which model
// answered gives speech turns: underrun.* attributes alone.
func TestAnalyzeOTLP(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	const file = "testdata/analyze/handcheck.jsonl"
	code, out, stderr := runUnderrun(t, nil, "analyze", "--report", "json", "--per-turn", "--otlp", rcv.URL, file)
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	var rep pipeline.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != rep.Turns {
		t.Fatalf("%d spans, want one per turn (%d)", len(spans), rep.Turns)
	}
	events := 0
	for _, s := range spans {
		if s.Name() != otlp.SpanTurn || s.Kind() != ptrace.SpanKindInternal {
			t.Errorf("span %q of kind %v, want %q, internal", s.Name(), s.Kind(), otlp.SpanTurn)
		}
		for k := range s.Attributes().All() {
			if !strings.HasPrefix(k, "underrun.") {
				t.Errorf("a speech turn carries %s: want underrun.* attributes only", k)
			}
		}
		events += s.Events().Len()
		cmd, _ := s.Resource.Attributes().Get("underrun.command")
		if cmd.Str() != "analyze" {
			t.Errorf("underrun.command %q, want analyze", cmd.Str())
		}
		turn, _ := s.Attributes().Get(string(otlp.AttrTurn))
		for _, tr := range rep.PerTurn {
			if tr.Turn != turn.Str() {
				continue
			}
			ttft, _ := s.Attributes().Get(string(otlp.AttrTTFT))
			if ttft.Double() != tr.TTFTMs {
				t.Errorf("turn %s: span TTFT %v ms, report %v ms", tr.Turn, ttft.Double(), tr.TTFTMs)
			}
			if n := s.Events().Len(); n != tr.Underruns.Count {
				t.Errorf("turn %s: %d events, report %d underruns", tr.Turn, n, tr.Underruns.Count)
			}
		}
	}
	if events != rep.Underruns.Count {
		t.Errorf("%d underrun events, the report counts %d", events, rep.Underruns.Count)
	}
	if len(rcv.Metric("gen_ai.client.operation.time_to_first_chunk")) == 0 {
		t.Errorf("no time_to_first_chunk metric; got %v", rcv.MetricNames())
	}

	// the standard environment does the same without the flag, with its
	// headers
	env := otlptest.NewReceiver(t)
	code2, _, stderr := runUnderrun(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + env.URL, "OTEL_SERVICE_NAME=voice-bot",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20cGs6c2s="}, "analyze", file)
	if code2 != code {
		t.Errorf("exit %d with the environment's endpoint, %d with --otlp", code2, code)
	}
	if got := len(env.Spans()); got != rep.Turns {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT: %d spans, want %d (%s)", got, rep.Turns, stderr)
	}
	if svc, _ := env.Spans()[0].Resource.Attributes().Get("service.name"); svc.Str() != "voice-bot" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's voice-bot", svc.Str())
	}
	if got := env.Header("Authorization"); got != "Basic cGs6c2s=" {
		t.Errorf("Authorization %q, want OTEL_EXPORTER_OTLP_HEADERS's", got)
	}
}

// vllmResult is a vLLM bench serve --save-detailed result of three
// requests without start times, of the model example/voice-8b.
const vllmResult = `{"backend": "openai-chat", "model_id": "example/voice-8b", "num_prompts": 3, "completed": 3,
 "ttfts": [0.21, 0.35, 0.18], "itls": [[0.03, 0.04, 0.9, 0.03], [0.02, 0.03], [0.05, 0.04, 0.03]],
 "output_lens": [5, 3, 4], "errors": ["", "", ""],
 "generated_texts": ["Sure, the oven is hot.", "It is sunny.", "Ten minutes more, I think."]}`

// TestAnalyzeOTLPCall: a benchmark's result names the model it called:
// each request is the GenAI client span of that call ("chat MODEL", kind
// client), its spans laid one after another so that the last ends as the
// run ends, none in the future. A result whose requests went to
// /v1/completions (vLLM's endpoint_type openai) gives text_completion
// spans and GenAI metrics, not chat (issue 49).
func TestAnalyzeOTLPCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ result, op string }{
		{vllmResult, "chat"},
		{strings.Replace(vllmResult, `"backend": "openai-chat"`, `"endpoint_type": "openai", "backend": "openai"`, 1), "text_completion"},
	} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			rcv := otlptest.NewReceiver(t)
			file := filepath.Join(t.TempDir(), "result.json")
			if err := os.WriteFile(file, []byte(tc.result), 0o644); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			code, _, stderr := runUnderrun(t, nil, "analyze", "--otlp", rcv.URL, file)
			after := time.Now()
			if code != exitOK && code != exitFail || stderr != "" {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			spans := rcv.Spans()
			if len(spans) != 3 {
				t.Fatalf("%d spans, want 3", len(spans))
			}
			for _, s := range spans {
				if want := tc.op + " example/voice-8b"; s.Name() != want || s.Kind() != ptrace.SpanKindClient {
					t.Errorf("span %q of kind %v, want %q, client", s.Name(), s.Kind(), want)
				}
				if m, _ := s.Attributes().Get("gen_ai.request.model"); m.Str() != "example/voice-8b" {
					t.Errorf("gen_ai.request.model %q", m.Str())
				}
				if op, _ := s.Attributes().Get("gen_ai.operation.name"); op.Str() != tc.op {
					t.Errorf("gen_ai.operation.name %q, want %s", op.Str(), tc.op)
				}
			}
			checkLaidOut(t, spans, before, after)
			checkOperations(t, rcv, tc.op)
		})
	}
}

// checkOperations checks that the GenAI duration metric's data points say
// the operations want, and no other.
func checkOperations(t *testing.T, rcv *otlptest.Receiver, want ...string) {
	t.Helper()
	ms := rcv.Metric("gen_ai.client.operation.duration")
	if len(ms) == 0 {
		t.Fatalf("no gen_ai.client.operation.duration; got %v", rcv.MetricNames())
	}
	var got []string
	dps := ms[len(ms)-1].Histogram().DataPoints()
	for i := range dps.Len() {
		op, _ := dps.At(i).Attributes().Get("gen_ai.operation.name")
		got = append(got, op.Str())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("gen_ai.client.operation.duration by gen_ai.operation.name: %v, want %v", got, want)
	}
}

// TestProxyOTLPOperation (issue 49): streams through the proxy carry the
// operation of the path they went to: a /v1/completions request is a
// text_completion span, a /v1/chat/completions one a chat span, in the
// spans and the GenAI metrics, and in the proxy's recording.
func TestProxyOTLPOperation(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	mock := httptest.NewServer(&openai.Mock{Turns: []*pipeline.Turn{sim.ConstantTurn("a", "Sure, it is ready.", 20*time.Millisecond, 5*time.Millisecond, nil)}})
	defer mock.Close()
	recording := filepath.Join(t.TempDir(), "proxy.jsonl")
	proxy := startServer(t, "proxy", "--listen", "127.0.0.1:0", "--url", mock.URL, "--otlp", rcv.URL, "-o", recording)
	c := &openai.Client{BaseURL: proxy.url}
	for i, api := range []openai.API{openai.APICompletions, openai.APIChat} {
		s, err := c.Stream(context.Background(), strconv.Itoa(i), "", openai.Request{API: api, Model: "voice-8b", Prompt: openai.Prompt{Text: "hi"}})
		if err != nil || s.Turn.Status != pipeline.StatusOK {
			t.Fatalf("%s through the proxy: %v %v", api, s, err)
		}
	}
	if code := proxy.stop(t); code != exitOK && code != exitFail {
		t.Fatalf("proxy: exit %d: %s", code, proxy.stderr.String())
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %s", len(spans), proxy.stderr.String())
	}
	var names []string
	for _, s := range spans {
		op, _ := s.Attributes().Get("gen_ai.operation.name")
		names = append(names, s.Name()+" / "+op.Str())
	}
	slices.Sort(names)
	if want := []string{"chat voice-8b / chat", "text_completion voice-8b / text_completion"}; !slices.Equal(names, want) {
		t.Errorf("spans %q, want %q", names, want)
	}
	checkOperations(t, rcv, "chat", "text_completion")
	var ops []pipeline.Operation
	for _, tn := range readTurns(t, recording) {
		ops = append(ops, tn.Operation)
	}
	if want := []pipeline.Operation{pipeline.OperationTextCompletion, pipeline.OperationChat}; !slices.Equal(ops, want) {
		t.Errorf("the proxy's recording: operations %q, want %q", ops, want)
	}
}

// checkLaidOut checks spans laid one after another, the last ending
// while the run ended (between before and after), none in the future.
func checkLaidOut(t *testing.T, spans []otlptest.Span, before, after time.Time) {
	t.Helper()
	slices.SortFunc(spans, func(a, b otlptest.Span) int { return a.StartTimestamp().AsTime().Compare(b.StartTimestamp().AsTime()) })
	for i, s := range spans {
		if i > 0 && !s.StartTimestamp().AsTime().Equal(spans[i-1].EndTimestamp().AsTime()) {
			t.Fatalf("span %d starts %v, want where the one before ended, %v", i, s.StartTimestamp().AsTime(), spans[i-1].EndTimestamp().AsTime())
		}
		if end := s.EndTimestamp().AsTime(); end.After(after) {
			t.Fatalf("span %d ends %v, after the run ended (%v): in the future", i, end, after)
		}
	}
	if end := spans[len(spans)-1].EndTimestamp().AsTime(); end.Before(before) {
		t.Errorf("the last span ends %v, before the run began (%v)", end, before)
	}
}

// TestSimOTLPSlowTraceOnly: a trace-only backend that answers each export
// in 300 ms, as hosted ones do (404 on /v1/metrics). sim --turns 3000 and
// 10,000 deliver every span, exit 0, and say once, as a note and no
// warning, that the backend takes no metrics; with
// OTEL_METRICS_EXPORTER=none nothing is said and no metrics are sent.
// The turns have no start times: they end as the run ends.
func TestSimOTLPSlowTraceOnly(t *testing.T) {
	t.Parallel()
	counts := []int{3000, 10000}
	if testing.Short() {
		counts = counts[:1]
	}
	for _, n := range counts {
		rcv := otlptest.NewReceiverWith(t, otlptest.Options{Latency: 300 * time.Millisecond, TracesOnly: true})
		before := time.Now()
		code, _, stderr := runUnderrun(t, nil, "sim", "tpot-50ms", "--turns", strconv.Itoa(n), "--otlp", rcv.URL)
		after := time.Now()
		if code != exitOK {
			t.Fatalf("%d turns: exit %d: %s", n, code, stderr)
		}
		if strings.Contains(stderr, "warning") || strings.Count(stderr, "note:") != 1 || !strings.Contains(stderr, "takes no metrics") {
			t.Errorf("%d turns: stderr %q; want one note that the backend takes no metrics, no warning", n, stderr)
		}
		spans := rcv.Spans()
		if len(spans) != n {
			t.Fatalf("%d turns: %d of %d spans delivered", n, len(spans), n)
		}
		checkLaidOut(t, spans, before, after)
		t.Logf("%d turns: %d of %d spans delivered in %v; stderr %q", n, len(spans), n, after.Sub(before).Round(time.Millisecond), stderr)
	}
	rcv := otlptest.NewReceiverWith(t, otlptest.Options{Latency: 300 * time.Millisecond, TracesOnly: true})
	code, _, stderr := runUnderrun(t, []string{"OTEL_METRICS_EXPORTER=none"}, "sim", "tpot-50ms", "--turns", "100", "--otlp", rcv.URL)
	if code != exitOK || stderr != "" || len(rcv.Spans()) != 100 || rcv.Refused("/v1/metrics") != 0 {
		t.Errorf("OTEL_METRICS_EXPORTER=none: exit %d, stderr %q, %d spans, %d metric requests; want 0, nothing, 100, none",
			code, stderr, len(rcv.Spans()), rcv.Refused("/v1/metrics"))
	}
}

// TestReplayOTLPSpeed: replay --speed 10 keeps the wall-clock length of
// the playing: every span starts within the run and lasts a tenth of its
// turn (the request to the last audio: time to first audio, speech and
// silences), its events a tenth as far in, and the figures stay the
// turn's own.
func TestReplayOTLPSpeed(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "trace.jsonl")
	// two turns of about 2 s of stream each, one after the other, the
	// second with a 900 ms stall
	first := sim.ConstantTurn("t1", "Sure, the oven is preheating and will be ready in ten minutes.", 200*time.Millisecond, 150*time.Millisecond, nil)
	second := sim.ConstantTurn("t2", "It is sunny and warm today, with a light breeze from the west.", 300*time.Millisecond, 120*time.Millisecond,
		[]sim.Stall{{Token: 4, Delay: 900 * time.Millisecond}})
	start := time.Unix(1764669600, 0)
	first.Start, second.Start = start, start.Add(3*time.Second)
	writeTrace(t, file, first, second)
	before := time.Now()
	code, _, stderr := runUnderrun(t, nil, "replay", "--speed", "10", "--otlp", rcv.URL, file)
	after := time.Now()
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %s", len(spans), stderr)
	}
	events := 0
	for _, s := range spans {
		from, to := s.StartTimestamp().AsTime(), s.EndTimestamp().AsTime()
		if from.Before(before) || from.After(after) {
			t.Errorf("span starts %v, outside the run (%v to %v)", from, before, after)
		}
		ms := func(k attribute.Key) float64 { v, _ := s.Attributes().Get(string(k)); return v.Double() }
		turn := time.Duration((ms(otlp.AttrTTFA) + ms(otlp.AttrSpeech) + ms(otlp.AttrUnderrunMs)) * float64(time.Millisecond))
		if got := to.Sub(from); (got - turn/10).Abs() > time.Millisecond {
			t.Errorf("span lasts %v for a turn of %v (to its last audio): want a tenth, %v", got, turn, turn/10)
		}
		for i := range s.Events().Len() {
			ev := s.Events().At(i)
			at, _ := ev.Attributes().Get(string(otlp.AttrStart))
			want := from.Add(time.Duration(at.Double() * float64(time.Millisecond) / 10))
			if (ev.Timestamp().AsTime().Sub(want)).Abs() > time.Microsecond {
				t.Errorf("event at %v, want a tenth of its %v ms in: %v", ev.Timestamp().AsTime(), at.Double(), want)
			}
			events++
		}
		if sp, _ := s.Attributes().Get(string(otlp.AttrSpeed)); sp.Double() != 10 {
			t.Errorf("underrun.speed %v, want 10", sp.Double())
		}
	}
	if events == 0 {
		t.Error("no underrun event, though the second turn stalls 900 ms")
	}
	t.Logf("run %v; spans %v and %v", after.Sub(before).Round(time.Millisecond),
		spans[0].EndTimestamp().AsTime().Sub(spans[0].StartTimestamp().AsTime()),
		spans[1].EndTimestamp().AsTime().Sub(spans[1].StartTimestamp().AsTime()))
}

// TestCaptureOTLP: capture called the server itself: each request is the
// GenAI client span of its call, with the model it asked for, the
// operation of the API it spoke (chat, text_completion for --api
// completions), the provider of that API and the server's address.
func TestCaptureOTLP(t *testing.T) {
	t.Parallel()
	for api, op := range map[string]string{"chat": "chat", "completions": "text_completion"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			testCaptureOTLP(t, api, op)
		})
	}
}

func testCaptureOTLP(t *testing.T, api, op string) {
	rcv := otlptest.NewReceiver(t)
	mock := httptest.NewServer(&openai.Mock{})
	defer mock.Close()
	code, _, stderr := runUnderrun(t, nil, "capture", "--url", mock.URL, "--api", api, "--model", "voice-8b", "--requests", "2", "--otlp", rcv.URL)
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %s", len(spans), stderr)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(mock.URL, "http://"))
	for _, s := range spans {
		a := s.Attributes()
		if s.Name() != op+" voice-8b" || s.Kind() != ptrace.SpanKindClient {
			t.Errorf("span %q of kind %v, want \"%s voice-8b\", client", s.Name(), s.Kind(), op)
		}
		for k, want := range map[string]string{"gen_ai.provider.name": "openai", "gen_ai.request.model": "voice-8b",
			"gen_ai.operation.name": op, "server.address": "127.0.0.1"} {
			if v, _ := a.Get(k); v.Str() != want {
				t.Errorf("%s = %q, want %q", k, v.Str(), want)
			}
		}
		if v, _ := a.Get("server.port"); strconv.FormatInt(v.Int(), 10) != port {
			t.Errorf("server.port %d, want %s", v.Int(), port)
		}
		if cmd, _ := s.Resource.Attributes().Get("underrun.command"); cmd.Str() != "capture" {
			t.Errorf("underrun.command %q, want capture", cmd.Str())
		}
	}
}

// TestAnalyzeOTLPFiller: with --filler, the tool-call silence's event
// carries what the report says the filler covers and how long the phrase
// holds back the reply.
func TestAnalyzeOTLPFiller(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	const file = "../../pipeline/trace/testdata/native/tool-call.jsonl"
	code, out, stderr := runUnderrun(t, nil, "analyze", "--report", "json", "--filler", `after:2s:"One moment, please."`, "--otlp", rcv.URL, file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep pipeline.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(rep.ToolList) != 1 || len(spans) != 1 || spans[0].Events().Len() != 1 {
		t.Fatalf("%d tool-call silences in the report, %d spans: want one silence, one span with its event", len(rep.ToolList), len(spans))
	}
	ev, want := spans[0].Events().At(0), rep.ToolList[0]
	if ev.Name() != otlp.EventToolSilence {
		t.Errorf("event %q, want %q", ev.Name(), otlp.EventToolSilence)
	}
	for key, v := range map[attribute.Key]float64{otlp.AttrFillerCovered: want.CoveredMs, otlp.AttrFillerLate: want.LateMs} {
		if got, ok := ev.Attributes().Get(string(key)); !ok || got.Double() != v || v <= 0 {
			t.Errorf("event %s = %v (%v), want the report's %v ms", key, got.AsRaw(), ok, v)
		}
	}
	if name, _ := ev.Attributes().Get(string(otlp.AttrToolName)); name.Str() != want.Tool {
		t.Errorf("event %s = %q, want the report's %q", otlp.AttrToolName, name.Str(), want.Tool)
	}
}

// TestAnalyzeOTLPUnreachable: an endpoint nobody listens on gives one
// warning with the failure and, at exit, one saying that 0 of the spans
// were delivered; the report and exit status are as without --otlp.
func TestAnalyzeOTLPUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const file = "testdata/analyze/handcheck.jsonl"
	code, out, stderr := runUnderrun(t, nil, "analyze", "--otlp", "http://"+addr, file)
	wantCode, wantOut, _ := runUnderrun(t, nil, "analyze", file)
	if code != wantCode || out != wantOut {
		t.Errorf("with an unreachable --otlp: exit %d and a report that differs (%v); want exit %d, the same report", code, out != wantOut, wantCode)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "warning: OTLP export failed to http://"+addr) ||
		!regexp.MustCompile(`warning: OTLP: 0 of \d+ spans delivered`).MatchString(lines[1]) {
		t.Errorf("stderr %q: want the failure naming %s, then how many spans were delivered", stderr, addr)
	}
	code, _, stderr = runUnderrun(t, nil, "analyze", "--otlp", "localhost:4318", file)
	if code != exitUsage || !strings.Contains(stderr, "--otlp") {
		t.Errorf("--otlp without a scheme: exit %d, %q; want a usage error naming --otlp", code, stderr)
	}
	code, _, stderr = runUnderrun(t, []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "analyze", "--otlp", "http://"+addr, file)
	if code != exitUsage || !strings.Contains(stderr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") {
		t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: exit %d, %q; want a usage error naming it", code, stderr)
	}
}

// TestMonitorOTLP: `monitor --otlp` exports every turn fed into it, as
// a real process stopped as SIGTERM would, its /metrics count the spans
// delivered, and the monitor exits 0.
func TestMonitorOTLP(t *testing.T) {
	t.Parallel()
	rcv := otlptest.NewReceiver(t)
	orig := filepath.Join(t.TempDir(), "orig.jsonl")
	writeTrace(t, orig, fourWordTurn("t1", "kitchen"), fourWordTurn("t2", "car"))
	srv := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--events", "", "--otlp", rcv.URL,
		"--chunking", "token", "--token-audio", "80ms", "--tts-latency", "0", "--rtf", "0")
	if code, out, errOut := runCLI(t, "", "monitor", "feed", orig, "--monitor", srv.url); code != exitOK {
		t.Fatalf("feed: exit %d, %q, %s", code, out, errOut)
	}
	// the live queue sends within a second
	delivered := regexp.MustCompile(`underrun_otlp_spans_total\{result="delivered"\} (\d+)`)
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(srv.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
		if m := delivered.FindStringSubmatch(metrics); m != nil && m[1] == "2" {
			break
		}
	}
	if m := delivered.FindStringSubmatch(metrics); m == nil || m[1] != "2" {
		t.Errorf("/metrics: want underrun_otlp_spans_total{result=\"delivered\"} 2; got %v", m)
	}
	for _, want := range []string{`underrun_otlp_spans_total{result="dropped"} 0`, `underrun_otlp_spans_total{result="failed"} 0`,
		`underrun_otlp_exports_failed_total{signal="traces"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics: no %s", want)
		}
	}
	if code := srv.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, srv.stderr.String())
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per turn fed (2): %s", len(spans), srv.stderr.String())
	}
	events := 0
	for _, s := range spans {
		events += s.Events().Len()
		if cmd, _ := s.Resource.Attributes().Get("underrun.command"); cmd.Str() != "monitor" {
			t.Errorf("underrun.command %q, want monitor", cmd.Str())
		}
	}
	if events == 0 {
		t.Error("no underrun event, though each turn stalls 340 ms with 160 ms of audio buffered")
	}
}

// TestOTLPCollector: analyze and sim --otlp through a real OpenTelemetry
// Collector (v0.165.0, built by .ci/run; skips without it): every turn
// arrives, with the metrics, and nothing is said on stderr.
func TestOTLPCollector(t *testing.T) {
	t.Parallel()
	col := otlptest.StartCollector(t)
	file := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(file, []byte(vllmResult), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runUnderrun(t, nil, "analyze", "--otlp", col.URL, file); (code != exitOK && code != exitFail) || stderr != "" {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runUnderrun(t, nil, "sim", "tpot-50ms", "--turns", "500", "--otlp", col.URL); code != exitOK || stderr != "" {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	got := col.Stop(t)
	calls, turns := 0, 0
	for _, s := range got.Spans {
		switch s.Name() {
		case "chat example/voice-8b":
			calls++
		case otlp.SpanTurn:
			turns++
		}
	}
	if calls != 3 || turns != 500 {
		t.Errorf("through the Collector: %d calls and %d speech turns, want 3 and 500", calls, turns)
	}
	for _, name := range []string{"gen_ai.client.operation.time_per_output_chunk", otlp.MetricTurns, otlp.MetricTPOT} {
		if len(got.Metrics[name]) == 0 {
			t.Errorf("no %s through the Collector", name)
		}
	}
}
