package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// proxyTo starts a loopback proxy in front of upstream.
func proxyTo(t *testing.T, upstream string, setup func(p *Proxy)) *httptest.Server {
	t.Helper()
	p, err := NewProxy(upstream, nil)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(p)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// TestProxyBytes checks that bodies pass byte for byte both ways: a large
// plain body, a body streamed in many small flushed pieces, a streaming
// (watched) response with bytes that are not UTF-8, and an unknown route.
func TestProxyBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	large := make([]byte, 8<<20)
	for i := range large {
		large[i] = byte(rng.Uint32())
	}
	pieces := make([][]byte, 500)
	for i := range pieces {
		pieces[i] = make([]byte, 1+rng.IntN(300))
		for j := range pieces[i] {
			pieces[i][j] = byte(rng.Uint32())
		}
	}
	chunked := bytes.Join(pieces, nil)
	sseBody := []byte(testkit.ChatChunk(`{"content":"caf\u00e9"}`) + ": \xff\xfe not UTF-8\n\n" + testkit.Done)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Request-Sum", sum(got))
		w.Header().Set("X-Path", r.URL.RequestURI())
		w.Header().Set("X-Auth", r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/large":
			w.Write(large)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, b := range [][]byte{sseBody[:7], sseBody[7:40], sseBody[40:]} {
				w.Write(b)
				w.(http.Flusher).Flush()
			}
		default:
			for _, p := range pieces {
				w.Write(p)
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer upstream.Close()
	var streams []*trace.Stream
	var mu sync.Mutex
	proxy := proxyTo(t, upstream.URL, func(p *Proxy) {
		p.OnStream = func(s *trace.Stream) { mu.Lock(); streams = append(streams, s); mu.Unlock() }
	})
	reqBody := large[:1<<20]
	tests := []struct {
		method, path string
		body         []byte
		want         []byte
	}{
		{"POST", "/large", reqBody, large},
		{"GET", "/chunked?x=1&y=%20", nil, chunked},
		{"POST", "/v1/chat/completions", []byte(`{"model":"m","stream":true}`), sseBody},
		{"POST", "/v1/completions", reqBody, chunked}, // not JSON: forwarded, not watched
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, proxy.URL+tt.path, bytes.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer sk-pass-me-on")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sum(got) != sum(tt.want) {
			t.Errorf("%s %s: response of %d bytes differs from the %d sent", tt.method, tt.path, len(got), len(tt.want))
		}
		if resp.Header.Get("X-Request-Sum") != sum(tt.body) {
			t.Errorf("%s %s: the request body changed on the way", tt.method, tt.path)
		}
		if resp.Header.Get("X-Path") != tt.path || resp.Header.Get("X-Auth") != "Bearer sk-pass-me-on" {
			t.Errorf("%s %s: upstream saw %s with auth %q", tt.method, tt.path, resp.Header.Get("X-Path"), resp.Header.Get("X-Auth"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(streams) != 1 || streams[0].Turn.Text() != "café" || streams[0].Turn.Status != pipeline.StatusOK || streams[0].Stats.Comments != 1 {
		t.Fatalf("watched streams: %d, %+v", len(streams), streams)
	}
}

// TestProxyGuards puts the proxy in front of the mock streaming a turn
// with a stall: the client gets the turn unchanged, the guard raises the
// underrun while the stream is silent, and its underruns are those of the
// recorded turn analyzed offline. Authorization appears in no log, trace
// or capture.
func TestProxyGuards(t *testing.T) {
	t.Parallel()
	orig := stallTurn("orig")
	mock := mockServer(t, &Mock{Turns: []*pipeline.Turn{orig}})
	var events []pipeline.Event
	var evMu sync.Mutex
	var logs, capture testkit.Buffer
	cfg := pipeline.DefaultConfig()
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{
		Logger: zerolog.New(&logs),
		OnEvent: func(e pipeline.Event) {
			evMu.Lock()
			defer evMu.Unlock()
			if e.Kind == pipeline.EventTurn {
				rec := *e.Record
				e.Record = &rec
				e.Playout = nil
			}
			events = append(events, e)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTrace{}
	var recorded *trace.Stream
	proxy := proxyTo(t, mock.URL+"/v1", func(p *Proxy) {
		p.Guard, p.Trace, p.Logger = g, SyncTrace(ft), zerolog.New(&logs)
		p.Capture = trace.NewCaptureWriter(&capture, "proxy")
		p.OnStream = func(s *trace.Stream) { evMu.Lock(); recorded = s; evMu.Unlock() }
	})
	c := &Client{BaseURL: proxy.URL, APIKey: "sk-TOPSECRET"}
	req := Request{Model: "m", Prompt: Prompt{Text: "hi"}, Header: http.Header{DefaultSessionHeader: {"call-7"}}}
	s, err := c.Stream(context.Background(), "client", "", req)
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn.Status != pipeline.StatusOK || s.Turn.Text() != orig.Text() {
		t.Fatalf("through the proxy: %s %q", s.Turn.Status, s.Turn.Text())
	}
	evMu.Lock()
	defer evMu.Unlock()
	if recorded == nil || recorded.Turn.Text() != orig.Text() || recorded.Turn.Session != "call-7" || recorded.Turn.OutputTokens != orig.Tokens() {
		t.Fatalf("recorded %+v", recorded)
	}
	offline, err := pipeline.Play(cfg, &recorded.Turn)
	if err != nil {
		t.Fatal(err)
	}
	var live []pipeline.Underrun
	drained := false
	for _, e := range events {
		switch e.Kind {
		case pipeline.EventUnderrun:
			live = append(live, e.Underrun)
		case pipeline.EventDrain:
			drained = true
			// raised by the guard's timer while the stream is silent, not
			// when the next chunk comes (that would be ~430 ms late)
			if late := e.Now - e.At; late > 250*time.Millisecond {
				t.Errorf("drain at %v raised %v late", e.At, late)
			}
		}
	}
	if len(offline.Underruns) == 0 || !drained {
		t.Fatalf("no underrun to guard (offline %d, drain seen %v)", len(offline.Underruns), drained)
	}
	if fmt.Sprint(live) != fmt.Sprint(offline.Underruns) {
		t.Errorf("guard raised\n%+v\noffline analysis of the recording found\n%+v", live, offline.Underruns)
	}
	if last := events[len(events)-1]; last.Kind != pipeline.EventTurn || last.Record.Status != pipeline.StatusOK {
		t.Errorf("last event %+v, want the turn summary", last)
	}
	ft.mu.Lock()
	all := logs.String() + capture.String() + strings.Join(ft.events, "\n")
	ft.mu.Unlock()
	if strings.Contains(all, "TOPSECRET") || strings.Contains(strings.ToLower(all), "authorization") {
		t.Error("the API key or the Authorization header reached a log, trace or capture")
	}
	if !strings.Contains(logs.String(), `"event":"proxy_stream"`) || !strings.Contains(logs.String(), `"event":"underrun"`) {
		t.Errorf("logs lack the stream or underrun events:\n%s", logs.String())
	}
	// the capture reads back to the recorded turn
	back := readCapture(t, []byte(capture.String()))
	if len(back) != 1 || back[0].Turn.Text() != orig.Text() || len(back[0].Turn.Chunks) != len(recorded.Turn.Chunks) ||
		back[0].Turn.Chunks[5] != recorded.Turn.Chunks[5] {
		t.Errorf("capture read back differs from the recording")
	}
}

// TestProxyFailures covers an upstream that is down, one that dies
// mid-stream, and a client that leaves mid-stream.
func TestProxyFailures(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	dying := scripted(t, 200, "text/event-stream", []step{{write: testkit.ChatChunk(`{"content":"a"}`)}, {sleep: 10 * ms}, {abort: true}}, nil)
	slow := scripted(t, 200, "text/event-stream", []step{{write: testkit.ChatChunk(`{"content":"a"}`), sleep: 3 * time.Second}, {write: testkit.Done}}, nil)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	tests := []struct {
		name     string
		upstream string
		timeout  time.Duration
		proxied  pipeline.Status
		errHas   string
		client   pipeline.Status
	}{
		{"upstream down", downURL, 0, pipeline.StatusError, "connect", pipeline.StatusError},
		{"upstream dies mid-stream", dying.URL, 0, pipeline.StatusError, "", pipeline.StatusError},
		{"client leaves", slow.URL, 100 * ms, pipeline.StatusCancelled, "", pipeline.StatusCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan *trace.Stream, 1)
			g, err := pipeline.NewGuard(pipeline.DefaultConfig(), pipeline.GuardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			proxy := proxyTo(t, tt.upstream, func(p *Proxy) {
				p.Guard = g
				p.OnStream = func(s *trace.Stream) { got <- s }
			})
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			s, err := (&Client{BaseURL: proxy.URL}).Stream(ctx, "c", "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Turn.Status != tt.client {
				t.Errorf("client: %s %q, want %s", s.Turn.Status, s.Turn.Error, tt.client)
			}
			select {
			case ps := <-got:
				if ps.Turn.Status != tt.proxied || !strings.Contains(ps.Turn.Error, tt.errHas) {
					t.Errorf("proxy recorded %s %q, want %s with %q", ps.Turn.Status, ps.Turn.Error, tt.proxied, tt.errHas)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the proxy never ended the stream")
			}
			if n := g.Open(); n != 0 {
				t.Errorf("%d turns still open in the guard", n)
			}
		})
	}
}

// BenchmarkProxyLatency measures what the proxy adds to each chunk: the
// delay from the upstream's flush to the client's read, direct and
// through the proxy, over streams of chunks every 5 ms (ms metrics).
func BenchmarkProxyLatency(b *testing.B) {
	const streams, chunks = 20, 100
	run := func(b *testing.B, through bool) []float64 {
		turns := make([]*pipeline.Turn, streams)
		sent := make([][]time.Time, streams)
		for i := range turns {
			turns[i] = fidelityTurn(fmt.Sprint(i), chunks, 5*time.Millisecond)
			sent[i] = make([]time.Time, chunks)
		}
		var mu sync.Mutex
		m := &Mock{Turns: turns, OnSend: func(turn string, chunk int, _ time.Duration) {
			now := time.Now()
			var i int
			fmt.Sscan(turn, &i)
			mu.Lock()
			sent[i][chunk] = now
			mu.Unlock()
		}}
		mock := httptest.NewServer(m)
		defer mock.Close()
		url := mock.URL
		if through {
			g, _ := pipeline.NewGuard(pipeline.DefaultConfig(), pipeline.GuardOptions{})
			p, err := NewProxy(mock.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			p.Guard, p.Trace = g, SyncTrace(&fakeTrace{})
			ps := httptest.NewServer(p)
			defer ps.Close()
			url = ps.URL
		}
		c := &Client{BaseURL: url}
		var wg sync.WaitGroup
		got := make([]*trace.Stream, streams)
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := Request{Model: "m", Prompt: Prompt{Text: "x"}, Header: http.Header{MockTurnHeader: {fmt.Sprint(i)}}}
				got[i], _ = c.Stream(context.Background(), fmt.Sprint(i), "", req)
			}()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		var delays []float64
		for i, s := range got {
			if s == nil || len(s.Turn.Chunks) != chunks {
				b.Fatalf("stream %d incomplete", i)
			}
			for k, ch := range s.Turn.Chunks {
				delays = append(delays, pipeline.Millis(s.Turn.Start.Add(ch.At).Sub(sent[i][k])))
			}
		}
		slices.Sort(delays)
		return delays
	}
	var direct, proxied []float64
	for b.Loop() {
		direct = append(direct, run(b, false)...)
		proxied = append(proxied, run(b, true)...)
	}
	slices.Sort(direct)
	slices.Sort(proxied)
	for _, p := range []float64{50, 99} {
		d, q := pipeline.Percentile(direct, p), pipeline.Percentile(proxied, p)
		b.ReportMetric(d, fmt.Sprintf("direct-p%v-ms", p))
		b.ReportMetric(q, fmt.Sprintf("proxied-p%v-ms", p))
		b.ReportMetric(q-d, fmt.Sprintf("added-p%v-ms", p))
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
	var rec, capture testkit.Buffer
	var px *Proxy
	proxy := proxyTo(t, mock.URL+"/v1", func(p *Proxy) {
		p.Guard, p.Trace, px = g, SyncTrace(trace.NewWriter(&rec, "proxy")), p
		p.Capture = trace.NewCaptureWriter(&capture, "proxy")
		p.OnTurn = func(t *pipeline.Turn) { mu.Lock(); ended = append(ended, t); mu.Unlock() }
	})
	const user = `{"role":"user","content":"Weather?"}`
	tools := `"tools":[{"type":"function","function":{"name":"get_weather"}}]`
	ask := `{"model":"m","stream":true,"stream_options":{"include_usage":true},` + tools + `,"messages":[` + user + `]}`
	first := postChat(t, proxy.URL, ask)
	_, call, _ := text(first)
	time.Sleep(1500 * time.Millisecond) // the tool runs, longer than "Let me check." plays
	result := `{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.callID + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"` + call.callID + `","content":"sunny"}`
	postChat(t, proxy.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[`+user+`,`+result+`]}`)
	postChat(t, proxy.URL, ask) // a second exchange, whose results never come
	px.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != 2 {
		t.Fatalf("%d turns ended, want each exchange as one", len(ended))
	}
	if u := ended[1]; len(u.ToolCalls) != 1 || u.ToolCalls[0].Duration != 0 || u.Text() != "Let me check." {
		t.Errorf("the unanswered exchange %+v: want its words and its call, not returned", u)
	}
	got := ended[0]
	if got.Text() != turn.Text() || len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "get_weather" ||
		got.ToolCalls[0].Duration < 1500*ms || got.OutputTokens != turn.Tokens() {
		t.Fatalf("the joined turn %+v: want the trace's text, one get_weather call of 1.5 s or more, %d tokens", got, turn.Tokens())
	}
	recorded := testkit.All(t, trace.NewNativeReader(strings.NewReader(rec.String()), "proxy.jsonl").Next)
	if len(recorded) != 2 || !reflect.DeepEqual(recorded[0].ToolCalls, got.ToolCalls) || len(recorded[0].Chunks) != len(got.Chunks) ||
		!reflect.DeepEqual(recorded[1].ToolCalls, ended[1].ToolCalls) {
		t.Fatalf("recorded %+v, want the joined turns\n%s", recorded, rec.String())
	}
	// the raw capture reads back as the same turns, joined again
	captured := testkit.All(t, trace.NewCaptureReader(strings.NewReader(capture.String()), "proxy.sse.jsonl").Next)
	if len(captured) != len(recorded) {
		t.Fatalf("the capture reads as %d turns, the trace as %d\n%s", len(captured), len(recorded), capture.String())
	}
	for i := range captured {
		for k := range captured[i].Chunks { // a chunk's token count unknown reads as one in the trace
			c := &captured[i].Chunks[k]
			c.Tokens = c.TokenCount()
		}
		if !reflect.DeepEqual(captured[i], recorded[i]) {
			t.Errorf("the capture reads as\n%+v\nthe trace as\n%+v", *captured[i], *recorded[i])
		}
	}
	var offline []pipeline.Underrun
	for _, r := range recorded {
		off, err := pipeline.Play(cfg, r)
		if err != nil {
			t.Fatal(err)
		}
		offline = append(offline, off.Underruns...)
	}
	if !slices.ContainsFunc(offline, func(u pipeline.Underrun) bool { return u.Cause == pipeline.CauseTool }) {
		t.Errorf("offline gaps %+v: want the tool call's silence", offline)
	}
	if fmt.Sprint(live) != fmt.Sprint(offline) {
		t.Errorf("the guard raised\n%+v\noffline analysis of the recording found\n%+v", live, offline)
	}
}
