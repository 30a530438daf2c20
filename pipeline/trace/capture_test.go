package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
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
			`{"type":"close","stream":"a","t_ns":10}` + "\n", 0, "", `capture:5: stream "a": 2000000000 output tokens; want at most`, false, ""},
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
			var turns []*pipeline.Turn
			var err error
			for {
				var tn *pipeline.Turn
				tn, err = r.Next()
				if err != nil {
					break
				}
				turns = append(turns, tn)
			}
			if tt.errHas == "" && !errors.Is(err, io.EOF) || tt.errHas != "" && (!errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), tt.errHas)) {
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
	s, err := w.Begin("t1", "s1", time.Unix(0, 42), "POST", "/v1/chat/completions", "m")
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
		s, _ := w.Begin(fmt.Sprintf("s%d", i), "", time.Unix(0, 1), "POST", "/v1/chat/completions", "m")
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
