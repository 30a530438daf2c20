package monitor

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// status requests path from the test server with the given Host and
// headers, over HTTP or, for a websocket path, as a websocket handshake.
func status(t *testing.T, url, path, host string, h http.Header) int {
	t.Helper()
	if h == nil {
		h = http.Header{}
	}
	switch path {
	case "/ingest", "/events", "/live":
		h = h.Clone()
		if host != "" {
			h.Set("Host", host)
		}
		c, resp, err := websocket.DefaultDialer.Dial("ws"+url[len("http"):]+path, h)
		if err == nil {
			c.Close()
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	req, _ := http.NewRequest("GET", url+path, nil)
	req.Header = h
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestDNSRebindingRefused: without a token, a request naming a host other
// than a loopback one (a page on rebind.example whose name resolves to
// 127.0.0.1) reaches none of the monitor's routes; --allow-host lets a
// name in; with a token any host may come, with the token (whose scheme
// is matched in any case).
func TestDNSRebindingRefused(t *testing.T) {
	t.Parallel()
	_, open := startServer(t, Options{})
	_, allowed := startServer(t, Options{AllowHosts: []string{"monitor.example"}})
	_, tokened := startServer(t, Options{Token: "s3cret"})
	bearer := func(scheme string) http.Header { return http.Header{"Authorization": {scheme + " s3cret"}} }
	for _, path := range []string{"/", "/api/sessions", "/api/snapshot", "/metrics", "/ingest", "/events", "/live"} {
		ok := http.StatusOK
		if path == "/ingest" || path == "/events" || path == "/live" {
			ok = http.StatusSwitchingProtocols
		}
		for _, tc := range []struct {
			name string
			url  string
			host string
			h    http.Header
			want int
		}{
			{"loopback", open.URL, "", nil, ok},
			{"localhost", open.URL, "localhost", nil, ok},
			{"rebinding", open.URL, "rebind.example", nil, http.StatusForbidden},
			{"rebinding, port", open.URL, "rebind.example:8765", nil, http.StatusForbidden},
			{"allowed host", allowed.URL, "monitor.example", nil, ok},
			{"other host", allowed.URL, "rebind.example", nil, http.StatusForbidden},
			{"token, any host", tokened.URL, "monitor.example", bearer("Bearer"), ok},
			{"token, lower-case scheme", tokened.URL, "", bearer("bearer"), ok},
			{"token, upper-case scheme", tokened.URL, "", bearer("BEARER"), ok},
			{"no token, any host", tokened.URL, "monitor.example", nil, http.StatusUnauthorized},
		} {
			if got := status(t, tc.url, path, tc.host, tc.h); got != tc.want {
				t.Errorf("%s %s: %d, want %d", tc.name, path, got, tc.want)
			}
		}
	}
}

// TestSubscriberAndPageCaps: /events subscribers and /live pages beyond
// their caps are refused with 503 (3,000 pages took 499 MB); the two caps
// are apart.
func TestSubscriberAndPageCaps(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{MaxSubscribers: 2, MaxPages: 1})
	for range 2 {
		dialT(t, ts, "/events", nil)
	}
	dialT(t, ts, "/live", nil)
	for _, path := range []string{"/events", "/live"} {
		if got := status(t, ts.URL, path, "", nil); got != http.StatusServiceUnavailable {
			t.Errorf("%s past its cap: %d, want 503", path, got)
		}
	}
}

// TestIdleKeepAliveClosed: the monitor's own server closes keep-alive
// connections that stay idle (5,000 stayed open for ever), with the idle
// timeout shortened for the test. It waits for each close, not for time.
func TestIdleKeepAliveClosed(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Config: tokenConfig(100*time.Millisecond, 0), IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, s, time.Second)
	testkit.IdleClosed(t, addr, "/healthz", "127.0.0.1", 100)
}
