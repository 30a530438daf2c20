package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

func TestHostsAllowed(t *testing.T) {
	t.Parallel()
	local := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8765}
	allowed, err := AllowHosts([]string{"monitor.example.com", "[fd00::1]"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		hosts Hosts
		host  string
		want  bool
	}{
		{Hosts{}, "localhost:8765", true},
		{Hosts{}, "LOCALHOST.:8765", true},
		{Hosts{}, "app.localhost", true},
		{Hosts{}, "127.0.0.1:8765", true},
		{Hosts{}, "127.9.9.9", true},
		{Hosts{}, "[::1]:8765", true},
		{Hosts{}, "10.1.2.3:8765", true}, // the address the request came in on
		{Hosts{}, "", true},
		{Hosts{}, "rebind.example:8765", false},
		{Hosts{}, "rebind.example", false},
		{Hosts{}, "localhost.rebind.example", false},
		{Hosts{}, "10.1.2.4:8765", false},
		{Hosts{}, "127.0.0.1.nip.io", false},
		{allowed, "monitor.example.com:443", true},
		{allowed, "Monitor.Example.Com", true},
		{allowed, "[fd00::1]:8765", true},
		{allowed, "other.example.com", false},
		{Hosts{any: true}, "anything.example", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
		if got := tc.hosts.Allowed(r); got != tc.want {
			t.Errorf("%+v: Host %q allowed = %v, want %v", tc.hosts, tc.host, got, tc.want)
		}
	}
	for _, bad := range []string{"host:80", "", "a/b", "user@host"} {
		if _, err := AllowHosts([]string{bad}); err == nil {
			t.Errorf("AllowHosts(%q) accepted", bad)
		}
	}
}

// TestCheckRefusesRebinding: a real server answers a loopback Host and
// refuses another with 403, saying which option allows it.
func TestCheckRefusesRebinding(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(Hosts{}.Check(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }), "--allow-host"))
	defer ts.Close()
	for host, want := range map[string]int{"": http.StatusOK, "rebind.example": http.StatusForbidden, "localhost": http.StatusOK} {
		req, _ := http.NewRequest("GET", ts.URL, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == http.StatusForbidden && !strings.Contains(string(body), "--allow-host") {
			t.Errorf("Host %q: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
}

func TestBearer(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER abc": "abc", "Basic abc": "", "Bearerabc": "", "": "",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		if got := Bearer(r); got != want {
			t.Errorf("Bearer(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestIdleConnectionsClosed: keep-alive connections to a server made by
// New that send nothing more are closed by the server (with its timeout
// shortened here; New's own is checked to be set). The test waits for the
// server to close each connection, not for any time.
func TestIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	if srv.IdleTimeout <= 0 || srv.ReadHeaderTimeout <= 0 {
		t.Fatalf("New: idle timeout %v, read-header timeout %v", srv.IdleTimeout, srv.ReadHeaderTimeout)
	}
	srv.IdleTimeout = 50 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	testkit.IdleClosed(t, ln.Addr().String(), "/", "localhost", 200)
}
