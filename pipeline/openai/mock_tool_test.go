package openai

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// toolEvent is one chunk event of a chat stream, with when it was read.
type toolEvent struct {
	at      time.Duration
	content string
	callID  string
	name    string
	finish  string
}

// postChat posts a streaming chat request and reads its events.
func postChat(t *testing.T, url, body string) []toolEvent {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []toolEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if len(ev.Choices) == 0 {
			continue // usage
		}
		c := ev.Choices[0]
		e := toolEvent{at: time.Since(start), content: c.Delta.Content}
		if len(c.Delta.ToolCalls) > 0 {
			e.callID, e.name = c.Delta.ToolCalls[0].ID, c.Delta.ToolCalls[0].Function.Name
			if c.Delta.ToolCalls[0].Function.Arguments != "{}" {
				t.Errorf("tool call arguments %q, want {}", c.Delta.ToolCalls[0].Function.Arguments)
			}
		}
		if c.FinishReason != nil {
			e.finish = *c.FinishReason
		}
		out = append(out, e)
	}
	return out
}

// text joins the events' content; call is the tool call they end with.
func text(evs []toolEvent) (text string, call toolEvent, finish string) {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.content)
		if e.callID != "" {
			call = e
		}
		if e.finish != "" {
			finish = e.finish
		}
	}
	return b.String(), call, finish
}

// TestMockStreamsToolCalls: to a client that declares tools, the mock
// streams a turn's text up to its tool call, then the call (the trace's
// tool, or the client's own when it declared no such name) and
// finish_reason tool_calls, at the call's time; the request carrying the
// result gets the rest, timed from the call's end. A client that declares
// no tools gets the whole turn in one answer, as before.
func TestMockStreamsToolCalls(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	turn := &pipeline.Turn{ID: "t", Status: pipeline.StatusOK, ToolCalls: []pipeline.ToolCall{{At: 70 * ms, Duration: 300 * ms, Name: "get_weather"}}}
	for i, w := range []string{"Let", " me", " check.", " It", " is", " sunny."} {
		at := time.Duration(20+20*i) * ms // 20 ... 60, then after the tool
		if i >= 3 {
			at += 300 * ms
		}
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	srv := mockServer(t, &Mock{Turns: []*pipeline.Turn{turn}})
	const user = `{"role":"user","content":"Weather?"}`
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}]`
	first := postChat(t, srv.URL, `{"model":"m","stream":true,`+tools+`,"messages":[`+user+`]}`)
	got, call, finish := text(first)
	if got != "Let me check." || call.callID != mockCallPrefix+"0_1" || call.name != "get_weather" || finish != "tool_calls" {
		t.Fatalf("first answer %q, call %+v, finish %q; want the text before the call, then the call", got, call, finish)
	}
	if call.at < 70*ms {
		t.Errorf("tool call streamed at %v, before its time (70 ms)", call.at)
	}
	result := `{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.callID + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"` + call.callID + `","content":"sunny"}`
	second := postChat(t, srv.URL, `{"model":"m","stream":true,`+tools+`,"messages":[`+user+`,`+result+`]}`)
	got, call, finish = text(second)
	if got != " It is sunny." || call.callID != "" || finish != "stop" {
		t.Fatalf("second answer %q, call %+v, finish %q; want the rest of the turn", got, call, finish)
	}
	for _, e := range second {
		if e.content == " It" && e.at < 10*ms { // at 380 ms, 370 ms after the call's end
			t.Errorf("the first chunk after the call came %v after the request, before its 10 ms", e.at)
		}
	}
	// the client's own tool name when it declared none of the trace's
	first = postChat(t, srv.URL, `{"model":"m","stream":true,"tools":[{"type":"function","function":{"name":"lookup"}}],"messages":[`+user+`]}`)
	if _, call, _ := text(first); call.name != "lookup" {
		t.Errorf("call named %q, want the client's lookup", call.name)
	}
	// no tools declared: the whole turn, the pause a stall
	whole := postChat(t, srv.URL, `{"model":"m","stream":true,"messages":[`+user+`]}`)
	if got, call, finish := text(whole); got != "Let me check. It is sunny." || call.callID != "" || finish != "stop" {
		t.Errorf("without tools: %q, call %+v, finish %q; want the whole turn", got, call, finish)
	}
}

// TestProxyJoinsToolCalls: through the proxy, a tool-calling exchange (the
// stream that ends in the call, then the request carrying its result) is
// one turn: the guard hears the silence between as the tool call's, the
// trace records one turn with its tool record, and offline analysis of
// that recording finds the guard's underruns.
func TestProxyJoinsToolCalls(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	turn := &pipeline.Turn{ID: "t", Status: pipeline.StatusOK, ToolCalls: []pipeline.ToolCall{{At: 70 * ms, Duration: 300 * ms, Name: "get_weather"}}}
	for i, w := range []string{"Let", " me", " check.", " It", " is", " sunny."} {
		at := time.Duration(20+20*i) * ms
		if i >= 3 {
			at += 300 * ms
		}
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	mock := mockServer(t, &Mock{Turns: []*pipeline.Turn{turn}})
	cfg := pipeline.DefaultConfig()
	var mu sync.Mutex
	var live []pipeline.Underrun
	var ended []*pipeline.Turn
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{OnEvent: func(e pipeline.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == pipeline.EventUnderrun {
			live = append(live, e.Underrun)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	var rec testkit.Buffer
	proxy := proxyTo(t, mock.URL+"/v1", func(p *Proxy) {
		p.Guard, p.Trace = g, SyncTrace(trace.NewWriter(&rec, "proxy"))
		p.OnTurn = func(t *pipeline.Turn) { mu.Lock(); ended = append(ended, t); mu.Unlock() }
	})
	const user = `{"role":"user","content":"Weather?"}`
	tools := `"tools":[{"type":"function","function":{"name":"get_weather"}}]`
	first := postChat(t, proxy.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[`+user+`]}`)
	_, call, _ := text(first)
	time.Sleep(1500 * time.Millisecond) // the tool runs, longer than "Let me check." plays
	result := `{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.callID + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"` + call.callID + `","content":"sunny"}`
	postChat(t, proxy.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[`+user+`,`+result+`]}`)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != 1 {
		t.Fatalf("%d turns ended, want the exchange as one", len(ended))
	}
	got := ended[0]
	if got.Text() != turn.Text() || len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "get_weather" ||
		got.ToolCalls[0].Duration < 1500*ms || got.OutputTokens != turn.Tokens() {
		t.Fatalf("the joined turn %+v: want the trace's text, one get_weather call of 1.5 s or more, %d tokens", got, turn.Tokens())
	}
	recorded := testkit.All(t, trace.NewNativeReader(strings.NewReader(rec.String()), "proxy.jsonl").Next)
	if len(recorded) != 1 || !reflect.DeepEqual(recorded[0].ToolCalls, got.ToolCalls) || len(recorded[0].Chunks) != len(got.Chunks) {
		t.Fatalf("recorded %+v, want the joined turn\n%s", recorded, rec.String())
	}
	off, err := pipeline.Play(cfg, recorded[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(off.Underruns, func(u pipeline.Underrun) bool { return u.Cause == pipeline.CauseTool }) {
		t.Errorf("offline gaps %+v: want the tool call's silence", off.Underruns)
	}
	if fmt.Sprint(live) != fmt.Sprint(off.Underruns) {
		t.Errorf("the guard raised\n%+v\noffline analysis of the recording found\n%+v", live, off.Underruns)
	}
}
