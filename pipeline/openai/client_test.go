package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// step is one thing a scripted server does: write (and flush) bytes, then
// sleep; abort drops the connection.
type step struct {
	write string
	sleep time.Duration
	abort bool
}

// scripted returns a loopback server that answers every request with the
// given status, content type and steps, and sends the request it saw (its
// headers and body) on seen.
func scripted(t *testing.T, status int, ctype string, steps []step, seen chan<- *http.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if seen != nil {
			r2 := r.Clone(context.Background())
			r2.Body = io.NopCloser(bytes.NewReader(body))
			seen <- r2
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		w.(http.Flusher).Flush()
		for _, s := range steps {
			if s.abort {
				panic(http.ErrAbortHandler)
			}
			if s.write != "" {
				if _, err := io.WriteString(w, s.write); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			if s.sleep > 0 {
				select {
				case <-time.After(s.sleep):
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeTrace collects what a Client records.
type fakeTrace struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeTrace) BeginTurn(t *pipeline.Turn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "begin "+t.ID)
	return nil
}

func (f *fakeTrace) WriteChunk(id string, c pipeline.Chunk) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "chunk "+id+" "+c.Text)
	return nil
}

func (f *fakeTrace) EndTurn(t *pipeline.Turn) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "end "+t.ID+" "+string(t.Status))
	return nil
}

