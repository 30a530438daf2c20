package trace

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestNativeToolCallRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn pipeline.Turn
	}{
		{"one tool call mid-turn", pipeline.Turn{ID: "t1", Status: pipeline.StatusOK,
			Chunks:    []pipeline.Chunk{{At: 400 * time.Millisecond, Text: "Let", Tokens: 1}, {At: 2400 * time.Millisecond, Text: " me", Tokens: 1}},
			ToolCalls: []pipeline.ToolCall{{At: 900 * time.Millisecond, Duration: 1500 * time.Millisecond, Name: "get_weather"}}}},
		{"unnamed tool call before any chunk and one after the last", pipeline.Turn{ID: "t2", Status: pipeline.StatusOK,
			Chunks:    []pipeline.Chunk{{At: 2 * time.Second, Text: "Hi", Tokens: 1}},
			ToolCalls: []pipeline.ToolCall{{At: 0, Duration: time.Second}, {At: 3 * time.Second, Duration: 0, Name: "log"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := NewWriter(&b, "test").WriteTurn(&tt.turn); err != nil {
				t.Fatal(err)
			}
			turns, err := readAll(t, b.String())
			if err != nil {
				t.Fatal(err)
			}
			if len(turns) != 1 || !reflect.DeepEqual(turns[0].ToolCalls, tt.turn.ToolCalls) || len(turns[0].Chunks) != len(tt.turn.Chunks) {
				t.Fatalf("read back %+v\nfrom %s", turns, b.String())
			}
		})
	}
}

func TestNativeToolCallBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"no time", `{"type":"tool","turn":"a","duration_ns":5}` + "\n", `test.jsonl:1: tool record of turn "a" has no "t_ns"`},
		{"no duration", `{"type":"tool","turn":"a","t_ns":5}` + "\n", `test.jsonl:1: tool record of turn "a" has no "duration_ns"`},
		{"negative duration", `{"type":"tool","turn":"a","t_ns":5,"duration_ns":-1}` + "\n", `test.jsonl:1: tool record of turn "a" has duration_ns -1`},
		{"negative time", `{"type":"tool","turn":"a","t_ns":-1,"duration_ns":1}` + "\n", `test.jsonl:1: tool record of turn "a" has t_ns -1`},
		{"string duration", `{"type":"tool","turn":"a","t_ns":1,"duration_ns":"1"}` + "\n", `test.jsonl:1: field "duration_ns": got JSON string, want int64`},
		{"number name", `{"type":"tool","turn":"a","t_ns":1,"duration_ns":1,"name":3}` + "\n", `test.jsonl:1: field "name"`},
		{"out of order", `{"type":"tool","turn":"a","t_ns":5,"duration_ns":1}` + "\n" + `{"type":"tool","turn":"a","t_ns":4,"duration_ns":1}` + "\n", `test.jsonl:2: tool record of turn "a" has t_ns 4, before`},
		{"no turn", `{"type":"tool","t_ns":5,"duration_ns":1}` + "\n", `test.jsonl:1: tool record without "turn" id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, tt.in)
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrFormat containing %q", err, tt.want)
			}
		})
	}
}
