package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func readCapture(t *testing.T, data []byte) []*Stream {
	t.Helper()
	r := NewCaptureReader(bytes.NewReader(data), "capture")
	var out []*Stream
	for {
		s, err := r.NextStream()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
}

// TestCaptureRoundTrip records live streams (some with bytes that are not
// UTF-8, split inside a rune) and checks that reading the capture gives
// exactly the turns and stats the client recorded.
func TestCaptureRoundTrip(t *testing.T) {
	t.Parallel()
	euro := chat(`{"content":"€ sign"}`)
	cut := strings.Index(euro, "€") + 1 // inside the rune: a read that is not UTF-8
	srv := scripted(t, 200, "text/event-stream", []step{
		{write: ": hello\n\n" + chat(`{"role":"assistant","content":""}`)},
		{write: euro[:cut], sleep: 2 * time.Millisecond}, {write: euro[cut:]},
		{write: chat(`{"reasoning_content":"hm"}`)}, {write: finishChunk + usageChunk + done}}, nil)
	errSrv := scripted(t, 500, "application/json", []step{{write: `{"error":{"message":"down"}}`}}, nil)

	var buf bytes.Buffer
	cw := NewCaptureWriter(&buf, "test")
	var live []*Stream
	for i, url := range []string{srv.URL, errSrv.URL, srv.URL} {
		c := &Client{BaseURL: url, Capture: cw}
		s, err := c.Stream(context.Background(), "t"+string(rune('0'+i)), "s", Request{Model: "m", Prompt: Prompt{Text: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, s)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"data_b64"`)) {
		t.Error("the split rune was not captured as data_b64")
	}
	if !SniffCapture(buf.Bytes()) {
		t.Error("SniffCapture does not know its own capture")
	}
	back := readCapture(t, buf.Bytes())
	if len(back) != len(live) {
		t.Fatalf("read %d streams, recorded %d", len(back), len(live))
	}
	for i := range live {
		a, b := live[i], back[i]
		if !a.Turn.Start.Equal(b.Turn.Start) {
			t.Errorf("stream %d: start %v, read back %v", i, a.Turn.Start, b.Turn.Start)
		}
		a.Turn.Start, b.Turn.Start = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a.Turn, b.Turn) {
			t.Errorf("stream %d: live turn\n%+v\nread back\n%+v", i, a.Turn, b.Turn)
		}
		if !reflect.DeepEqual(a.Stats, b.Stats) {
			t.Errorf("stream %d: live stats\n%+v\nread back\n%+v", i, a.Stats, b.Stats)
		}
	}
	if live[0].Turn.Text() != "€ sign" || live[1].Turn.Status != pipeline.StatusError {
		t.Errorf("live turns: %q, %s", live[0].Turn.Text(), live[1].Turn.Status)
	}
}

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
		{"empty", "", 0, "", "empty input", false, ""},
		{"bad middle line", head + "nonsense\n" + req, 0, "", "capture:2: not a JSON object", false, ""},
		{"wrong format", `{"type":"sse_header","format":"other"}` + "\n", 0, "", `want "underrun-sse"`, false, ""},
		{"newer version", `{"type":"sse_header","format":"underrun-sse","version":9}` + "\n", 0, "", "newer", false, ""},
		{"read before request", head + `{"type":"read","stream":"b","t_ns":1,"data":""}` + "\n", 0, "", "before its request", false, ""},
		{"read before response", head + req + `{"type":"read","stream":"a","t_ns":1,"data":""}` + "\n", 0, "", "before its response", false, ""},
		{"time backwards", head + req + resp + `{"type":"read","stream":"a","t_ns":1,"data":""}` + "\n", 0, "", "before the previous", false, ""},
		{"negative time", head + req + `{"type":"response","stream":"a","t_ns":-1,"status":200}` + "\n", 0, "", ">= 0", false, ""},
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

// FuzzCaptureReader checks that no input makes the reader panic, loop or
// return turns that cannot be real.
func FuzzCaptureReader(f *testing.F) {
	f.Add([]byte(`{"type":"sse_header","format":"underrun-sse","version":1}
{"type":"request","stream":"a","start_unix_ns":1}
{"type":"response","stream":"a","t_ns":5,"status":200,"content_type":"text/event-stream"}
{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"}
{"type":"read","stream":"a","t_ns":9,"data_b64":"ZGF0YTogW0RPTkVdCgo="}
{"type":"close","stream":"a","t_ns":10}
`))
	f.Add([]byte(`{"type":"request","stream":"a"}` + "\n" + `{"type":"response","stream":"a","t_ns":0,"status":500}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewCaptureReader(bytes.NewReader(data), "fuzz")
		for range 10000 {
			tn, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrCapture) {
					t.Fatalf("error %v is neither EOF nor ErrCapture", err)
				}
				return
			}
			if err := tn.Validate(); err != nil {
				t.Fatalf("reader returned an invalid turn: %v", err)
			}
		}
		t.Fatal("reader did not end")
	})
}
