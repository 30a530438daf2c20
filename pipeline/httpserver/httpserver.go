// Package httpserver holds what every HTTP server of underrun (the monitor,
// the mock, the proxy) needs to be safe on a developer's machine: timeouts
// that close idle and slow connections, and the Host check that keeps a
// web page from reaching a loopback server through DNS rebinding.
package httpserver

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Timeouts of every server.
const (
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection that sends no next
	// request for this long (left open, 5,000 idle connections starve new
	// ones under a descriptor limit).
	IdleTimeout = 30 * time.Second
)

// New returns a server for h with the timeouts above. Websocket
// connections, taken over from the server, keep their own deadlines.
func New(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout}
}

// Hosts decides which Host headers a server answers. A page on
// rebind.example whose name an attacker points at 127.0.0.1 reaches a
// loopback server from the victim's browser, but its requests say
// "Host: rebind.example": refusing host names other than loopback ones
// defeats it. The zero value allows loopback names only.
type Hosts struct {
	names []string // lower case, without a trailing dot
	any   bool
}

// AllowHosts returns a Hosts that also allows the names given ("*" allows
// any); each is a host name or an IP address, without a port.
func AllowHosts(names []string) (Hosts, error) {
	var h Hosts
	for _, n := range names {
		n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
		switch {
		case n == "*":
			h.any = true
		case n == "" || strings.ContainsAny(n, "/:@ ") && net.ParseIP(strings.Trim(n, "[]")) == nil:
			return Hosts{}, fmt.Errorf("allowed host %q: want a host name or IP address without a port, or *", n)
		default:
			h.names = append(h.names, strings.Trim(n, "[]"))
		}
	}
	return h, nil
}

// Allowed reports whether the server answers r: its Host is a loopback
// name (localhost, *.localhost, a loopback address), the address the
// request came in on, or one of the names allowed. A request without a
// Host (HTTP/1.0, not a browser) is allowed.
func (h Hosts) Allowed(r *http.Request) bool {
	if h.any || r.Host == "" {
		return true
	}
	host := r.Host
	if hp, _, err := net.SplitHostPort(host); err == nil {
		host = hp
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		// the address the client reached the server at: a LAN client of
		// a server listening on every interface (no name to rebind)
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if tcp, ok := local.(*net.TCPAddr); ok && tcp.IP.Equal(ip) {
				return true
			}
		}
	}
	for _, n := range h.names {
		if n == host {
			return true
		}
	}
	return false
}

// Check wraps next so that requests with a Host not allowed get 403
// Forbidden, saying how to allow it (flag names the option that does).
func (h Hosts) Check(next http.Handler, flag string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Allowed(r) {
			http.Error(w, fmt.Sprintf("host %q is not allowed (a page on another site may be trying to reach this server); allow it with %s", r.Host, flag), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Bearer returns the token of an "Authorization: Bearer TOKEN" header,
// the scheme matched in any case (RFC 9110), or "" without one.
func Bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
