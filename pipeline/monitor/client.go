package monitor

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
)

// IngestURL returns the ingest websocket address of a monitor for session
// (empty: the monitor names it). base is the monitor's address, as
// http://host:port, ws://host:port or host:port, with or without a path,
// or unix:PATH (the address is then ws://localhost/..., over the socket).
func IngestURL(base, session string) (string, error) {
	return endpoint(base, "/ingest", "session", session)
}

// EventsURL returns the events websocket address of a monitor.
func EventsURL(base string) (string, error) { return endpoint(base, "/events", "", "") }

func endpoint(base, path, key, value string) (string, error) {
	if p, ok := socketPath(base); ok {
		if p == "" {
			return "", fmt.Errorf("monitor address %q: want unix:PATH, the socket's path", base)
		}
		base = "ws://localhost"
	}
	if !strings.Contains(base, "://") {
		base = "ws://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("monitor address %q: %w", base, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("monitor address %q: want an http, https, ws or wss URL", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("monitor address %q: no host", base)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/ingest"), "/") + path
	q := u.Query()
	if key != "" && value != "" {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dial opens a websocket to addr (an endpoint of the monitor at base)
// with an optional bearer token.
func dial(ctx context.Context, base, addr, token string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: netDial(base)}
	return dialWith(ctx, d, addr, token)
}

func dialWith(ctx context.Context, d websocket.Dialer, addr, token string) (*websocket.Conn, error) {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := d.DialContext(ctx, addr, h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %s)", addr, err, resp.Status)
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c, nil
}

// appendMessage appends one ingest message as JSON. at < 0 leaves t_ms
// out.
func appendMessage(b []byte, typ Type, turn string, c *pipeline.Chunk, at time.Duration, status pipeline.Status) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","turn":`...)
	b = appendJSONString(b, turn)
	if c != nil {
		if !c.Textless {
			b = append(b, `,"text":`...)
			b = appendJSONString(b, c.Text)
		}
		if c.Tokens > 0 {
			b = append(b, `,"tokens":`...)
			b = strconv.AppendInt(b, int64(c.Tokens), 10)
		}
		if c.Reasoning {
			b = append(b, `,"reasoning":true`...)
		}
	}
	if at >= 0 {
		b = append(b, `,"t_ms":`...)
		b = strconv.AppendFloat(b, pipeline.Millis(at), 'f', -1, 64)
	}
	if status != "" {
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(status))
	}
	return append(b, '}')
}

// appendToolMessage appends a tool_call (naming the tool, when name is
// not empty) or tool_result message of turn at at.
func appendToolMessage(b []byte, typ Type, turn, name string, at time.Duration) []byte {
	b = appendMessage(b, typ, turn, nil, at, "")
	if name == "" {
		return b
	}
	b = append(b[:len(b)-1], `,"name":`...)
	return append(appendJSONString(b, name), '}')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// sender is one ingest connection whose writes several goroutines share.
type sender struct {
	mu   sync.Mutex
	conn *websocket.Conn
}

func (s *sender) send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout))
	return s.conn.WriteMessage(websocket.TextMessage, msg)
}

// close sends a normal close and waits a little for the monitor's answer.
func (s *sender) close(readerDone <-chan struct{}) {
	s.mu.Lock()
	s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	s.mu.Unlock()
	select {
	case <-readerDone:
	case <-time.After(2 * time.Second):
	}
	s.conn.Close()
}
