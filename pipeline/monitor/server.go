package monitor

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/valyala/fastjson"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/httpserver"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

// Defaults of a Server.
const (
	DefaultMaxMessage       = 64 << 10
	DefaultRate             = 200 // messages per second per connection
	DefaultBurst            = 400
	DefaultQueue            = 1024
	DefaultMaxSessions      = 10000
	DefaultFlushInterval    = 2 * time.Millisecond
	DefaultSnapshotInterval = 200 * time.Millisecond
	DefaultWriteTimeout     = 5 * time.Second
	// DefaultMaxSubscribers and DefaultMaxPages bound the /events
	// subscribers and the live pages (/live) open at once: each costs a
	// queue and, for a page, a snapshot every SnapshotInterval (3,000
	// pages took 499 MB and sent 3.1 GB in 15 s).
	DefaultMaxSubscribers = 256
	DefaultMaxPages       = 32
	// MaxPageRows is how many sessions the live page's table lists: those
	// closest to going silent first.
	MaxPageRows = 200
)

// Options configure a Server. The zero value of every field but Config
// takes its default.
type Options struct {
	// Config is the speech model every session is guarded with.
	Config pipeline.Config
	// WarnTolerance raises stall warnings when a session's stall tolerance
	// falls to it (0: none).
	WarnTolerance time.Duration
	// Logger receives the event log: session opens and closes, underruns,
	// stall warnings, barge-ins and turn summaries (zero: none).
	Logger zerolog.Logger
	// Clock drives the guards and the session times (nil: the wall clock).
	Clock pipeline.Clock
	// Token, when set, must come with every request but the page's
	// static files: "Authorization: Bearer TOKEN" or "?token=TOKEN".
	Token string
	// AllowHosts are the Host names the monitor answers besides loopback
	// ones (localhost, 127.0.0.1, [::1], the address a request came in
	// on), "*" for any, when no Token is set: a page on another site
	// whose name an attacker points at 127.0.0.1 (DNS rebinding) is
	// refused. With a Token every host is answered: the token guards.
	AllowHosts []string
	// Origins are the browser origins allowed besides the monitor's own
	// host ("https://ops.example.com", or "*" for any). Requests without
	// an Origin header (not from a browser) are always allowed.
	Origins []string
	// MaxMessage is the largest ingest message in bytes; a larger one
	// closes the connection with status 1009 (message too big).
	MaxMessage int64
	// Rate and Burst limit each ingest connection's messages (a token
	// bucket); a message over the limit is refused with an error message.
	Rate  float64
	Burst int
	// Queue is how many messages a subscriber or page may fall behind
	// (waiting for its socket to take a write) before it is dropped as too
	// slow.
	Queue int
	// MaxSessions limits the ingest connections open at once.
	MaxSessions int
	// MaxSubscribers and MaxPages limit the /events subscribers and the
	// live pages open at once; one more is refused with 503.
	MaxSubscribers, MaxPages int
	// Record, when set, receives every turn, chunk and end as a native
	// trace as it is accepted: each record is handed to Record's Write
	// within FlushInterval (a process killed at any moment loses at most
	// the records of the last FlushInterval), and Shutdown writes the
	// rest. Turns are named SESSION/TURN; a name the recording already
	// holds gets the first free suffix #2, #3, ... The first write that
	// fails is logged at once ("record_error"); the monitor goes on with
	// its sessions, records nothing more, and Shutdown returns the error.
	Record io.Writer
	// FlushInterval is the longest an accepted record waits in memory
	// before it is written: the records of that time go out in one write.
	FlushInterval time.Duration
	// SnapshotInterval is how often live pages get the sessions table and
	// their chart.
	SnapshotInterval time.Duration
	// WriteTimeout is the longest a write to a websocket may take (a hello,
	// an error, an event to a subscriber, a close frame) before the
	// connection is given up (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive HTTP connection that sends no next
	// request for this long (Serve; default httpserver.IdleTimeout).
	IdleTimeout time.Duration
	// OnTurn, when set, receives every turn as it ends (an exporter to a
	// tracing backend). It runs on the session's guard, so it must return
	// quickly, and it must not keep TurnDone.Playout.
	OnTurn func(TurnDone)
	// Collectors are more Prometheus collectors for /metrics, beside the
	// monitor's own (an OTLP exporter's delivery counters).
	Collectors []prometheus.Collector

	// recordBacklog is how many bytes of records may wait behind a write
	// that Record holds up before ingestion waits too (tests: a few)
	recordBacklog int
}

