package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// FeedOptions configure Feed.
type FeedOptions struct {
	// URLs are the monitors' addresses (http://host:port or
	// ws://host:port): each session goes to URLs[Shard(session, len(URLs))].
	URLs []string
	// Token is the monitor's bearer token, if it has one.
	Token string
	// Session names the session of turns that carry none (default "feed").
	Session string
	// OnRefused, when set, is called with each error message the monitor
	// answers (from the connections' reader goroutines).
	OnRefused func(session, msg string)
}

// FeedStats counts what Feed sent.
type FeedStats struct {
	Sessions, Turns int
	// PerMonitor is how many sessions went to each of FeedOptions.URLs.
	PerMonitor []int
	// Messages is how many messages were sent; Refused how many the
	// monitor answered with an error.
	Messages, Refused int64
}

// Feed plays a recorded trace into running monitors at its real pace:
// one ingest connection per session (to the monitor Shard picks for its
// name among opts.URLs), each turn started at its recorded
// offset from the first (turns without a start time follow each other),
// and each chunk sent at its recorded time with t_ms, so the monitor's
// underruns are the offline ones. A turn named "session/turn" (as the
// monitor records them) is sent as "turn" on "session". Feed returns when
// every turn has been sent and the connections closed, or when ctx ends.
func Feed(ctx context.Context, dec trace.Decoder, opts FeedOptions) (FeedStats, error) {
	var st FeedStats
	if opts.Session == "" {
		opts.Session = "feed"
	}
	if len(opts.URLs) == 0 {
		return st, fmt.Errorf("feed: no monitor address")
	}
	st.PerMonitor = make([]int, len(opts.URLs))
	var turns []*pipeline.Turn
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if err := t.Validate(); err != nil {
			return st, err
		}
		turns = append(turns, t)
	}
	if len(turns) == 0 {
		return st, fmt.Errorf("feed: the trace holds no turn")
	}
	offsets := schedule(turns)
	order := make([]int, len(turns))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return offsets[order[a]] < offsets[order[b]] })

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conns := map[string]*feedConn{}
	var refused atomic.Int64
	var sent atomic.Int64
	// closeAll closes every connection at once: each waits up to 2 s
	// for the monitor's close, and they wait together, not in turn
	closeAll := func() {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.s.close(c.done)
			}()
		}
		wg.Wait()
	}
	for _, t := range turns {
		name := t.Session
		if name == "" {
			name = opts.Session
		}
		if conns[name] != nil {
			continue
		}
		shard := Shard(name, len(opts.URLs))
		addr, err := IngestURL(opts.URLs[shard], name)
		if err != nil {
			closeAll()
			return st, err
		}
		conn, err := dial(ctx, opts.URLs[shard], addr, opts.Token)
		if err != nil {
			closeAll()
			return st, err
		}
		fc := &feedConn{s: &sender{conn: conn}, done: make(chan struct{})}
		conns[name] = fc
		st.PerMonitor[shard]++
		go func(name string) {
			defer close(fc.done)
			for {
				_, data, err := conn.ReadMessage()
				if err != nil {
					return
				}
				var m struct {
					Type  Type   `json:"type"`
					Error string `json:"error"`
				}
				if json.Unmarshal(data, &m) == nil && m.Type == TypeError {
					refused.Add(1)
					if opts.OnRefused != nil {
						opts.OnRefused(name, m.Error)
					}
				}
			}
		}(name)
	}
	st.Sessions = len(conns)
	start := time.Now()
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	var wg sync.WaitGroup
	errc := make(chan error, len(turns))
	for _, i := range order {
		t := turns[i]
		name := t.Session
		if name == "" {
			name = opts.Session
		}
		fc := conns[name]
		id := strings.TrimPrefix(t.ID, name+"/")
		if pipeline.SleepUntil(ctx, wait, start.Add(offsets[i])) != nil {
			break
		}
		if err := fc.s.send(appendMessage(nil, TypeTurnStart, id, nil, -1, "")); err != nil {
			errc <- fmt.Errorf("feed: session %q turn %q: %w", name, id, err)
			break
		}
		sent.Add(1)
		st.Turns++
		wg.Add(1)
		go func(t *pipeline.Turn, base time.Time) {
			defer wg.Done()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			var b []byte
			// emit sends b (what, of index k when k >= 0) at at since the
			// turn's start; false when the feed is over
			emit := func(at time.Duration, what string, k int) bool {
				if pipeline.SleepUntil(ctx, timer, base.Add(at)) != nil {
					return false
				}
				if err := fc.s.send(b); err != nil {
					if k >= 0 {
						what += " " + strconv.Itoa(k)
					}
					errc <- fmt.Errorf("feed: session %q turn %q %s: %w", name, id, what, err)
					cancel()
					return false
				}
				sent.Add(1)
				return true
			}
			for st := range t.Steps() {
				what, k := "chunk", st.Chunk
				switch {
				case st.Tool >= 0 && st.Return:
					b, what = appendToolMessage(b[:0], TypeToolResult, id, "", st.At), "tool result"
				case st.Tool >= 0:
					b, what = appendToolMessage(b[:0], TypeToolCall, id, t.ToolCalls[st.Tool].Name, st.At), "tool call"
				default:
					b = appendMessage(b[:0], TypeChunk, id, &t.Chunks[k], st.At, "")
				}
				if !emit(st.At, what, k) {
					return
				}
			}
			status := t.Status
			switch status {
			case "":
				status = pipeline.StatusOK
			case pipeline.StatusIncomplete:
				status = pipeline.StatusCancelled // the recorded stream was cut
			}
			b = appendMessage(b[:0], TypeTurnEnd, id, nil, -1, status)
			emit(0, "end", -1) // at once
		}(t, time.Now())
	}
	wg.Wait()
	closeAll()
	st.Messages, st.Refused = sent.Load(), refused.Load()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	if len(errs) == 0 && ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return st, errors.Join(errs...)
}

type feedConn struct {
	s    *sender
	done chan struct{}
}

// schedule returns each turn's start offset: its recorded start after the
// earliest one, or, for a turn without one, the end of the turn before.
func schedule(turns []*pipeline.Turn) []time.Duration {
	off := make([]time.Duration, len(turns))
	var first time.Time
	for _, t := range turns {
		if !t.Start.IsZero() && (first.IsZero() || t.Start.Before(first)) {
			first = t.Start
		}
	}
	var next time.Duration
	for i, t := range turns {
		if !t.Start.IsZero() {
			off[i] = t.Start.Sub(first)
		} else {
			off[i] = next
		}
		end := off[i]
		if n := len(t.Chunks); n > 0 {
			end += t.Chunks[n-1].At
		}
		next = max(next, end)
	}
	return off
}

// Shard picks, for a session named session, one of n monitors (0..n-1):
// Lamping and Veach's jump consistent hash of the 64-bit FNV-1a hash of the
// name. The same name always goes to the same monitor, sessions spread
// evenly, and growing the fleet from n to n+1 monitors moves only the
// sessions that go to the new one (about 1/(n+1) of them). A voice app
// that picks its monitor the same way, in any language, reaches the one
// monitor feed would choose. n < 1 is taken as 1.
func Shard(session string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(session))
	key := h.Sum64()
	b, j := int64(-1), int64(0)
	for j < int64(max(n, 1)) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
