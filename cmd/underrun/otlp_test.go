package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
	"go.opentelemetry.io/otel/attribute"
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
// exit status is the report's.
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
		if s.Name() != otlp.SpanTurn {
			t.Errorf("span %q, want %q", s.Name(), otlp.SpanTurn)
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

	// the standard environment does the same without the flag
	env := otlptest.NewReceiver(t)
	code2, _, stderr := runUnderrun(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + env.URL, "OTEL_SERVICE_NAME=voice-bot"}, "analyze", file)
	if code2 != code {
		t.Errorf("exit %d with the environment's endpoint, %d with --otlp", code2, code)
	}
	if got := len(env.Spans()); got != rep.Turns {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT: %d spans, want %d (%s)", got, rep.Turns, stderr)
	}
	if svc, _ := env.Spans()[0].Resource.Attributes().Get("service.name"); svc.Str() != "voice-bot" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's voice-bot", svc.Str())
	}
}

// TestAnalyzeOTLPUnreachable: an endpoint nobody listens on gives one
// warning, and the report and exit status are as without --otlp.
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
	ea, want := spans[0].Events().At(0).Attributes(), rep.ToolList[0]
	for key, v := range map[attribute.Key]float64{otlp.AttrFillerCovered: want.CoveredMs, otlp.AttrFillerLate: want.LateMs} {
		if got, ok := ea.Get(string(key)); !ok || got.Double() != v || v <= 0 {
			t.Errorf("event %s = %v (%v), want the report's %v ms", key, got.AsRaw(), ok, v)
		}
	}
}

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
	if n := strings.Count(stderr, "warning:"); n != 1 || !strings.Contains(stderr, addr) {
		t.Errorf("stderr %q: want one warning naming %s", stderr, addr)
	}
	code, _, stderr = runUnderrun(t, nil, "analyze", "--otlp", "localhost:4318", file)
	if code != exitUsage || !strings.Contains(stderr, "--otlp") {
		t.Errorf("--otlp without a scheme: exit %d, %q; want a usage error naming --otlp", code, stderr)
	}
}

// TestMonitorOTLP: `monitor --otlp` exports every turn fed into it, as
// a real process stopped as SIGTERM would, and the monitor exits 0.
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