// Server is the live monitor: an http.Handler with the ingest, events and
// page websockets, /metrics and the embedded page. Create it with New and
// stop it with Shutdown.
type Server struct {
	opts  Options
	clock pipeline.Clock
	// timers is clock when the monitor made its own (no Options.Clock):
	// the ingest loops run its due timers as they take messages
	timers *pipeline.QueueClock
	log    zerolog.Logger
	m      *metrics
	hub    *hub
	rec    *recorder
	mux    http.Handler
	up     websocket.Upgrader
	// subscribers and pages are how many /events and /live connections
	// are open (or being opened)
	subscribers, pages atomic.Int32

	mu       sync.Mutex
	sessions map[string]*session
	closed   Totals // of the sessions that have closed
	// recentClosed are the sessions that closed last, oldest first (at
	// most ClosedKept), for the pages to browse
	recentClosed []*closedSession
	conns        map[*websocket.Conn]struct{}
	nextID       int
	closing      bool
	wg           sync.WaitGroup

	received atomic.Int64
	refused  atomic.Int64
	seq      atomic.Uint64 // of events

	stop     chan struct{}
	loopDone chan struct{}
	shutOnce sync.Once
	shutErr  error
}

//go:embed web
var webFS embed.FS

var _ http.Handler = (*Server)(nil)

