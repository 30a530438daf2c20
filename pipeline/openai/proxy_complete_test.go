package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// slowDisk is a recording on a slow disk: every write takes delay, so the
// proxy's handler is still recording a read when its client has the bytes.
type slowDisk struct {
	delay time.Duration
	testkit.Buffer
}

func (d *slowDisk) Write(p []byte) (int, error) {
	time.Sleep(d.delay)
	return d.Buffer.Write(p)
}

// lengthServer answers every request with status and body, sent whole
// with a Content-Length: a client knows it has the whole response the
// moment the last byte arrives, before the proxy's handler returns.
func lengthServer(t *testing.T, status int, ctype, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProxyCompletedNotCancelled (issue 45): a client that reads a whole
// response and closes its connection while the proxy is still recording
// it (here on a slow disk) did not go away: the turn is recorded as the
// response made it (a 401's error, a stream's ok), never as cancelled, in
// the turn and in the capture. A client that leaves mid-stream still is
// (TestProxyFailures, and the last case here).
func TestProxyCompletedNotCancelled(t *testing.T) {
	t.Parallel()
	const streamBody = `data: {"choices":[{"delta":{"content":"Hello there."}}]}` + "\n\n" +
		`data: {"choices":[{"delta":{},"finish_reason":"stop"}]}` + "\n\n" + "data: [DONE]\n\n"
	for _, tc := range []struct {
		name     string
		upstream *httptest.Server
		status   pipeline.Status
		errHas   string
	}{
		{"401 with a length", lengthServer(t, http.StatusUnauthorized, "application/json",
			`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error"}}`), pipeline.StatusError, "HTTP 401: Incorrect API key provided."},
		{"stream with a length", lengthServer(t, http.StatusOK, "text/event-stream", streamBody), pipeline.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan *trace.Stream, 1)
			disk := &slowDisk{delay: 20 * time.Millisecond}
			proxy := proxyTo(t, tc.upstream.URL, func(p *Proxy) {
				p.Capture = trace.NewCaptureWriter(disk, "proxy")
				p.OnStream = func(s *trace.Stream) { got <- s }
			})
			// a real client that reads to the end and closes its connection
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			const tries = 10
			for i := range tries {
				resp, err := client.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.ContentLength != int64(len(body)) {
					t.Fatalf("try %d: read %d bytes of %d: %v", i, len(body), resp.ContentLength, err)
				}
				select {
				case s := <-got:
					if s.Turn.Status != tc.status || !strings.Contains(s.Turn.Error, tc.errHas) {
						t.Errorf("try %d: the proxy recorded %s %q, want %s with %q", i, s.Turn.Status, s.Turn.Error, tc.status, tc.errHas)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("try %d: the proxy never ended the stream", i)
				}
			}
			back := readCapture(t, disk.Bytes())
			if len(back) != tries {
				t.Fatalf("the capture reads back as %d streams, want %d", len(back), tries)
			}
			for i, s := range back {
				if s.Turn.Status != tc.status {
					t.Errorf("capture stream %d: %s %q, want %s", i, s.Turn.Status, s.Turn.Error, tc.status)
				}
			}
		})
	}

	// a client that goes away mid-stream, with a recording as slow, is
	// still recorded as cancelled
	t.Run("client leaves", func(t *testing.T) {
		t.Parallel()
		slow := scripted(t, 200, "text/event-stream", []step{{write: testkit.ChatChunk(`{"content":"a"}`), sleep: 3 * time.Second}, {write: testkit.Done}}, nil)
		got := make(chan *trace.Stream, 1)
		disk := &slowDisk{delay: 20 * time.Millisecond}
		proxy := proxyTo(t, slow.URL, func(p *Proxy) {
			p.Capture = trace.NewCaptureWriter(disk, "proxy")
			p.OnStream = func(s *trace.Stream) { got <- s }
		})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if s, err := (&Client{BaseURL: proxy.URL}).Stream(ctx, "c", "", Request{Model: "m", Prompt: Prompt{Text: "x"}}); err != nil || s.Turn.Status != pipeline.StatusCancelled {
			t.Fatalf("client: %v %v", s, err)
		}
		select {
		case s := <-got:
			if s.Turn.Status != pipeline.StatusCancelled {
				t.Errorf("the proxy recorded %s %q, want cancelled", s.Turn.Status, s.Turn.Error)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the proxy never ended the stream")
		}
	})
}
