package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

func TestCaptureReader(t *testing.T) {
	t.Parallel()
	const head = `{"type":"sse_header","format":"underrun-sse","version":1}` + "\n"
	const req = `{"type":"request","stream":"a","start_unix_ns":1}` + "\n"
	const resp = `{"type":"response","stream":"a","t_ns":5,"status":200,"content_type":"text/event-stream"}` + "\n"
	tests := []struct {
		name    string
		in      string
		turns   int
		status  pipeline.Status
		errHas  string
		trunc   bool
		payload string
	}{
		{"whole", head + req + resp + `{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n"}` + "\n" +
			`{"type":"close","stream":"a","t_ns":10}` + "\n", 1, pipeline.StatusOK, "", false, "x"},
		{"open at the end is incomplete", head + req + resp, 1, pipeline.StatusIncomplete, "", false, ""},
		{"truncated last line", head + req + resp + `{"type":"read","stream":"a","t_`, 1, pipeline.StatusIncomplete, "", true, ""},
		{"cancelled", head + req + resp + `{"type":"close","stream":"a","t_ns":10,"cancelled":true}` + "\n", 1, pipeline.StatusCancelled, "", false, ""},
		{"unknown types ignored", head + `{"type":"note","x":1}` + "\n" + req + resp, 1, pipeline.StatusIncomplete, "", false, ""},
		{"empty", "", 0, "", "capture:1: empty input", false, ""},
		{"garbage only", "garbage", 0, "", "capture:1: not a JSON object", false, ""},
		{"only line cut off", `{"type":"sse_header","form`, 0, "", "capture:1: not valid JSON", false, ""},
		{"long second line", head + `{"type":"read","data":"` + strings.Repeat("x", MaxCaptureLine+1) + "\"}\n", 0, "", "capture:2: line longer than", false, ""},
		{"bad middle line", head + "nonsense\n" + req, 0, "", "capture:2: not a JSON object", false, ""},
		{"wrong format", `{"type":"sse_header","format":"other"}` + "\n", 0, "", `want "underrun-sse"`, false, ""},
		{"newer version", `{"type":"sse_header","format":"underrun-sse","version":9}` + "\n", 0, "", "newer", false, ""},
		{"read before request", head + `{"type":"read","stream":"b","t_ns":1,"data":""}` + "\n", 0, "", "before its request", false, ""},
		{"read before response", head + req + `{"type":"read","stream":"a","t_ns":1,"data":""}` + "\n", 0, "", "before its response", false, ""},
		{"time backwards", head + req + resp + `{"type":"read","stream":"a","t_ns":1,"data":""}` + "\n", 0, "", "before the previous", false, ""},
		{"negative time", head + req + `{"type":"response","stream":"a","t_ns":-1,"status":200}` + "\n", 0, "", "t_ns -1; want a time from 0", false, ""},
		{"time past a year", head + req + `{"type":"response","stream":"a","t_ns":9223372036854775807,"status":200}` + "\n", 0, "", "t_ns 9223372036854775807; want a time from 0", false, ""},
		{"usage past the token limit", head + req + resp + `{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}],\"usage\":{\"completion_tokens\":2000000000}}\n\n"}` + "\n" +
			`{"type":"close","stream":"a","t_ns":10}` + "\n", 1, pipeline.StatusError, "", false, ""}, // refused at the limits as it streamed
		{"no time", head + req + `{"type":"response","stream":"a","status":200}` + "\n", 0, "", `no "t_ns"`, false, ""},
		{"bad status", head + req + `{"type":"response","stream":"a","t_ns":1,"status":7}` + "\n", 0, "", "HTTP status", false, ""},
		{"bad base64", head + req + resp + `{"type":"read","stream":"a","t_ns":9,"data_b64":"!!"}` + "\n", 0, "", "data_b64", false, ""},
		{"no data", head + req + resp + `{"type":"read","stream":"a","t_ns":9}` + "\n", 0, "", `no "data"`, false, ""},
		{"twice begun", head + req + req, 0, "", "second time", false, ""},
		{"after close", head + req + resp + `{"type":"close","stream":"a","t_ns":10}` + "\n" + `{"type":"close","stream":"a","t_ns":10}` + "\n", 1, pipeline.StatusError, "after its close", false, ""},
		{"wrong field type", head + `{"type":"request","stream":5}` + "\n", 0, "", `field "stream"`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewCaptureReader(strings.NewReader(tt.in), "capture")
			turns, err := readTurns(r)
			if tt.errHas == "" && err != nil || tt.errHas != "" && (!errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("error %v, want one containing %q", err, tt.errHas)
			}
			if len(turns) != tt.turns {
				t.Fatalf("%d turns, want %d", len(turns), tt.turns)
			}
			if tt.turns > 0 && tt.errHas == "" && (turns[0].Status != tt.status || turns[0].Text() != tt.payload) {
				t.Errorf("turn %+v, want status %s text %q", turns[0], tt.status, tt.payload)
			}
			if r.Truncated != tt.trunc {
				t.Errorf("truncated %v, want %v", r.Truncated, tt.trunc)
			}
		})
	}
}