// New returns a running Server (its background loops write the recording
// and feed the live pages until Shutdown).
func New(opts Options) (*Server, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.WarnTolerance < 0 {
		return nil, fmt.Errorf("%w: warn tolerance must not be negative, got %v", pipeline.ErrConfig, opts.WarnTolerance)
	}
	orDefault(&opts.Burst, DefaultBurst)
	orDefault(&opts.Queue, DefaultQueue)
	orDefault(&opts.MaxSessions, DefaultMaxSessions)
	orDefault(&opts.MaxSubscribers, DefaultMaxSubscribers)
	orDefault(&opts.MaxPages, DefaultMaxPages)
	hosts, err := httpserver.AllowHosts(opts.AllowHosts)
	if err != nil {
		return nil, err
	}
	if opts.Token != "" {
		hosts, _ = httpserver.AllowHosts([]string{"*"}) // the token guards
	}
	orDefault(&opts.MaxMessage, DefaultMaxMessage)
	orDefault(&opts.Rate, DefaultRate)
	orDefault(&opts.FlushInterval, DefaultFlushInterval)
	orDefault(&opts.recordBacklog, DefaultRecordBacklog)
	orDefault(&opts.SnapshotInterval, DefaultSnapshotInterval)
	orDefault(&opts.WriteTimeout, DefaultWriteTimeout)
	s := &Server{
		opts: opts, clock: opts.Clock, log: opts.Logger, m: newMetrics(),
		sessions: map[string]*session{}, conns: map[*websocket.Conn]struct{}{},
		stop: make(chan struct{}), loopDone: make(chan struct{}),
	}
	s.m.maxSessions.Set(float64(opts.MaxSessions))
	for _, c := range opts.Collectors {
		if err := s.m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("monitor: a collector for /metrics: %w", err)
		}
	}
	s.hub = newHub(opts.Queue, func(page bool) {
		kind := "events"
		if page {
			kind = "page"
		}
		s.m.dropped.WithLabelValues(kind).Inc()
		s.log.Warn().Str("event", "subscriber_dropped").Str("kind", kind).Msg("subscriber too slow: dropped")
	})
	if s.clock == nil {
		// the events a burst of drains raises go out together
		s.timers = pipeline.NewQueueClock(s.hub.batch)
		s.clock = s.timers
	}
	if opts.Record != nil {
		s.rec = newRecorder(opts.Record, opts.FlushInterval, opts.recordBacklog, s.log)
	}
	s.up = websocket.Upgrader{CheckOrigin: s.checkOrigin, ReadBufferSize: 4096, WriteBufferSize: 4096}
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web")
	files := http.FileServerFS(static)
	mux.Handle("GET /app.js", files)
	mux.Handle("GET /style.css", files)
	mux.Handle("GET /{$}", s.auth(files))
	mux.Handle("GET /ingest", s.auth(http.HandlerFunc(s.serveIngest)))
	mux.Handle("GET /events", s.auth(http.HandlerFunc(s.serveEvents)))
	mux.Handle("GET /live", s.auth(http.HandlerFunc(s.serveLive)))
	mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})))
	mux.Handle("GET /api/sessions", s.auth(http.HandlerFunc(s.serveSessions)))
	mux.Handle("GET /api/snapshot", s.auth(http.HandlerFunc(s.serveSnapshot)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	s.mux = hosts.Check(mux, "--allow-host (or --token)")
	go s.loop()
	return s, nil
}

// orDefault sets an option that is not positive (or is NaN) to its default.
func orDefault[T int | int64 | float64 | time.Duration](v *T, d T) {
	if !(*v > 0) {
		*v = d
	}
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Registry returns the Server's Prometheus registry (served on /metrics).
func (s *Server) Registry() *prometheus.Registry { return s.m.reg }

// Stats counts what a Server has taken in.
type Stats struct {
	// Sessions is how many ingest connections are open.
	Sessions int
	// Received counts the messages accepted; Refused those answered with
	// an error (malformed, rejected or over the rate limit).
	Received, Refused int64
}

// Stats returns the Server's counts now.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
	return Stats{Sessions: n, Received: s.received.Load(), Refused: s.refused.Load()}
}

// auth checks the bearer token.
func (s *Server) auth(h http.Handler) http.Handler {
	if s.opts.Token == "" {
		return h
	}
	want := []byte(s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.URL.Query().Get("token")
		if b := httpserver.Bearer(r); b != "" {
			got = b
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="underrun monitor"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkOrigin allows non-browser clients, the monitor's own page and the
// configured origins.
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, o := range s.opts.Origins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// serveIngest runs one voice app's session.
func (s *Server) serveIngest(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("session")
	if len(id) > MaxName || strings.ContainsAny(id, "/\x00") {
		http.Error(w, fmt.Sprintf("session: want at most %d bytes and no '/', got %q", MaxName, id), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		http.Error(w, "monitor shutting down", http.StatusServiceUnavailable)
		return
	case len(s.sessions) >= s.opts.MaxSessions:
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("too many sessions (%d)", s.opts.MaxSessions), http.StatusServiceUnavailable)
		return
	}
	if id == "" {
		for {
			s.nextID++
			id = "s" + strconv.Itoa(s.nextID)
			if _, taken := s.sessions[id]; !taken {
				break
			}
		}
	} else if _, taken := s.sessions[id]; taken {
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("session %q is already connected", id), http.StatusConflict)
		return
	}
	sess, err := s.newSession(id, r.RemoteAddr)
	if err != nil {
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.sessions[id] = sess // reserved before the upgrade
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	conn, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		return // the upgrader has answered
	}
	s.mu.Lock()
	if s.closing {
		delete(s.sessions, id)
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	s.m.sessions.Inc()
	s.log.Info().Str("event", "session_open").Str("session", id).Str("remote", r.RemoteAddr).Msg("session_open")
	sess.publish(eventMessage{Type: "session_open", Session: id, UnixNs: s.clock.Now().UnixNano()})

	s.ingest(conn, sess)

	sess.close()
	conn.Close()
	now := s.clock.Now()
	closed := sess.row(now)
	kept := sess.keep(now, closed)
	s.mu.Lock()
	delete(s.sessions, id)
	delete(s.conns, conn)
	s.closed.add(closed)
	s.closed.Closed++
	s.recentClosed = append(s.recentClosed, kept)
	if n := len(s.recentClosed); n > ClosedKept {
		s.recentClosed[0] = nil
		s.recentClosed = s.recentClosed[1:]
	}
	s.mu.Unlock()
	s.m.sessions.Dec()
	s.log.Info().Str("event", "session_close").Str("session", id).Msg("session_close")
	s.publishEvent(eventMessage{Type: "session_close", Session: id, UnixNs: s.clock.Now().UnixNano()})
}

// ingest reads the session's messages until the connection ends.
func (s *Server) ingest(conn *websocket.Conn, sess *session) {
	conn.SetReadLimit(s.opts.MaxMessage)
	hello, _ := json.Marshal(struct {
		Type       Type    `json:"type"`
		Session    string  `json:"session"`
		MaxMessage int64   `json:"max_message"`
		Rate       float64 `json:"rate"`
		Burst      int     `json:"burst"`
	}{TypeHello, sess.id, s.opts.MaxMessage, s.opts.Rate, s.opts.Burst})
	conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if err := conn.WriteMessage(websocket.TextMessage, hello); err != nil {
		return
	}
	var (
		p    fastjson.Parser
		turn string // the turn the last message named
		buf  bytes.Buffer
		lim  = limiter{rate: s.opts.Rate, burst: float64(s.opts.Burst), tokens: float64(s.opts.Burst)}
	)
	for {
		typ, rd, err := conn.NextReader()
		if err != nil {
			return
		}
		var arrived time.Time
		if s.timers != nil {
			// the timers due run here, on a thread that is running,
			// rather than wait for the one that holds the runtime timer
			s.timers.RunDue()
			// the message counts from when its bytes came (Serve stamps
			// connections), not from when this goroutine got to read them
			arrived, _ = rxstamp.Stamp(conn.NetConn())
		}
		buf.Reset()
		if _, err := buf.ReadFrom(rd); err != nil {
			return // over the size limit: gorilla has sent 1009
		}
		if typ != websocket.TextMessage {
			s.refuse(conn, sess, reasonMalformed, "", fmt.Errorf("%w: want a text message holding JSON, got a binary one", ErrMessage))
			continue
		}
		if !lim.allow(time.Now()) {
			s.refuse(conn, sess, reasonRate, "", fmt.Errorf("rate limit: more than %g messages/s (burst %d); message dropped", s.opts.Rate, s.opts.Burst))
			continue
		}
		m, err := parse(&p, buf.Bytes(), turn)
		turn = m.Turn
		if err != nil {
			s.refuse(conn, sess, reasonMalformed, m.Turn, err)
			continue
		}
		if err := sess.handle(m, arrived); err != nil {
			s.refuse(conn, sess, reasonRejected, m.Turn, err)
			continue
		}
		s.received.Add(1)
		s.m.byType[m.Type].Inc()
	}
}

// refuse answers a message with an error and counts it.
func (s *Server) refuse(conn *websocket.Conn, sess *session, reason, turn string, err error) {
	s.refused.Add(1)
	s.m.refused.WithLabelValues(reason).Inc()
	sess.log.Debug().Str("event", "refused").Str("reason", reason).Err(err).Msg("message refused")
	msg, _ := json.Marshal(struct {
		Type   Type   `json:"type"`
		Reason string `json:"reason"`
		Turn   string `json:"turn,omitempty"`
		Error  string `json:"error"`
	}{TypeError, reason, turn, err.Error()})
	conn.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if conn.WriteMessage(websocket.TextMessage, msg) != nil {
		conn.Close() // the reader ends the session
	}
}

// limiter is a token bucket (used by one goroutine).
type limiter struct {
	rate, burst, tokens float64
	last                time.Time
}

func (l *limiter) allow(now time.Time) bool {
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// eventMessage is what subscribers and pages receive for each event.
type eventMessage struct {
	Type       string  `json:"type"`
	Session    string  `json:"session"`
	Turn       string  `json:"turn,omitempty"`
	AtMs       float64 `json:"at_ms,omitempty"`
	DurationMs float64 `json:"duration_ms,omitempty"`
	LateMs     float64 `json:"late_ms,omitempty"`
	Class      string  `json:"class,omitempty"`
	Cause      string  `json:"cause,omitempty"`
	Position   string  `json:"position,omitempty"`
	// Token (underrun) is the index, from 0, of the turn's chunk that came
	// late (pipeline.Underrun.Token); LastToken (underrun_started,
	// stall_warning) that of the last chunk that had arrived.
	Token         *int     `json:"token,omitempty"`
	LastToken     *int     `json:"last_token,omitempty"`
	ITLMs         float64  `json:"itl_ms,omitempty"`
	ToleranceMs   float64  `json:"tolerance_ms,omitempty"`
	Status        string   `json:"status,omitempty"`
	Tokens        int      `json:"tokens,omitempty"`
	TTFTMs        float64  `json:"ttft_ms,omitempty"`
	TPOTMs        *float64 `json:"tpot_ms,omitempty"`
	TTFAMs        *float64 `json:"ttfa_ms,omitempty"`
	E2ELMs        float64  `json:"e2el_ms,omitempty"`
	SpeechMs      float64  `json:"speech_ms,omitempty"`
	Glitches      *int     `json:"glitches,omitempty"`
	Interruptions *int     `json:"interruptions,omitempty"`
	UnderrunMs    float64  `json:"underrun_ms,omitempty"`
	// ToolSilences and ToolSilenceMs (turn) are the silences while the
	// stream stopped for a tool call, kept apart from the underruns; Name
	// (tool_call) is the tool.
	ToolSilences  int     `json:"tool_silences,omitempty"`
	ToolSilenceMs float64 `json:"tool_silence_ms,omitempty"`
	Name          string  `json:"name,omitempty"`
	// FillerCoveredMs and FillerLateMs (tool_silence, with Config.Filler)
	// are what the filler plays over of the silence and how long a phrase
	// that outlasts it holds back the reply (pipeline.Filler.Cover).
	FillerCoveredMs *float64 `json:"filler_covered_ms,omitempty"`
	FillerLateMs    *float64 `json:"filler_late_ms,omitempty"`
	// Heard, Fillers, Predicted, Player, Differences, Agrees, SpeechChunks
	// and MeasuredChunks make a heard event (playout.go).
	Heard          []gapMessage   `json:"heard,omitempty"`
	Fillers        []gapMessage   `json:"fillers,omitempty"`
	Predicted      []gapMessage   `json:"predicted,omitempty"`
	Player         *playerMessage `json:"player,omitempty"`
	Differences    []diffMessage  `json:"differences,omitempty"`
	Agrees         *bool          `json:"agrees,omitempty"`
	SpeechChunks   *int           `json:"speech_chunks,omitempty"`
	MeasuredChunks *int           `json:"measured_chunks,omitempty"`
	// UnixNs is the wall-clock moment the event is about (for
	// underrun_started, when the buffer drained); SentUnixNs when the
	// monitor sent it.
	UnixNs     int64 `json:"unix_ns"`
	SentUnixNs int64 `json:"sent_unix_ns"`
	// Seq numbers the monitor's events from 1, in the order they were
	// sent, so that a page can merge a session's history with live events.
	Seq uint64 `json:"seq"`
}

// publishEvent sends an event to every subscriber, and to the pages that
// chart its session, and returns it as sent (nil when it could not be).
func (s *Server) publishEvent(e eventMessage) []byte {
	e.SentUnixNs = time.Now().UnixNano()
	e.Seq = s.seq.Add(1)
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	s.hub.publish(b, e.Session)
	return b
}

// sendHistory sends a page the recent events of the session it charts,
// open or among those that closed last.
func (s *Server) sendHistory(sub *subscriber, id string) {
	s.mu.Lock()
	sess := s.sessions[id]
	cs := s.closedSession(id)
	s.mu.Unlock()
	switch {
	case sess != nil:
		s.hub.send(sub, sess.history())
	case cs != nil:
		s.hub.send(sub, historyMessage(id, cs.events))
	}
}

// serveEvents streams every event to a subscriber until it leaves, falls
// behind or the monitor shuts down.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	s.subscribe(w, r, false)
}

// serveLive feeds a live page: events, and on every snapshot tick the
// sessions table and the chart of the session it selected (it sends
// {"select":"ID"}).
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request) {
	s.subscribe(w, r, true)
}

func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, page bool) {
	count, limit, what := &s.subscribers, s.opts.MaxSubscribers, "subscribers"
	if page {
		count, limit, what = &s.pages, s.opts.MaxPages, "live pages"
	}
	if count.Add(1) > int32(limit) {
		count.Add(-1)
		http.Error(w, fmt.Sprintf("too many %s (%d)", what, limit), http.StatusServiceUnavailable)
		return
	}
	defer count.Add(-1)
	conn, err := s.up.Upgrade(batchHijacker{w}, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(4096)
	sub := newSubscriber(conn, page)
	sub.chunks = !page && r.URL.Query().Get("chunks") == "1"
	if sel := r.URL.Query().Get("session"); sel != "" {
		sub.selected.Store(&sel)
	}
	if !s.hub.add(sub, s.opts.WriteTimeout) {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "monitor shutting down"), time.Now().Add(time.Second))
		conn.Close()
		return
	}
	// every event from now on reaches this subscriber
	hello, _ := json.Marshal(struct {
		Type  Type `json:"type"`
		Queue int  `json:"queue"`
	}{TypeHello, s.opts.Queue})
	s.hub.send(sub, hello)
	if p := sub.selected.Load(); page && p != nil {
		// what happened before the page came; events from now on follow
		// (a page merges the two by seq)
		s.sendHistory(sub, *p)
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		if page {
			var sel struct {
				Select string `json:"select"`
			}
			if json.Unmarshal(data, &sel) == nil {
				sub.selected.Store(&sel.Select)
				s.sendHistory(sub, sel.Select)
			}
		}
	}
	s.hub.drop(sub, false)
	<-sub.done
}

// loop feeds the pages until Shutdown.
func (s *Server) loop() {
	defer close(s.loopDone)
	snap := time.NewTicker(s.opts.SnapshotInterval)
	defer snap.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-snap.C:
			if s.hub.pages.Load() > 0 {
				s.snapshot()
			}
		}
	}
}

