package monitor

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
)

// What a client of a monitor outside this package (the load generator in
// package loadgen, say) needs to reach it and speak its protocol.

// NetDialer returns the dial function for a monitor's address base: its
// Unix socket for unix:PATH (waiting a little while the socket's backlog
// is full, as TCP would), the host in the URL otherwise.
func NetDialer(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return netDial(base)
}

// Dial opens a websocket to addr (an endpoint of a monitor, IngestURL or
// EventsURL) with d, sending token as a bearer token when it is set.
func Dial(ctx context.Context, d websocket.Dialer, addr, token string) (*websocket.Conn, error) {
	return dialWith(ctx, d, addr, token)
}

// AppendMessage appends one ingest message of type typ for turn to b, as
// the JSON the protocol reads: c's text, tokens and reasoning mark when c
// is set, t_ms when at is not negative, status when it is not empty.
func AppendMessage(b []byte, typ Type, turn string, c *pipeline.Chunk, at time.Duration, status pipeline.Status) []byte {
	return appendMessage(b, typ, turn, c, at, status)
}

// ScrapeReceived returns how many ingest messages the monitor at base has
// accepted: the sum of its underrun_messages_total counters on /metrics.
func ScrapeReceived(ctx context.Context, base, token string) (int64, error) {
	u, err := endpoint(base, "/metrics", "", "")
	if err != nil {
		return 0, err
	}
	u = "http" + strings.TrimPrefix(u, "ws")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient(base).Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: %s: HTTP %s", u, resp.Status)
	}
	var n float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "underrun_messages_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		x, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics: %s: line %q: %w", u, line, err)
		}
		n += x
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return int64(n), nil
}
