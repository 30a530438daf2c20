package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/sim"
)

// stallTurn is a short turn with one long stall: 24 tokens every 20 ms
// after a TTFT of 60 ms, and 900 ms more before token 3.
func stallTurn(id string) *pipeline.Turn {
	text := "Sure, here is the plan for today. First we walk, then we talk, and then we rest a while."
	return sim.ConstantTurn(id, text, 60*time.Millisecond, 20*time.Millisecond,
		[]sim.Stall{{Token: 3, Delay: 900 * time.Millisecond}})
}

func mockServer(t *testing.T, m *Mock) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv
}

// flushTimes is a response writer that notes when each flush began.
type flushTimes struct {
	http.ResponseWriter
	mu sync.Mutex
	at []time.Time
}

func (f *flushTimes) Flush() {
	f.mu.Lock()
	f.at = append(f.at, time.Now())
	f.mu.Unlock()
	f.ResponseWriter.(http.Flusher).Flush()
}

// TestMockLiveAgreesWithOffline streams a turn from the mock, captures it
// with the client, and checks that the engine finds the same underruns in
// the capture as in what the mock sent (its own record of each flush) and
// as in the original.
//
// Every time is compared in the capture's frame (t=0 when the request
// left; the mock's t=0 is when it arrived, later by the request's trip),
// and the checks that must hold however busy the machine are causal: the
// mock sends no chunk before it is due, and the client times no chunk
// before the mock began to flush it. The underruns are compared only
// where the machine let the mock keep the original's timing (and flush,
// and the client read, in time) within a margin, as it does unless a busy
// machine holds one of them off the CPU; the test says so when it did not
// (chunks the client reads together are timed at the last one's arrival).
func TestMockLiveAgreesWithOffline(t *testing.T) {
	t.Parallel()
	testkit.KeepStamps(t)
	orig := stallTurn("orig")
	n := len(orig.Chunks)
	sentAt := make([]time.Time, n) // when each flush had ended, by OnSend
	var mu sync.Mutex              // the mock calls OnSend in its own goroutine
	var arrived time.Time          // when the request reached the mock
	var flushes *flushTimes
	m := &Mock{Turns: []*pipeline.Turn{orig}, OnSend: func(_ string, i int, _ time.Duration) {
		now := time.Now()
		mu.Lock()
		sentAt[i] = now
		mu.Unlock()
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := &flushTimes{ResponseWriter: w}
		mu.Lock()
		arrived, flushes = time.Now(), f
		mu.Unlock()
		m.ServeHTTP(f, r)
	}))
	t.Cleanup(srv.Close)
	c := &Client{BaseURL: srv.URL}
	s, err := c.Stream(context.Background(), "live", "", Request{Model: "m", Prompt: Prompt{Text: "plan my day"}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	live := &s.Turn
	if live.Status != pipeline.StatusOK || live.Text() != orig.Text() || len(live.Chunks) != n {
		t.Fatalf("captured %s %q (%d chunks), want ok %q (%d)", live.Status, live.Text(), len(live.Chunks), orig.Text(), n)
	}
	if live.OutputTokens != orig.Tokens() {
		t.Errorf("usage says %d tokens, want %d", live.OutputTokens, orig.Tokens())
	}
	flushes.mu.Lock()
	began := flushes.at[1:] // the first flush sends the headers
	flushes.mu.Unlock()
	if len(began) < n {
		t.Fatalf("%d flushes after the headers, want at least %d", len(began), n)
	}
	// the frames' clocks: wall-clock kernel stamps against Go's monotonic
	// readings differ by far less than this
	const clocks = time.Millisecond
	trip := arrived.Sub(live.Start) // the request's way to the mock
	sent := &pipeline.Turn{ID: "sent", Status: pipeline.StatusOK, Chunks: slices.Clone(orig.Chunks)}
	shifted := &pipeline.Turn{ID: "orig", Status: pipeline.StatusOK, Chunks: slices.Clone(orig.Chunks)}
	// how far a chunk may move with the underruns staying the same, to
	// within twice this (the turn's one gap is 425 ms, past its tolerance
	// by as much)
	const margin = 30 * time.Millisecond
	keptTiming, flushedInTime := true, true
	for i := range n {
		due := arrived.Add(orig.Chunks[i].At)
		began, ended, got := began[i], sentAt[i], live.Start.Add(live.Chunks[i].At)
		if began.Before(due) {
			t.Errorf("chunk %d: the mock flushed it %v before it was due", i, due.Sub(began))
		}
		if got.Before(began.Add(-clocks)) {
			t.Errorf("chunk %d timed %v before the mock began to flush it", i, began.Sub(got))
		}
		sent.Chunks[i].At = ended.Sub(live.Start)
		shifted.Chunks[i].At += trip
		keptTiming = keptTiming && began.Sub(due) <= margin
		flushedInTime = flushedInTime && ended.Sub(began) <= margin && got.Sub(ended) <= margin
	}
	cfg := pipeline.DefaultConfig()
	got, err := pipeline.Play(cfg, live)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []*pipeline.Turn{sent, shifted} {
		want, err := pipeline.Play(cfg, ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Underruns) == 0 {
			t.Fatalf("%s: no underrun: the test proves nothing", ref.ID)
		}
		switch {
		case !flushedInTime:
			t.Logf("the machine held the mock inside a flush, or the client from reading, for more than %v: the underruns are not compared", margin)
			return
		case ref == shifted && !keptTiming:
			t.Logf("the machine held the mock off its schedule by more than %v: the underruns are not compared with the original's", margin)
			continue
		}
		if len(got.Underruns) != len(want.Underruns) {
			t.Fatalf("live: %d underruns %+v; %s: %d %+v", len(got.Underruns), got.Underruns, ref.ID, len(want.Underruns), want.Underruns)
		}
		for i, w := range want.Underruns {
			g := got.Underruns[i]
			if g.Token != w.Token || g.Cause != w.Cause || g.Class != w.Class ||
				(g.Start-w.Start).Abs() > 2*margin || (g.Duration-w.Duration).Abs() > 2*margin {
				t.Errorf("underrun %d: live %+v, %s %+v", i, g, ref.ID, w)
			}
		}
	}
}

func TestMockFormats(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	turns := []*pipeline.Turn{
		{ID: "think", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
			{At: ms, Text: "hmm", Reasoning: true, Tokens: 1}, {At: 2 * ms, Text: "Yes", Tokens: 1}, {At: 3 * ms, Text: ".", Tokens: 1}}},
		{ID: "textless", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
			{At: ms, Textless: true, Tokens: 1}, {At: 2 * ms, Textless: true, Tokens: 2}}},
		{ID: "fails", Status: pipeline.StatusError, Error: "GPU fell off", Chunks: []pipeline.Chunk{{At: ms, Text: "a", Tokens: 1}}},
		{ID: "cut", Status: pipeline.StatusIncomplete, Chunks: []pipeline.Chunk{{At: ms, Text: "a", Tokens: 1}}},
	}
	srv := mockServer(t, &Mock{Turns: turns, Model: "mock-7b"})
	run := func(turn string, req Request) *trace.Stream {
		t.Helper()
		c := &Client{BaseURL: srv.URL, HTTP: &http.Client{Transport: headerTransport{turn}}}
		s, err := c.Stream(context.Background(), turn, "", req)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := run("think", Request{Model: "x", Prompt: Prompt{Text: "q"}})
	if s.Turn.Status != pipeline.StatusOK || s.Turn.Text() != "Yes." || !s.Turn.Chunks[0].Reasoning ||
		s.Stats.RoleOnly != 1 || s.Stats.Usage == nil || s.Stats.Usage.CompletionTokens != 3 || s.Stats.FinishReason != "stop" {
		t.Errorf("think: %+v %+v", s.Turn, s.Stats)
	}
	s = run("think", Request{API: APICompletions, Model: "x", Prompt: Prompt{Text: "q"}, MaxTokens: 2, NoUsage: true})
	if s.Turn.Status != pipeline.StatusOK || len(s.Turn.Chunks) != 2 || s.Stats.FinishReason != "length" || s.Stats.Usage != nil || s.Stats.RoleOnly != 0 {
		t.Errorf("completions with max tokens: %+v %+v", s.Turn, s.Stats)
	}
	s = run("textless", Request{Model: "x", Prompt: Prompt{Text: "q"}})
	if s.Turn.Text() != "The quick brown" || s.Stats.Usage.CompletionTokens != 3 {
		t.Errorf("textless: %q, usage %+v", s.Turn.Text(), s.Stats.Usage)
	}
	s = run("fails", Request{Model: "x", Prompt: Prompt{Text: "q"}})
	if s.Turn.Status != pipeline.StatusError || !strings.Contains(s.Turn.Error, "GPU fell off") || len(s.Turn.Chunks) != 1 {
		t.Errorf("fails: %+v", s.Turn)
	}
	s = run("cut", Request{Model: "x", Prompt: Prompt{Text: "q"}})
	if s.Turn.Status != pipeline.StatusError || len(s.Turn.Chunks) != 1 {
		t.Errorf("cut: %+v", s.Turn)
	}
}