// Row is one session in the live page's table and /api/sessions.
type Row struct {
	Session string `json:"session"`
	Remote  string `json:"remote"`
	State   string `json:"state"`
	// Turn is the open turn the row shows: of several, the one whose
	// player is dry, else the one with the least audio buffered.
	Turn string `json:"turn,omitempty"`
	// OpenTurns is how many turns are streaming.
	OpenTurns int `json:"open_turns"`
	// BufferedMs and ReadyMs are that turn's audio not yet played
	// (pipeline.Backlog): buffered (released to the synthesizer) and the
	// part of it ready at the player.
	BufferedMs    float64  `json:"buffered_ms"`
	ReadyMs       float64  `json:"ready_ms"`
	TTFTMs        *float64 `json:"ttft_ms"`
	TPOTMs        *float64 `json:"tpot_ms"`
	TTFAMs        *float64 `json:"ttfa_ms"`
	Turns         int      `json:"turns"`
	Glitches      int      `json:"glitches"`
	Interruptions int      `json:"interruptions"`
	BargeIns      int      `json:"barge_ins"`
	StallWarnings int      `json:"stall_warnings"`
	UnderrunMs    float64  `json:"underrun_ms"`
	VoiceScale    float64  `json:"voice_scale,omitempty"`
	AgeS          float64  `json:"age_s"`
	// ClosedUnixMs is when a session that has closed closed (the pages'
	// list of the sessions that closed last).
	ClosedUnixMs float64 `json:"closed_unix_ms,omitempty"`
}

