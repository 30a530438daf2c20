package openai

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestProxyRecordingFailsAtOnce: the proxy's trace and SSE capture go to
// destinations that fail after N bytes (a disk that fills) or to
// /dev/full. The stream is still forwarded byte for byte, and the first
// failure is logged as a "record_error" event while the stream is still
// open, once, not when it ends (issue 45: proxy -o /dev/full never said).
func TestProxyRecordingFailsAtOnce(t *testing.T) {
	t.Parallel()
	type dests struct {
		name     string
		tr, capt io.Writer
	}
	cases := []dests{
		{"trace full after 300 bytes", &testkit.FailWriter{N: 300}, nil},
		{"capture full after 500 bytes", nil, &testkit.FailWriter{N: 500}},
		{"both full at once", &testkit.FailWriter{}, &testkit.FailWriter{}},
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		cases = append(cases, dests{name: "/dev/full"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "/dev/full" {
				full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer full.Close()
				tc.tr, tc.capt = full, full
			}
			var body bytes.Buffer
			for k := range 40 {
				body.WriteString(testkit.ChatChunk(`{"content":" w` + strings.Repeat("x", k) + `"}`))
			}
			body.WriteString(testkit.Done)
			sse := body.Bytes()
			var log testkit.Buffer
			reported := make(chan struct{})
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				half := len(sse) / 2
				w.Write(sse[:half])
				w.(http.Flusher).Flush()
				<-reported // the rest only once the failure has been told
				w.Write(sse[half:])
			}))
			defer upstream.Close()
			proxy := proxyTo(t, upstream.URL, func(p *Proxy) {
				p.Logger = zerolog.New(&log)
				if tc.tr != nil {
					p.Trace = SyncTrace(trace.NewWriter(tc.tr, "proxy"))
				}
				if tc.capt != nil {
					p.Capture = trace.NewCaptureWriter(tc.capt, "proxy")
				}
			})
			go func() {
				defer close(reported)
				deadline := time.Now().Add(30 * time.Second)
				for !strings.Contains(log.String(), `"event":"record_error"`) && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}()
			resp, err := http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, sse) {
				t.Errorf("the client got %d bytes, not the %d the server sent", len(got), len(sse))
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) < 2 || !strings.Contains(lines[0], `"event":"record_error"`) {
				t.Fatalf("the first event is not the record_error, while the stream was open:\n%s", log.String())
			}
			if n := strings.Count(log.String(), `"event":"record_error"`); n != 1 {
				t.Errorf("%d record_error events, want 1", n)
			}
			if !strings.Contains(lines[0], "no space left on device") {
				t.Errorf("the record_error does not say why: %s", lines[0])
			}
			for _, d := range []io.Writer{tc.tr, tc.capt} {
				if fw, ok := d.(*testkit.FailWriter); ok && fw.Failed() != 1 {
					t.Errorf("%d writes reached the full destination, want the one that failed", fw.Failed())
				}
			}
		})
	}
}
