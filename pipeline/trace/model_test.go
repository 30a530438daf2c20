package trace

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTurnModel: the model a turn's request named reaches Turn.Model
// from a vLLM result's model_id and a capture's request record; a file
// that names none leaves it empty.
func TestTurnModel(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/vllm/basic/result.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, _ := NewVLLMReader(f, "result.json")
	defer d.Close()
	turns, err := readTurns(d)
	if err != nil || len(turns) == 0 {
		t.Fatalf("%d turns, %v", len(turns), err)
	}
	for _, turn := range turns {
		if turn.Model != "example/voice-8b" {
			t.Errorf("vLLM turn %s: model %q, want the result's model_id example/voice-8b", turn.ID, turn.Model)
		}
	}

	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, "test")
	s, err := w.Begin(CaptureRequest{Stream: "r1", Start: time.Unix(1000, 0), Method: "POST", Path: "/v1/chat/completions", Model: "voice-8b"})
	if err != nil {
		t.Fatal(err)
	}
	s.Response(200, "text/event-stream", time.Millisecond)
	s.Read([]byte(`data: {"choices":[{"index":0,"delta":{"content":"Hi."}}]}`+"\n\ndata: [DONE]\n\n"), 100*time.Millisecond)
	s.Close(110*time.Millisecond, nil, false)
	turns, err = readTurns(NewCaptureReader(bytes.NewReader(buf.Bytes()), "capture"))
	if err != nil || len(turns) != 1 || turns[0].Model != "voice-8b" {
		t.Errorf("capture: %+v, %v; want one turn of the request's model voice-8b", turns, err)
	}

	// the native trace keeps it in the turn record
	var native bytes.Buffer
	if err := NewWriter(&native, "test").WriteTurn(turns[0]); err != nil {
		t.Fatal(err)
	}
	back, err := readAll(t, native.String())
	if err != nil || len(back) != 1 || back[0].Model != "voice-8b" || !strings.Contains(native.String(), `"model":"voice-8b"`) {
		t.Errorf("native round trip: %+v, %v; want the model kept:\n%s", back, err, native.String())
	}
	turns, err = readAll(t, `{"type":"turn","turn":"t1"}`+"\n"+`{"type":"chunk","turn":"t1","t_ns":1000}`+"\n"+`{"type":"end","turn":"t1","status":"ok"}`+"\n")
	if err != nil || len(turns) != 1 || turns[0].Model != "" {
		t.Errorf("native: %+v, %v; want one turn of no model", turns, err)
	}
}