// stateRank orders the table: sessions about to go silent first.
var stateRank = map[string]int{StateUnderrun: 0, StateLow: 1, StateStreaming: 2, StateIdle: 3, StateClosed: 4}

// Sessions samples every session's buffered audio now and returns the
// table, most urgent first.
func (s *Server) Sessions() []Row {
	rows, _ := s.table()
	return rows
}

// table samples every session and returns the table, most urgent first,
// and the totals of the monitor: those of the sessions that had closed
// when the table was taken, and of the rows.
func (s *Server) table() ([]Row, Totals) {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		list = append(list, sess)
	}
	totals := s.closed
	s.mu.Unlock()
	now := s.clock.Now()
	rows := make([]Row, 0, len(list))
	for _, sess := range list {
		rows = append(rows, sess.row(now))
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if ra, rb := stateRank[a.State], stateRank[b.State]; ra != rb {
			return ra < rb
		}
		if a.BufferedMs != b.BufferedMs {
			return a.BufferedMs < b.BufferedMs
		}
		return naturalLess(a.Session, b.Session)
	})
	totals.Sessions = len(rows)
	for _, r := range rows {
		totals.add(r)
		switch r.State {
		case StateUnderrun:
			totals.Dry++
		case StateLow:
			totals.Low++
		}
	}
	return rows, totals
}

