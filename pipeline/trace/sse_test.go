package trace

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
)

func TestOpenSSECapture(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := openai.NewCaptureWriter(&buf, "test")
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
	if _, err := dec.Next(); !errors.Is(err, ErrFormat) || !errors.Is(err, openai.ErrCapture) || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("error %v, want an ErrFormat naming bad.jsonl:2", err)
	}
}
