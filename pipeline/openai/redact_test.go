package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// echoingServer answers every request 401 with a body that quotes the
// request's API key, as some servers do (issue 45: the key was logged and
// recorded verbatim).
func echoingServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			key = r.Header.Get("X-Api-Key")
		}
		body := `{"error":{"message":"Incorrect API key provided: ` + key + `. Check it.","type":"invalid_request_error"}}`
		w.Header().Set("Content-Type", "application/json")
		// sent whole, with a length: the client has it all, and may close,
		// while the proxy is still recording it (TestProxyCompletedNotCancelled)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const echoedKey = "sk-proj-ECHOED-abcdef0123456789"

// TestServerEchoOfTheKeyRedacted: the key a server echoes in its 401 body
// is "[redacted]" in the turn's error, the trace, the SSE capture and the
// proxy's log, for the client (capture) and the proxy (a bearer token and
// an X-Api-Key header); the proxy still forwards the body as it came.
func TestServerEchoOfTheKeyRedacted(t *testing.T) {
	t.Parallel()
	upstream := echoingServer(t)
	check := func(t *testing.T, what string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(echoedKey)) {
			t.Errorf("%s holds the API key: %s", what, b)
		}
	}

	var tr, capt bytes.Buffer
	c := &Client{BaseURL: upstream.URL, APIKey: echoedKey, Trace: trace.NewWriter(&tr, "test"), Capture: trace.NewCaptureWriter(&capt, "test")}
	s, err := c.Stream(context.Background(), "t1", "", Request{Model: "m", Prompt: Prompt{Text: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn.Status != pipeline.StatusError || !strings.Contains(s.Turn.Error, "HTTP 401: Incorrect API key provided: [redacted]. Check it.") {
		t.Errorf("client turn: %s %q", s.Turn.Status, s.Turn.Error)
	}
	check(t, "the client's turn error", []byte(s.Turn.Error))
	check(t, "the client's trace", tr.Bytes())
	check(t, "the client's SSE capture", capt.Bytes())
	back := testkit.All(t, trace.NewCaptureReader(bytes.NewReader(capt.Bytes()), "capture").Next)
	if len(back) != 1 || back[0].Error != s.Turn.Error {
		t.Errorf("the capture reads back as %d turns: %+v", len(back), back)
	}

	for _, header := range []string{"Authorization", "X-Api-Key"} {
		t.Run(header, func(t *testing.T) {
			t.Parallel()
			var ptr, pcapt testkit.Buffer
			var log testkit.Buffer
			proxy := proxyTo(t, upstream.URL, func(p *Proxy) {
				p.Logger = zerolog.New(&log)
				p.Trace = SyncTrace(trace.NewWriter(&ptr, "proxy"))
				p.Capture = trace.NewCaptureWriter(&pcapt, "proxy")
			})
			req, _ := http.NewRequest("POST", proxy.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
			if header == "Authorization" {
				req.Header.Set(header, "Bearer "+echoedKey)
			} else {
				req.Header.Set(header, echoedKey)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(body, []byte(echoedKey)) {
				t.Errorf("the proxy changed the body it forwards: %s", body)
			}
			for !strings.Contains(log.String(), `"event":"proxy_stream"`) { // the stream's records are written
				time.Sleep(time.Millisecond)
			}
			check(t, "the proxy's log", log.Bytes())
			check(t, "the proxy's trace", ptr.Bytes())
			check(t, "the proxy's SSE capture", pcapt.Bytes())
			if !strings.Contains(log.String(), "[redacted]") || !strings.Contains(log.String(), `"status":"error"`) {
				t.Errorf("the proxy's log does not say the server's error: %s", log.String())
			}
		})
	}

	_, err = (&Speech{BaseURL: upstream.URL, APIKey: echoedKey}).Synthesize(context.Background(), "Hi.")
	if err == nil || strings.Contains(err.Error(), echoedKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("speech client error: %v", err)
	}
}