// naturalLess orders names as people do: runs of digits by their number,
// so that s2 comes before s10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			if da != db {
				return da < db // fewer leading zeros first
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits returns the length of the run of ASCII digits that s begins with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// Totals are the monitor's counts since it started, over every session,
// those that have closed included.
type Totals struct {
	// Sessions is how many are connected; Closed how many have closed.
	Sessions int `json:"sessions"`
	Closed   int `json:"closed"`
	// Dry and Low are the connected sessions whose player is dry now, or
	// whose stall tolerance is low.
	Dry int `json:"dry"`
	Low int `json:"low"`
	// The rest add up the sessions' own counts.
	Turns         int     `json:"turns"`
	Interruptions int     `json:"interruptions"`
	Glitches      int     `json:"glitches"`
	BargeIns      int     `json:"barge_ins"`
	StallWarnings int     `json:"stall_warnings"`
	UnderrunMs    float64 `json:"underrun_ms"`
}

// add counts a session's row in the totals.
func (t *Totals) add(r Row) {
	t.Turns += r.Turns
	t.Interruptions += r.Interruptions
	t.Glitches += r.Glitches
	t.BargeIns += r.BargeIns
	t.StallWarnings += r.StallWarnings
	t.UnderrunMs += r.UnderrunMs
}

// row samples the backlog of every open turn of the session and returns
// its table row: the turn whose player is dry, else the one with the least
// audio buffered.
func (sess *session) row(now time.Time) Row {
	sess.mu.Lock()
	open := make([]string, 0, len(sess.turns))
	for id := range sess.turns {
		open = append(open, id)
	}
	sess.mu.Unlock()
	backlogs := make(map[string]pipeline.Backlog, len(open))
	for _, id := range open {
		if b, ok := sess.guard.Backlog(id); ok {
			backlogs[id] = b
		}
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var shown *turnState
	for id, b := range backlogs {
		ts := sess.turns[id]
		if ts == nil {
			continue
		}
		if h := sess.series.turn(id); h != nil {
			h.sample(now, b)
		}
		switch {
		case shown == nil,
			ts.draining && !shown.draining,
			ts.draining == shown.draining && (b.Buffered < backlogs[shown.id].Buffered ||
				b.Buffered == backlogs[shown.id].Buffered && naturalLess(id, shown.id)):
			shown = ts
		}
	}
	r := Row{Session: sess.id, Remote: sess.remote, OpenTurns: len(backlogs),
		Turns: sess.turnsDone, Glitches: sess.glitches, Interruptions: sess.interruptions,
		BargeIns: sess.bargeIns, StallWarnings: sess.stalls, UnderrunMs: pipeline.Millis(sess.silence),
		VoiceScale: sess.scaleFactor, AgeS: now.Sub(sess.opened).Seconds()}
	if shown != nil {
		b := backlogs[shown.id]
		r.Turn, r.BufferedMs, r.ReadyMs = shown.id, pipeline.Millis(b.Buffered), pipeline.Millis(b.Ready)
	}
	if sess.hasTTFT {
		r.TTFTMs = ptr(pipeline.Millis(sess.ttft))
	}
	if sess.hasTPOT {
		r.TPOTMs = ptr(pipeline.Millis(sess.tpot))
	}
	if sess.hasTTFA {
		r.TTFAMs = ptr(pipeline.Millis(sess.ttfa))
	}
	switch {
	case sess.closed:
		r.State = StateClosed
	case shown == nil:
		r.State = StateIdle
	case shown.draining:
		r.State = StateUnderrun
	case !sess.warnAt.IsZero() && now.Sub(sess.warnAt) < time.Second:
		r.State = StateLow
	default:
		r.State = StateStreaming
	}
	return r
}

// snapshot sends every page the table and its selected session's chart.
func (s *Server) snapshot() {
	rows, sums := s.table()
	table, err := json.Marshal(rows[:min(len(rows), MaxPageRows)])
	if err != nil {
		return
	}
	closed := s.closedRows()
	now := s.clock.Now()
	totals, _ := json.Marshal(sums)
	charts := map[string][]byte{}
	for _, page := range s.hub.pageList() {
		sel := ""
		if p := page.selected.Load(); p != nil {
			sel = *p
		}
		chart, ok := charts[sel]
		if !ok {
			chart = s.chart(sel)
			charts[sel] = chart
		}
		s.hub.send(page, s.snapshotMessage(now, len(rows), totals, table, closed, sel, chart, nil))
	}
}

// ClosedKept is how many of the sessions that closed last the monitor
// keeps for its pages: the row each closed with, the chart of its turns
// and their gaps (the history the chart had kept, at most a minute before
// its latest turn began), and its latest events.
const ClosedKept = 32

// closedSession is a session that has closed, as the pages may still
// browse it.
type closedSession struct {
	row    Row
	chart  []byte // {"closed_ms":…,"turns":[…]}
	events []byte // its recent events, oldest first
}

// keep takes what the pages may browse of the session, closed at now with
// its last row.
func (sess *session) keep(now time.Time, row Row) *closedSession {
	row.ClosedUnixMs = unixMs(now)
	sess.mu.Lock()
	all := sess.series.recent(0)
	all.ClosedMs = row.ClosedUnixMs
	chart, err := json.Marshal(&all)
	sess.mu.Unlock()
	if err != nil {
		chart = []byte("null")
	}
	return &closedSession{row: row, chart: chart, events: sess.recentEvents()}
}

// closedSession returns the kept session that closed last with that id
// (nil when none); s.mu must be held.
func (s *Server) closedSession(id string) *closedSession {
	for i := len(s.recentClosed) - 1; i >= 0; i-- {
		if cs := s.recentClosed[i]; cs.row.Session == id {
			return cs
		}
	}
	return nil
}

// closedRows returns the rows of the kept closed sessions, the latest
// first, as JSON.
func (s *Server) closedRows() []byte {
	s.mu.Lock()
	rows := make([]Row, 0, len(s.recentClosed))
	for i := len(s.recentClosed) - 1; i >= 0; i-- {
		rows = append(rows, s.recentClosed[i].row)
	}
	s.mu.Unlock()
	b, err := json.Marshal(rows)
	if err != nil {
		return []byte("[]")
	}
	return b
}

// chart returns a session's chart as JSON: an open session's recent
// history, or what was kept of one that closed (null for neither).
func (s *Server) chart(id string) []byte {
	s.mu.Lock()
	sess := s.sessions[id]
	var kept []byte
	if cs := s.closedSession(id); sess == nil && cs != nil {
		kept = cs.chart
	}
	s.mu.Unlock()
	if kept != nil {
		return kept
	}
	if sess == nil {
		return []byte("null")
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	recent := sess.series.recent(unixMs(s.clock.Now().Add(-chartWindow)))
	b, err := json.Marshal(&recent)
	if err != nil {
		return []byte("null")
	}
	return b
}

// snapshotMessage is what a page gets on each tick.
// HTTP snapshots (events non-nil) carry the session's recent events too.
func (s *Server) snapshotMessage(now time.Time, total int, totals, table, closed []byte, sel string, chart, events []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"snapshot","now_ms":%.3f,"sessions_total":%d,"interruption_ms":%.3f,"totals":%s,"selected":`,
		unixMs(now), total, pipeline.Millis(s.opts.Config.Interruption), totals)
	sb, _ := json.Marshal(sel)
	b.Write(sb)
	b.WriteString(`,"sessions":`)
	b.Write(table)
	b.WriteString(`,"closed":`)
	b.Write(closed)
	b.WriteString(`,"chart":`)
	b.Write(chart)
	if events != nil {
		b.WriteString(`,"events":`)
		b.Write(events)
	}
	b.WriteString("}")
	return b.Bytes()
}

// serveSnapshot answers one snapshot, as pages get them, for the session
// named by ?session, with its recent events: the page draws it before its
// websocket opens.
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	rows, sums := s.table()
	table, err := json.Marshal(rows[:min(len(rows), MaxPageRows)])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sel := r.URL.Query().Get("session")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	totals, _ := json.Marshal(sums)
	events := []byte("[]")
	s.mu.Lock()
	sess := s.sessions[sel]
	if cs := s.closedSession(sel); sess == nil && cs != nil {
		events = cs.events
	}
	s.mu.Unlock()
	if sess != nil {
		events = sess.recentEvents()
	}
	w.Write(s.snapshotMessage(s.clock.Now(), len(rows), totals, table, s.closedRows(), sel, s.chart(sel), events))
}

// serveSessions answers the sessions table as JSON.
func (s *Server) serveSessions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.Sessions())
}

// ErrShutdown reports a Shutdown that ran out of time before every
// session had ended.
var ErrShutdown = errors.New("monitor shutdown incomplete")

// Shutdown stops the monitor: it refuses new connections, asks every
// ingest connection to close (the messages already received are still
// applied), ends the turns still open as incomplete, closes subscribers
// and pages, and writes the rest of the recording. When ctx ends first the remaining
// connections are cut. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() { s.shutErr = s.shutdown(ctx) })
	return s.shutErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	bye := websocket.FormatCloseMessage(websocket.CloseGoingAway, "monitor shutting down")
	for _, c := range conns {
		c.WriteControl(websocket.CloseMessage, bye, time.Now().Add(time.Second))
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var errs []error
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done // readers end at once on a closed connection
		errs = append(errs, fmt.Errorf("%w: %w", ErrShutdown, ctx.Err()))
	}
	// subscribers get their close frames, within one write timeout in all
	wctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	for _, d := range s.hub.close() {
		select {
		case <-d:
		case <-wctx.Done():
		}
	}
	close(s.stop)
	<-s.loopDone
	errs = append(errs, s.rec.close())
	return errors.Join(errs...)
}

// Serve serves the monitor on ln until ctx ends, then shuts it down,
// giving connections grace to close.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	if s.timers != nil {
		// on the wall clock, messages are timed by the kernel's receive
		// stamp where the system gives one (from a moment after the first
		// socket asks for it: ask now)
		ln = rxstamp.Listener(ln)
		go rxstamp.Warm(ctx)
	}
	hs := httpserver.New(s)
	if s.opts.IdleTimeout > 0 {
		hs.IdleTimeout = s.opts.IdleTimeout
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		// the listener failed: close the sessions within grace too
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		return errors.Join(err, s.Shutdown(sctx))
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	herr := hs.Shutdown(sctx)
	err := s.Shutdown(sctx)
	if errors.Is(herr, http.ErrServerClosed) {
		herr = nil
	}
	return errors.Join(err, herr)
}