// headerTransport names the mock turn to stream.
type headerTransport struct{ turn string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(MockTurnHeader, h.turn)
	return http.DefaultTransport.RoundTrip(r)
}

func TestMockRoutes(t *testing.T) {
	t.Parallel()
	turn := &pipeline.Turn{ID: "a", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{{At: time.Millisecond, Text: "Hi", Tokens: 1}}}
	srv := mockServer(t, &Mock{Turns: []*pipeline.Turn{turn}})
	tests := []struct {
		method, path, body string
		header             string
		status             int
		has                string
	}{
		{"GET", "/v1/models", "", "", 200, `"id":"underrun-mock"`},
		{"GET", "/health", "", "", 200, ""},
		{"GET", "/v1/nothing", "", "", 404, "no route"},
		{"GET", "/v1/chat/completions", "", "", 405, "use POST"},
		{"POST", "/v1/chat/completions", "{", "", 400, "not a JSON object"},
		{"POST", "/v1/chat/completions", `{"model":"m"}`, "", 400, "messages"},
		{"POST", "/v1/completions", `{"model":"m"}`, "", 400, "prompt"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "zz", 404, `no turn \"zz\"`},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "", 200, `"content":"Hi"`},
		{"POST", "/v1/completions", `{"model":"m","prompt":"x"}`, "", 200, `"text":"Hi"`},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		if tt.header != "" {
			req.Header.Set(MockTurnHeader, tt.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.has) {
			t.Errorf("%s %s: %d %s; want %d with %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.has)
		}
		if resp.StatusCode == 200 && strings.HasSuffix(tt.path, "completions") && !json.Valid(b) {
			t.Errorf("%s: not JSON: %s", tt.path, b)
		}
	}
}

// TestMockClientLeaves checks that the mock stops streaming to a client
// that disconnects.
func TestMockClientLeaves(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	sent := 0
	m := &Mock{Turns: []*pipeline.Turn{sim.ConstantTurn("long", strings.Repeat("word ", 200), 0, 10*time.Millisecond, nil)},
		OnSend: func(string, int, time.Duration) { mu.Lock(); sent++; mu.Unlock() }}
	srv := mockServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	s, err := (&Client{BaseURL: srv.URL}).Stream(ctx, "t", "", Request{Model: "m", Prompt: Prompt{Text: "q"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn.Status == pipeline.StatusOK {
		t.Fatalf("a stream cut at 60 ms finished: %+v", s.Turn)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	n := sent
	mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if sent != n || sent > 30 {
		t.Errorf("the mock went on sending after the client left: %d then %d chunks", n, sent)
	}
}

// FuzzAppendQuote checks that the mock's JSON strings decode to the text
// they quote (valid UTF-8), or to what encoding/json makes of it.
func FuzzAppendQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s\n\r\t\x00\x1f", "é😀\u2028", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := appendQuote(nil, s)
		var back string
		if err := json.Unmarshal(q, &back); err != nil {
			t.Fatalf("%q quoted as %s: %v", s, q, err)
		}
		want := s
		if !utf8.ValidString(s) {
			m, _ := json.Marshal(s)
			_ = json.Unmarshal(m, &want)
		}
		if back != want {
			t.Fatalf("%q came back as %q", s, back)
		}
	})
}

func BenchmarkMockDelta(b *testing.B) {
	s := &mockStream{m: &Mock{}, chat: true, modelJSON: appendQuote(nil, "m"), id: "1", created: 1}
	b.ReportAllocs()
	for b.Loop() {
		s.delta("", " hello \"world\"", false, "", 1)
		s.buf = s.buf[:0]
	}
}

// The mock is a live server: it splits text with pipeline/tokens and must
// not pull in the simulator.
func TestMockDoesNotImportSimulator(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/speech-pipeline/underrun/sim" {
			t.Fatalf("pipeline/openai depends on %s", dep)
		}
	}
}

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