func TestClientRequest(t *testing.T) {
	t.Parallel()
	seen := make(chan *http.Request, 1)
	srv := scripted(t, 200, "text/event-stream", []step{{write: testkit.ChatChunk(`{"content":"ok"}`) + testkit.Done}}, seen)
	ft := &fakeTrace{}
	c := &Client{BaseURL: srv.URL + "/v1/", APIKey: "sk-secret", Trace: ft}
	s, err := c.Stream(context.Background(), "t1", "s1", Request{Model: "m", Prompt: Prompt{Text: "hi"}, MaxTokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	r := <-seen
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-secret" {
		t.Errorf("request %s with auth %q", r.URL.Path, r.Header.Get("Authorization"))
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	so, _ := body["stream_options"].(map[string]any)
	if body["stream"] != true || so["include_usage"] != true || body["max_tokens"] != 7.0 || body["model"] != "m" {
		t.Errorf("request body %v", body)
	}
	if s.Turn.Status != pipeline.StatusOK || s.Turn.Text() != "ok" || s.Turn.Session != "s1" || s.Turn.Start.IsZero() {
		t.Errorf("turn %+v", s.Turn)
	}
	if got, want := strings.Join(ft.events, "|"), "begin t1|chunk t1 ok|end t1 ok"; got != want {
		t.Errorf("trace %q, want %q", got, want)
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base string
		api  API
		want string
	}{
		{"http://h:8000", APIChat, "http://h:8000/v1/chat/completions"},
		{"http://h:8000/", APICompletions, "http://h:8000/v1/completions"},
		{"http://h/v1", APIChat, "http://h/v1/chat/completions"},
		{"https://h/api/v1/chat/completions", APICompletions, "https://h/api/v1/chat/completions"},
		{"h:8000", APIChat, ""},
		{"ftp://h", APIChat, ""},
	}
	for _, tt := range tests {
		got, err := Endpoint(tt.base, tt.api)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("Endpoint(%q, %s) = %q, %v; want %q", tt.base, tt.api, got, err, tt.want)
		}
	}
}

func TestClientStreams(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name   string
		status int
		ctype  string
		steps  []step
		idle   time.Duration
		texts  string
		st     pipeline.Status
		errHas string
	}{
		{"vLLM chat", 200, "text/event-stream", []step{
			{write: testkit.ChatChunk(`{"role":"assistant","content":""}`)}, {write: testkit.ChatChunk(`{"content":"Hello"}`), sleep: 5 * ms},
			{write: testkit.ChatChunk(`{"content":" world"}`)}, {write: testkit.FinishChunk + testkit.UsageChunk + testkit.Done}}, 0, "Hello world", pipeline.StatusOK, ""},
		{"CRLF, comments, split writes", 200, "text/event-stream", []step{
			{write: ": keep-alive\r\n\r\n"}, {write: "data: {\"choices\":[{\"index\":0,"}, {write: "\"delta\":{\"content\":\"A\"}}]}\r"},
			{write: "\n\r\n"}, {write: "data: [DONE]\r\n\r\n"}}, 0, "A", pipeline.StatusOK, ""},
		{"HTTP error", 503, "application/json", []step{{write: `{"object":"error","message":"busy","code":503}`}}, 0,
			"", pipeline.StatusError, "HTTP 503: busy"},
		{"server dies mid-stream", 200, "text/event-stream", []step{
			{write: testkit.ChatChunk(`{"content":"a"}`)}, {write: testkit.ChatChunk(`{"content":"b"}`)}, {abort: true}}, 0,
			"ab", pipeline.StatusError, ""},
		{"error event mid-stream", 200, "text/event-stream", []step{
			{write: testkit.ChatChunk(`{"content":"a"}`)}, {write: `data: {"error":{"message":"OOM"}}` + "\n\n"}, {write: testkit.Done}}, 0,
			"a", pipeline.StatusError, "OOM"},
		{"idle timeout", 200, "text/event-stream", []step{
			{write: testkit.ChatChunk(`{"content":"a"}`), sleep: 2 * time.Second}, {write: testkit.Done}}, 150 * ms,
			"a", pipeline.StatusError, "no data from the server for 150ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := scripted(t, tt.status, tt.ctype, tt.steps, nil)
			c := &Client{BaseURL: srv.URL, IdleTimeout: tt.idle}
			s, err := c.Stream(context.Background(), "t", "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Turn.Text() != tt.texts || s.Turn.Status != tt.st || !strings.Contains(s.Turn.Error, tt.errHas) {
				t.Errorf("turn text %q status %s error %q; want %q %s %q", s.Turn.Text(), s.Turn.Status, s.Turn.Error, tt.texts, tt.st, tt.errHas)
			}
			if err := s.Turn.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestClientSlowUpstream(t *testing.T) {
	t.Parallel()
	gap := 40 * time.Millisecond
	srv := scripted(t, 200, "text/event-stream", []step{
		{sleep: gap}, {write: testkit.ChatChunk(`{"content":"a"}`), sleep: gap}, {write: testkit.ChatChunk(`{"content":"b"}`), sleep: gap},
		{write: testkit.ChatChunk(`{"content":"c"}`)}, {write: testkit.Done}}, nil)
	c := &Client{BaseURL: srv.URL}
	s, err := c.Stream(context.Background(), "t", "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Turn.Chunks
	if len(ch) != 3 || s.Turn.Status != pipeline.StatusOK {
		t.Fatalf("turn %+v", s.Turn)
	}
	if ch[0].At < gap {
		t.Errorf("TTFT %v, want at least %v", ch[0].At, gap)
	}
	for i := 1; i < len(ch); i++ {
		// a chunk cannot come before it was sent; how late it may come
		// depends on how busy the machine is: the bound is loose
		if itl := ch[i].At - ch[i-1].At; itl < gap-time.Millisecond || itl > gap+time.Second {
			t.Errorf("ITL %d = %v, want about %v", i, itl, gap)
		}
	}
}

func TestClientCancel(t *testing.T) {
	t.Parallel()
	left := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, testkit.ChatChunk(`{"content":"a"}`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(left)
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fakeTrace{}
	c := &Client{BaseURL: srv.URL, Trace: SyncTrace(ft)}
	go func() {
		for {
			ft.mu.Lock()
			n := len(ft.events)
			ft.mu.Unlock()
			if n >= 2 { // begin and the first chunk
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	s, err := c.Stream(ctx, "t", "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn.Status != pipeline.StatusCancelled || len(s.Turn.Chunks) != 1 {
		t.Errorf("turn %+v", s.Turn)
	}
	select {
	case <-left:
	case <-time.After(3 * time.Second):
		t.Error("the server never saw the client leave")
	}
}

func TestClientBadRequest(t *testing.T) {
	t.Parallel()
	c := &Client{BaseURL: "http://127.0.0.1:1"}
	_, err := c.Stream(context.Background(), "t", "", Request{API: APICompletions, Prompt: Prompt{Messages: []Message{{Role: "user"}}}})
	if !errors.Is(err, ErrRequest) {
		t.Errorf("error %v, want ErrRequest", err)
	}
	// nothing listens there: the failure is recorded in the turn
	s, err := c.Stream(context.Background(), "t", "", Request{Model: "m"})
	if err != nil || s.Turn.Status != pipeline.StatusError || s.Turn.Error == "" {
		t.Errorf("turn %+v, error %v", s.Turn, err)
	}
}

// closingServer answers one streaming request per connection, with a
// keep-alive response, and closes the connection when a second request
// comes on it, unanswered: as llama.cpp's server does once a stream has
// run past its keep-alive time.
func closingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil || i > 0 {
						return // the second request on it: closed unanswered
					}
					io.Copy(io.Discard, req.Body)
					text := `{"content":"hi"}`
					if _, ok := req.Header["Idempotency-Key"]; ok {
						text = `{"content":"an Idempotency-Key header came"}`
					}
					body := testkit.ChatChunk(text) + testkit.ChatChunk(`{"content":" there"}`) + testkit.Done
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestClientServerClosedKeptAlive: a request written to a kept-alive
// connection the server closes without answering is sent again on a new
// one, through the Client and through the proxy, and no header is added
// on the wire.
func TestClientServerClosedKeptAlive(t *testing.T) {
	t.Parallel()
	upstream := closingServer(t)
	proxy := proxyTo(t, upstream, nil)
	for _, url := range []string{upstream, proxy.URL} {
		c := &Client{BaseURL: url}
		for i := range 3 {
			s, err := c.Stream(context.Background(), "t"+strconv.Itoa(i), "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Turn.Status != pipeline.StatusOK || s.Turn.Text() != "hi there" {
				t.Errorf("%s: request %d: %s %s %q", url, i, s.Turn.Status, s.Turn.Error, s.Turn.Text())
			}
		}
	}
}