// TestCaptureJoinsToolCalls: the streams of a tool-calling exchange read
// back as one turn, returned when its last stream ends: two calls, the
// second stream's times 2 s later and the third's 3.5 s later in the turn,
// usage summed; a stream between them is a turn of its own, and a turn
// whose call got no results comes at the end, its call not returned.
func TestCaptureJoinsToolCalls(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, "test")
	text := func(s string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}` + "\n\n"
	}
	call := func(id string) string {
		return `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n"
	}
	const usage = `data: {"choices":[],"usage":{"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"
	stream := func(r CaptureRequest, reads ...string) {
		s, err := w.Begin(r)
		if err != nil {
			t.Fatal(err)
		}
		s.Response(200, "text/event-stream", 10*ms)
		for i, b := range reads {
			s.Read([]byte(b), time.Duration(100+100*i)*ms)
		}
		s.Close(time.Duration(100+100*len(reads))*ms, nil, false)
	}
	start := time.Unix(1000, 0)
	req := func(id string, at time.Duration) CaptureRequest {
		return CaptureRequest{Stream: id, Start: start.Add(at), Method: "POST", Path: "/v1/chat/completions", Model: "m"}
	}
	stream(req("a", 0), text("Let me"), text(" check."), call("c1")+usage) // calls at 300 ms
	stream(req("other", 500*ms), text("Hi.")+usage)                        // its own turn
	stream(req("lost", 600*ms), text("One moment."), call("c9")+usage)     // no results come
	again := req("b", 2*time.Second)
	again.Resumes, again.ResumeAt = "a", 2*time.Second
	stream(again, text(" Sunny"), call("c2")+usage) // calls again, at 2.2 s in the turn
	last := req("c", 3500*ms)
	last.Resumes, last.ResumeAt = "a", 3500*ms
	stream(last, text(" and warm.")+usage)

	turns := testkit.All(t, NewCaptureReader(bytes.NewReader(buf.Bytes()), "capture").Next)
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3:\n%s", len(turns), buf.String())
	}
	other, joined, lost := turns[0], turns[1], turns[2]
	if other.ID != "other" || other.Text() != "Hi." {
		t.Errorf("first turn %+v, want the stream between", other)
	}
	wantChunks := []pipeline.Chunk{{At: 100 * ms, Text: "Let me"}, {At: 200 * ms, Text: " check."},
		{At: 2100 * ms, Text: " Sunny"}, {At: 3600 * ms, Text: " and warm."}}
	wantCalls := []pipeline.ToolCall{{At: 300 * ms, Duration: 1700 * ms, Name: "get_weather"}, {At: 2200 * ms, Duration: 1300 * ms, Name: "get_weather"}}
	if joined.ID != "a" || joined.Status != pipeline.StatusOK || joined.OutputTokens != 6 ||
		!slices.Equal(joined.Chunks, wantChunks) || !slices.Equal(joined.ToolCalls, wantCalls) {
		t.Errorf("joined turn %+v\nwant chunks %+v, calls %+v, 6 output tokens", joined, wantChunks, wantCalls)
	}
	if lost.ID != "lost" || len(lost.ToolCalls) != 1 || lost.ToolCalls[0] != (pipeline.ToolCall{At: 200 * ms, Name: "get_weather"}) {
		t.Errorf("last turn %+v, want the one whose call got no results", lost)
	}

	// a stream resuming what is not waiting, or with no time, is refused
	head := `{"type":"sse_header","format":"underrun-sse","version":1}` + "\n"
	for _, tt := range []struct{ name, in, errHas string }{
		{"unknown turn", head + `{"type":"request","stream":"b","resumes":"a","resume_t_ns":5}` + "\n", `capture:2: stream "b" resumes turn "a", which is not waiting for tool results`},
		{"a turn still streaming", head + `{"type":"request","stream":"a"}` + "\n" + `{"type":"request","stream":"b","resumes":"a","resume_t_ns":5}` + "\n", "capture:3: stream \"b\" resumes turn \"a\", which is not waiting"},
		{"no time", strings.Replace(buf.String(), `,"resume_t_ns":2000000000`, "", 1), `resumes turn "a"; want "resume_t_ns"`},
		{"before the call", strings.Replace(buf.String(), `"resume_t_ns":2000000000`, `"resume_t_ns":2`, 1), `resumes turn "a" at resume_t_ns 2, before the turn stopped for its tool call at 300000000`},
		{"a turn that did not stop for tools", strings.Replace(buf.String(), `"resumes":"a","resume_t_ns":3500000000`, `"resumes":"other","resume_t_ns":3500000000`, 1), `stream "c" resumes turn "other", which is not waiting`},
	} {
		_, err := readTurns(NewCaptureReader(strings.NewReader(tt.in), "capture"))
		if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.errHas)
		}
	}
}

// FuzzCaptureReader checks that no input makes the reader panic, loop,
// hold memory out of proportion or return turns that cannot be real.
func FuzzCaptureReader(f *testing.F) {
	f.Add([]byte(`{"type":"sse_header","format":"underrun-sse","version":1}
{"type":"request","stream":"a","start_unix_ns":1}
{"type":"response","stream":"a","t_ns":5,"status":200,"content_type":"text/event-stream"}
{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"}
{"type":"read","stream":"a","t_ns":9,"data_b64":"ZGF0YTogW0RPTkVdCgo="}
{"type":"close","stream":"a","t_ns":10}
`))
	f.Add([]byte(`{"type":"request","stream":"a"}` + "\n" + `{"type":"response","stream":"a","t_ns":0,"status":500}` + "\n"))
	// issue 45: a start near the int64 limits
	f.Add([]byte(`{"type":"request","stream":"a","start_unix_ns":9223372036854775000}` + "\n"))
	// a tool-calling exchange: the second stream resumes the first's turn
	f.Add([]byte(`{"type":"request","stream":"a","start_unix_ns":1}
{"type":"response","stream":"a","t_ns":5,"status":200}
{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\",\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"}
{"type":"close","stream":"a","t_ns":10}
{"type":"request","stream":"b","resumes":"a","resume_t_ns":50}
{"type":"response","stream":"b","t_ns":5,"status":200}
{"type":"read","stream":"b","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\"}}]}\n\n"}
`))
	// fields the format does not define: read past, warned of once
	f.Add([]byte(`{"type":"request","stream":"a","retries":0}` + "\n" + `{"type":"close","stream":"a","t_ns":1,"retries":1,"x":{"y":[1]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewCaptureReader(bytes.NewReader(data), "fuzz")
		drainFuzz(t, d, data, 10000, ErrCapture, func() {
			if n := len(d.Warnings()); n > maxFieldWarnings+1 {
				t.Fatalf("%d warnings; want at most %d", n, maxFieldWarnings+1)
			}
		})
	})
}
func TestOpenSSECapture(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, "test")
	s, err := w.Begin(CaptureRequest{Stream: "t1", Session: "s1", Start: time.Unix(0, 42), Method: "POST", Path: "/v1/chat/completions", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	chunk := func(text string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}` + "\n\n"
	}
	for _, err := range []error{
		s.Response(200, "text/event-stream", 100*ms),
		s.Read([]byte(chunk("Hello")), 300*ms),
		s.Read([]byte(chunk(" there")+"data: [DONE]\n\n"), 340*ms),
		s.Close(341*ms, nil, false),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	dec, err := Open(bytes.NewReader(buf.Bytes()), "capture.jsonl", "auto")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := []pipeline.Chunk{{At: 300 * ms, Text: "Hello"}, {At: 340 * ms, Text: " there"}}
	if turn.ID != "t1" || turn.Session != "s1" || turn.Status != pipeline.StatusOK || len(turn.Chunks) != 2 ||
		turn.Chunks[0] != want[0] || turn.Chunks[1] != want[1] {
		t.Errorf("turn %+v", turn)
	}
	if _, err := dec.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last turn: %v, want EOF", err)
	}

	bad := `{"type":"sse_header","format":"underrun-sse","version":1}` + "\nnot json\n{}\n"
	dec, err = Open(strings.NewReader(bad), "bad.jsonl", "sse")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Next(); !errors.Is(err, ErrFormat) || !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("error %v, want an ErrFormat naming bad.jsonl:2", err)
	}
}

// benchCapture writes a raw SSE capture of about size bytes with the
// CaptureWriter: streams of 200 reads of one chat delta each.
func benchCapture(size int) []byte {
	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, "bench")
	for i := 0; buf.Len() < size; i++ {
		s, _ := w.Begin(CaptureRequest{Stream: fmt.Sprintf("s%d", i), Start: time.Unix(0, 1), Method: "POST", Path: "/v1/chat/completions", Model: "m"})
		s.Response(200, "text/event-stream", time.Millisecond)
		for k := range 200 {
			s.Read([]byte(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" word"}}]}`+"\n\n"), time.Duration(300+k*41)*time.Millisecond)
		}
		s.Close(9*time.Second, nil, false)
	}
	return buf.Bytes()
}

// BenchmarkCaptureReader reads a raw SSE capture as the writer wrote it,
// from a file, as BenchmarkNativeReaderFile.
func BenchmarkCaptureReader(b *testing.B) {
	benchRead(b, benchFile(b, "capture.jsonl", func(w *bufio.Writer, size int64) {
		w.Write(benchCapture(int(size)))
	}), "")
}
