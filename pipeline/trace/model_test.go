package trace

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
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

// TestTurnOperation (issue 49): the kind of call a turn's request made
// reaches Turn.Operation from what the recorder saw: a vLLM result's
// endpoint_type or backend and an SGLang result's backend (as each tool
// maps its backends to endpoints), a capture's request path; the native
// trace keeps it, and refuses one it does not know.
func TestTurnOperation(t *testing.T) {
	t.Parallel()
	basic, err := os.ReadFile("testdata/vllm/basic/result.json")
	if err != nil {
		t.Fatal(err)
	}
	v2024, err := os.ReadFile("testdata/vllm/v2024/result.json")
	if err != nil {
		t.Fatal(err)
	}
	sglang, err := os.ReadFile("testdata/sglang/basic/result.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	asCompletions := strings.NewReplacer(`"endpoint_type": "openai-chat"`, `"endpoint_type": "openai"`, `"backend": "openai-chat"`, `"backend": "openai"`)
	for _, tc := range []struct {
		name string
		open func(io.Reader, string) (*ColumnarReader, error)
		data string
		want pipeline.Operation
	}{
		{"vLLM openai-chat", NewVLLMReader, string(basic), pipeline.OperationChat},
		{"vLLM openai (completions)", NewVLLMReader, asCompletions.Replace(string(basic)), pipeline.OperationTextCompletion},
		{"vLLM endpoint_type alone", NewVLLMReader, strings.Replace(asCompletions.Replace(string(basic)), `"backend": "openai",`, "", 1), pipeline.OperationTextCompletion},
		{"vLLM 2024 backend vllm", NewVLLMReader, string(v2024), pipeline.OperationTextCompletion},
		{"vLLM backend of no completions endpoint", NewVLLMReader, strings.Replace(string(v2024), `"backend": "vllm"`, `"backend": "tgi"`, 1), ""},
		{"SGLang native /generate", NewSGLangReader, string(sglang), ""},
		{"SGLang sglang-oai-chat", NewSGLangReader, strings.ReplaceAll(string(sglang), `"backend": "sglang"`, `"backend": "sglang-oai-chat"`), pipeline.OperationChat},
		{"SGLang vllm (completions)", NewSGLangReader, strings.ReplaceAll(string(sglang), `"backend": "sglang"`, `"backend": "vllm"`), pipeline.OperationTextCompletion},
	} {
		d, _ := tc.open(strings.NewReader(tc.data), "result")
		turns, err := readTurns(d)
		d.Close()
		if err != nil || len(turns) == 0 {
			t.Fatalf("%s: %d turns, %v", tc.name, len(turns), err)
		}
		for _, turn := range turns {
			if turn.Operation != tc.want {
				t.Errorf("%s: turn %s: operation %q, want %q", tc.name, turn.ID, turn.Operation, tc.want)
			}
		}
	}

	var buf bytes.Buffer
	w := NewCaptureWriter(&buf, "test")
	for i, path := range []string{"/v1/completions", "/v1/chat/completions", "/generate"} {
		s, err := w.Begin(CaptureRequest{Stream: "r" + strconv.Itoa(i), Start: time.Unix(1000, 0), Method: "POST", Path: path, Model: "voice-8b"})
		if err != nil {
			t.Fatal(err)
		}
		s.Response(200, "text/event-stream", time.Millisecond)
		s.Read([]byte(`data: {"choices":[{"index":0,"text":"Hi."}]}`+"\n\ndata: [DONE]\n\n"), 100*time.Millisecond)
		s.Close(110*time.Millisecond, nil, false)
	}
	turns, err := readTurns(NewCaptureReader(bytes.NewReader(buf.Bytes()), "capture"))
	want := []pipeline.Operation{pipeline.OperationTextCompletion, pipeline.OperationChat, ""}
	if err != nil || len(turns) != len(want) {
		t.Fatalf("capture: %d turns, %v", len(turns), err)
	}
	for i, turn := range turns {
		if turn.Operation != want[i] {
			t.Errorf("capture turn %s: operation %q, want %q", turn.ID, turn.Operation, want[i])
		}
	}

	// the native trace keeps it in the turn record, and refuses one it
	// does not know with the line
	var native bytes.Buffer
	if err := NewWriter(&native, "test").WriteTurn(turns[0]); err != nil {
		t.Fatal(err)
	}
	back, err := readAll(t, native.String())
	if err != nil || len(back) != 1 || back[0].Operation != pipeline.OperationTextCompletion || !strings.Contains(native.String(), `"operation":"text_completion"`) {
		t.Errorf("native round trip: %+v, %v; want the operation kept:\n%s", back, err, native.String())
	}
	_, err = readAll(t, `{"type":"turn","turn":"t1","operation":"embeddings"}`+"\n"+`{"type":"chunk","turn":"t1","t_ns":1000}`+"\n")
	if err == nil || !strings.Contains(err.Error(), "test.jsonl:1") || !strings.Contains(err.Error(), `operation "embeddings"; want chat or text_completion`) {
		t.Errorf("an unknown operation: %v", err)
	}
}
