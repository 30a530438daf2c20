package monitor

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Message
	}{
		{`{"type":"turn_start","turn":"t1"}`, Message{Type: TypeTurnStart, Turn: "t1"}},
		{`{"type":"turn_start","turn":"t1","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v"}`,
			Message{Type: TypeTurnStart, Turn: "t1", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v"}},
		{`{"type":"chunk","turn":"t1","text":"Hi","tokens":2,"t_ms":12.5}`,
			Message{Type: TypeChunk, Turn: "t1", Text: "Hi", HasText: true, Tokens: 2, At: 12500 * time.Microsecond, HasAt: true}},
		{`{"type":"chunk","turn":"t1"}`, Message{Type: TypeChunk, Turn: "t1"}},
		{`{"type":"chunk","turn":"t1","text":"hmm","reasoning":true,"extra":[1]}`,
			Message{Type: TypeChunk, Turn: "t1", Text: "hmm", HasText: true, Reasoning: true}},
		{`{"type":"turn_end","turn":"t1"}`, Message{Type: TypeTurnEnd, Turn: "t1", Status: pipeline.StatusOK}},
		{`{"type":"turn_end","turn":"t1","status":"error","error":"boom","output_tokens":7}`,
			Message{Type: TypeTurnEnd, Turn: "t1", Status: pipeline.StatusError, Error: "boom", OutputTokens: 7}},
		{`{"type":"barge_in","turn":"t1","t_ms":900}`, Message{Type: TypeBargeIn, Turn: "t1", At: 900 * time.Millisecond, HasAt: true}},
		{`{"type":"tts","text":"Hello.","audio_ms":420}`, Message{Type: TypeTTS, Text: "Hello.", HasText: true, Audio: 420 * time.Millisecond}},
		{`{"type":"speech","turn":"t1","text":"Sure.","t_ms":300}`,
			Message{Type: TypeSpeech, Turn: "t1", Text: "Sure.", HasText: true, At: 300 * time.Millisecond, HasAt: true}},
		{`{"type":"audio","turn":"t1","audio_ms":100,"t_ms":410.5,"speech":2}`,
			Message{Type: TypeAudio, Turn: "t1", Audio: 100 * time.Millisecond, At: 410500 * time.Microsecond, HasAt: true, Speech: 2, HasSpeech: true}},
		{`{"type":"audio","turn":"t1","audio_ms":10}`, Message{Type: TypeAudio, Turn: "t1", Audio: 10 * time.Millisecond}},
		{`{"type":"playout","turn":"t1"}`, Message{Type: TypePlayout, Turn: "t1"}},
		{`{"type":"tool_call","turn":"t1","name":"get_weather","t_ms":812}`,
			Message{Type: TypeToolCall, Turn: "t1", Name: "get_weather", At: 812 * time.Millisecond, HasAt: true}},
		{`{"type":"tool_call","turn":"t1"}`, Message{Type: TypeToolCall, Turn: "t1"}},
		{`{"type":"tool_result","turn":"t1","t_ms":2400}`, Message{Type: TypeToolResult, Turn: "t1", At: 2400 * time.Millisecond, HasAt: true}},
		{`{"type":"playout","turn":"t1","start_ms":420,"gaps":[{"start_ms":900,"duration_ms":250},{"start_ms":1500,"duration_ms":0.5}]}`,
			Message{Type: TypePlayout, Turn: "t1", Start: 420 * time.Millisecond, HasStart: true,
				Gaps: []PlayerGap{{Start: 900 * time.Millisecond, Duration: 250 * time.Millisecond}, {Start: 1500 * time.Millisecond, Duration: 500 * time.Microsecond}}}},
		{`{"type":"audio","turn":"t1","audio_ms":100,"t_ms":1250,"filler":true}`,
			Message{Type: TypeAudio, Turn: "t1", Audio: 100 * time.Millisecond, At: 1250 * time.Millisecond, HasAt: true, Filler: true}},
	}
	var p fastjson.Parser
	for _, tc := range tests {
		got, err := Parse(&p, []byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
		// a connection passes the previous message's turn name
		for _, known := range []string{"", "t1", "t2"} {
			got, err := parse(&p, []byte(tc.in), known)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s, known turn %q:\n got %+v, %v\nwant %+v", tc.in, known, got, err, tc.want)
			}
			if known != "" && got.Turn == known && unsafe.StringData(got.Turn) != unsafe.StringData(known) {
				t.Errorf("%s: the known turn name %q was copied", tc.in, known)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, `null`, `"x"`, `{}`, `{"type":3}`, `{"type":"chunk","turn":""}`, `{"type":"chunk","turn":"t","text":5}`,
		`{"type":"chunk","turn":"t","tokens":1.5}`, `{"type":"chunk","turn":"t","t_ms":-1}`,
		`{"type":"chunk","turn":"t","t_ms":1e300}`, `{"type":"chunk","turn":"t","reasoning":"yes"}`,
		`{"type":"tts","text":"x","audio_ms":0}`, `{"type":"tts","audio_ms":5}`,
		`{"type":"turn_end","turn":"t","status":"incomplete"}`,
		`{"type":"turn_start","turn":"t","traceparent":7}`,
		`{"type":"turn_start","turn":"t","tracestate":"` + strings.Repeat("k", MaxTraceContext+1) + `"}`,
		`{"type":"speech","turn":"t"}`, `{"type":"speech","text":"x"}`, `{"type":"audio","turn":"t"}`,
		`{"type":"audio","turn":"t","audio_ms":0}`, `{"type":"audio","turn":"t","audio_ms":5,"speech":-1}`,
		`{"type":"audio","turn":"t","audio_ms":5,"filler":1}`, `{"type":"audio","turn":"t","audio_ms":5,"filler":true,"speech":0}`,
		`{"type":"playout","turn":"t","gaps":{}}`, `{"type":"playout","turn":"t","gaps":[5]}`,
		`{"type":"playout","turn":"t","gaps":[{"start_ms":5}]}`,
		`{"type":"playout","turn":"t","gaps":[{"start_ms":50,"duration_ms":10},{"start_ms":55,"duration_ms":1}]}`,
	} {
		var p fastjson.Parser
		if _, err := Parse(&p, []byte(in)); !errors.Is(err, ErrMessage) {
			t.Errorf("%q: error %v, want ErrMessage", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"turn_start","turn":"t1"}`,
		`{"type":"turn_start","turn":"t1","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
		`{"type":"chunk","turn":"t1","text":"Hi","tokens":2,"t_ms":12.5}`,
		`{"type":"turn_end","turn":"t1","status":"error","error":"boom"}`,
		`{"type":"barge_in","turn":"t1"}`,
		`{"type":"tts","text":"Hello.","audio_ms":420}`,
		`{"type":"speech","turn":"t1","text":"Sure.","t_ms":300}`,
		`{"type":"audio","turn":"t1","audio_ms":100,"t_ms":410.5,"speech":0}`,
		`{"type":"audio","turn":"t1","audio_ms":100,"t_ms":1250,"filler":true}`,
		`{"type":"playout","turn":"t1","start_ms":420,"gaps":[{"start_ms":900,"duration_ms":250}]}`,
		`{"type":"tool_call","turn":"t1","name":"get_weather","t_ms":812}`,
		`{"type":"tool_result","turn":"t1"}`,
		// issue 45: counts past what a recording holds
		`{"type":"chunk","turn":"t1","tokens":2147483647}`,
		`{"type":"turn_end","turn":"t1","output_tokens":262145}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p fastjson.Parser
		m, err := Parse(&p, data)
		if err != nil {
			if !errors.Is(err, ErrMessage) {
				t.Fatalf("error %v does not wrap ErrMessage", err)
			}
			return
		}
		// what parses is usable: a known type, a sane time, a name
		switch {
		case !slices.Contains([]Type{TypeTurnStart, TypeChunk, TypeTurnEnd, TypeBargeIn, TypeTTS, TypeSpeech, TypeAudio, TypePlayout,
			TypeToolCall, TypeToolResult}, m.Type):
			t.Fatalf("type %q accepted", m.Type)
		case len(m.Gaps) > MaxPlayerGaps || (m.Type == TypeAudio && m.Audio <= 0):
			t.Fatalf("playout or audio out of bounds accepted: %+v", m)
		case m.At < 0 || m.Tokens < 0 || m.Audio < 0:
			t.Fatalf("negative field accepted: %+v", m)
		case m.Tokens > trace.MaxTurnTokens || m.OutputTokens > trace.MaxTurnTokens || (m.Type == TypeChunk && len(m.Text) > trace.MaxChunkText) || len(m.Error) > trace.MaxErrorText:
			t.Fatalf("a count or text past the recordings' limits accepted: tokens %d, output tokens %d, text %d bytes, error %d bytes",
				m.Tokens, m.OutputTokens, len(m.Text), len(m.Error))
		case m.Type != TypeTTS && m.Turn == "":
			t.Fatalf("no turn accepted: %+v", m)
		case m.Type == TypeTurnEnd && !m.Status.Valid():
			t.Fatalf("status %q accepted", m.Status)
		case len(m.Name) > MaxName || (m.Type != TypeToolCall && m.Name != ""):
			t.Fatalf("tool name of %d bytes on a %s message accepted", len(m.Name), m.Type)
		case len(m.Traceparent) > MaxTraceContext || len(m.Tracestate) > MaxTraceContext:
			t.Fatalf("trace context of %d and %d bytes accepted", len(m.Traceparent), len(m.Tracestate))
		case m.Type != TypeTurnStart && (m.Traceparent != "" || m.Tracestate != ""):
			t.Fatalf("trace context on a %s message: %+v", m.Type, m)
		}
	})
}

// TestAppendMessageIsJSON: a turn name that Go would quote differently
// from JSON (control characters, invalid UTF-8) still makes valid JSON.
func TestAppendMessageIsJSON(t *testing.T) {
	t.Parallel()
	for _, turn := range []string{"plain", "tab\there", "bell\a", "bad\xffutf8", `quote"back\slash`} {
		b := appendMessage(nil, "turn_end", turn, nil, -1, pipeline.StatusOK)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("turn %q: %s is not JSON: %v", turn, b, err)
		}
	}
}
