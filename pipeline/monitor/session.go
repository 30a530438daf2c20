package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts"
)

// MaxTurns is how many turns one session may have open at once.
const MaxTurns = 16

// ErrRejected reports a well-formed message that does not fit the
// session's state (a chunk for a turn never started, a turn started twice).
var ErrRejected = errors.New("message rejected")

// The states a session shows on the live page.
const (
	StateIdle      = "idle"      // no turn is streaming
	StateStreaming = "streaming" // a turn is streaming and the buffer holds
	StateLow       = "low"       // a stall warning: the buffer is about to drain
	StateUnderrun  = "underrun"  // the player has run dry
	StateClosed    = "closed"    // the connection has closed
)

// session is one ingest connection: its own Guard (its voice can be
// rescaled by tts facts), its open turns, and what the page shows of it.
type session struct {
	id, remote string
	srv        *Server
	guard      *pipeline.Guard
	scale      *voiceScale
	log        zerolog.Logger
	opened     time.Time

	mu    sync.Mutex
	turns map[string]*turnState
	last  string // the turn started most recently and still open
	// what the app reported of its turns' speech and audio (playout.go)
	audio      map[string]*turnAudio
	audioOrder []string
	// what the table shows
	closed                                       bool
	turnsDone, glitches, interruptions, bargeIns int
	stalls                                       int
	ttft, tpot, ttfa                             time.Duration
	hasTTFT, hasTPOT, hasTTFA                    bool
	warnAt                                       time.Time
	silence                                      time.Duration
	series                                       series
	scaleFactor                                  float64

	// the latest events, for a page that starts charting the session
	recentMu   sync.Mutex
	recent     [][]byte
	recentNext int
}

// recentEvents is how many of its latest events a session keeps for the
// pages that select it.
const recentEvents = 32

// publish sends one of the session's events to the subscribers and keeps
// it among its recent events.
func (sess *session) publish(e eventMessage) {
	b := sess.srv.publishEvent(e)
	if b == nil {
		return
	}
	sess.recentMu.Lock()
	if len(sess.recent) < recentEvents {
		sess.recent = append(sess.recent, b)
	} else {
		sess.recent[sess.recentNext] = b
		sess.recentNext = (sess.recentNext + 1) % recentEvents
	}
	sess.recentMu.Unlock()
}

// history returns the session's recent events, oldest first, as one
// message for a page: {"type":"history","session":ID,"events":[...]}.
func (sess *session) history() []byte { return historyMessage(sess.id, sess.recentEvents()) }

// historyMessage is the history message of session id with its events (a
// JSON array).
func historyMessage(id string, events []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"history","session":`)
	sid, _ := json.Marshal(id)
	b.Write(sid)
	b.WriteString(`,"events":`)
	b.Write(events)
	b.WriteString("}")
	return b.Bytes()
}

// recentEvents returns the session's recent events, oldest first, as a
// JSON array.
func (sess *session) recentEvents() []byte {
	sess.recentMu.Lock()
	defer sess.recentMu.Unlock()
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range sess.recent {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(sess.recent[(sess.recentNext+i)%len(sess.recent)])
	}
	b.WriteByte(']')
	return b.Bytes()
}

// turnState is one open turn of a session (session.mu guards it).
type turnState struct {
	id, rec  string
	begin    time.Time
	chunks   int
	lastAt   time.Duration
	bargeAt  time.Duration
	barged   bool
	draining bool
	outTok   int
	// budget counts its chunks and tokens against the recordings' limits
	budget trace.TurnBudget
	// tool is the tool call running (not yet recorded), toolPause the
	// tool calls' time since the last chunk (left out of its ITL)
	tool      *pipeline.ToolCall
	toolPause time.Duration
	series    *turnSeries // its history in the live chart
	// the W3C trace context of its turn_start
	traceparent, tracestate string
}

// TurnDone is a turn as it ended, for Options.OnTurn.
type TurnDone struct {
	// Turn is the turn as it streamed (ID the turn's, Session the
	// session's, Start when its turn_start came); Playout its finished
	// engine, reused once OnTurn returns.
	Turn    *pipeline.Turn
	Playout *pipeline.Playout
	// Underruns are the turn's underruns as the monitor counts them: cut
	// at a barge-in.
	Underruns []pipeline.Underrun
	// Status is the turn's status as the turns metric counts it: ok,
	// error, cancelled, incomplete or barge_in.
	Status string
	// Traceparent and Tracestate are the trace context its turn_start
	// carried ("" when none).
	Traceparent, Tracestate string
}

// turnDone builds what OnTurn gets of a turn's EventTurn (session lock
// held: it reads ts).
func turnDone(e pipeline.Event, ts *turnState, status string, interruption time.Duration) TurnDone {
	rec := *e.Record
	d := TurnDone{Turn: &rec, Playout: e.Playout, Status: status}
	if ts != nil {
		if ts.outTok > 0 {
			rec.OutputTokens = ts.outTok
		}
		d.Traceparent, d.Tracestate = ts.traceparent, ts.tracestate
	}
	if p := e.Playout; p != nil {
		d.Underruns = make([]pipeline.Underrun, 0, len(p.Underruns))
		for _, u := range p.Underruns {
			if u, ok := clip(u, ts, interruption); ok {
				d.Underruns = append(d.Underruns, u)
			}
		}
	}
	return d
}

func (s *Server) newSession(id, remote string) (*session, error) {
	cfg := s.opts.Config
	sess := &session{
		id: id, remote: remote, srv: s,
		log:    s.log.With().Str("session", id).Logger(),
		opened: s.clock.Now(),
		turns:  map[string]*turnState{},
		scale:  &voiceScale{voice: cfg.Voice, base: cfg.Durations},
	}
	cfg.Durations = sess.scale
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{
		Clock: s.clock, OnEvent: sess.onEvent, WarnTolerance: s.opts.WarnTolerance,
		// speech chunks go only to the subscribers that asked for them
		SpeechWanted: func() bool { return s.hub.chunkSubs.Load() > 0 },
	})
	if err != nil {
		return nil, err
	}
	sess.guard = g
	return sess, nil
}

// handle applies one message from the voice app.
func (sess *session) handle(m Message, arrived time.Time) error {
	switch m.Type {
	case TypeTurnStart:
		return sess.turnStart(m, arrived)
	case TypeChunk:
		return sess.chunk(m, arrived)
	case TypeTurnEnd:
		return sess.turnEnd(m)
	case TypeBargeIn:
		return sess.bargeIn(m, arrived)
	case TypeSpeech, TypeAudio, TypePlayout:
		return sess.speechMessage(m, arrived)
	case TypeToolCall, TypeToolResult:
		return sess.toolMessage(m, arrived)
	case TypeTTS:
		f, err := sess.scale.learn(m.Text, m.Audio)
		if err != nil {
			return err
		}
		sess.mu.Lock()
		sess.scaleFactor = f
		sess.mu.Unlock()
		return nil
	}
	return fmt.Errorf("%w: unknown type %q", ErrMessage, m.Type)
}

func (sess *session) turnStart(m Message, arrived time.Time) error {
	sess.mu.Lock()
	_, open := sess.turns[m.Turn]
	n := len(sess.turns)
	sess.mu.Unlock()
	switch {
	case open:
		return fmt.Errorf("%w: turn %q is already streaming", ErrRejected, m.Turn)
	case n >= MaxTurns:
		return fmt.Errorf("%w: turn %q: %d turns are already open in this session", ErrRejected, m.Turn, n)
	}
	begin := sess.srv.clock.Now()
	if !arrived.IsZero() && arrived.Before(begin) {
		begin = arrived
	}
	if err := sess.guard.BeginAt(m.Turn, sess.id, begin); err != nil {
		return fmt.Errorf("%w: turn %q: %w", ErrRejected, m.Turn, err)
	}
	ts := &turnState{id: m.Turn, rec: sess.srv.rec.begin(sess.id, m.Turn, begin), begin: begin,
		traceparent: m.Traceparent, tracestate: m.Tracestate}
	sess.mu.Lock()
	sess.turns[m.Turn] = ts
	sess.last = m.Turn
	sess.beginAudio(m.Turn, begin)
	ts.series = sess.series.begin(m.Turn, begin)
	sess.mu.Unlock()
	sess.srv.m.openTurns.Inc()
	return nil
}

// open returns the open turn named id.
func (sess *session) open(id string) (*turnState, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	ts, ok := sess.turns[id]
	if !ok {
		return nil, notStreaming(id)
	}
	return ts, nil
}

// openAt returns the open turn m is about and m's time in it (at).
func (sess *session) openAt(m Message, arrived time.Time) (*turnState, time.Duration, error) {
	ts, err := sess.open(m.Turn)
	if err != nil {
		return nil, 0, err
	}
	return ts, sess.at(ts, m, arrived), nil
}

// notStreaming is the error for a message about a turn that is not open.
func notStreaming(id string) error {
	return fmt.Errorf("%w: turn %q is not streaming (send turn_start first)", ErrRejected, id)
}

// ClientAhead is how far a client's t_ms may run ahead of the monitor's
// own clock for the turn: the turn_start's trip makes the client's turn
// begin a little before the monitor's. Later times are taken as that.
const ClientAhead = 25 * time.Millisecond

// at is the time of a message in turn ts: the client's t_ms when given
// (at most ClientAhead past now: the engine cannot be told the far
// future), else when it arrived (the kernel's receive time, where the
// monitor has one), else now.
func (sess *session) at(ts *turnState, m Message, arrived time.Time) time.Duration {
	now := sess.srv.clock.Now().Sub(ts.begin)
	switch {
	case m.HasAt:
		// a time of 0 would mean "now" to the Guard: a nanosecond later is
		// the client's 0
		return max(min(m.At, now+ClientAhead), 1)
	case !arrived.IsZero():
		return max(min(arrived.Sub(ts.begin), now), 1)
	}
	return max(now, 0) // 0: the Guard's own now, the same instant
}

func (sess *session) chunk(m Message, arrived time.Time) error {
	sess.mu.Lock()
	ts, ok := sess.turns[m.Turn]
	var prev, pause time.Duration
	var n int
	var tools bool
	if ok {
		prev, n = ts.lastAt, ts.chunks
		tools = ts.tool != nil || ts.toolPause > 0
	}
	sess.mu.Unlock()
	if !ok {
		return notStreaming(m.Turn)
	}
	at := sess.at(ts, m, arrived)
	if n > 0 && at < prev && !m.HasAt {
		// two readings of one kernel stamp can differ by a few
		// nanoseconds: the monitor's own times never go back
		at = prev
	}
	if n > 0 && at < prev {
		return fmt.Errorf("%w: turn %q chunk %d: t_ms %.3f is before the previous chunk's %.3f",
			ErrRejected, m.Turn, n, pipeline.Millis(at), pipeline.Millis(prev))
	}
	c := pipeline.Chunk{At: at, Text: m.Text, Tokens: m.Tokens, Textless: !m.HasText, Reasoning: m.Reasoning}
	sess.mu.Lock()
	over := ts.budget.Admit(c)
	sess.mu.Unlock()
	if over != nil {
		// the turn ends here, as an error, and its recording with it: what
		// is recorded stays within what every reader reads
		reason := fmt.Sprintf("turn %q: %v", m.Turn, over)
		if err := sess.finish(ts, pipeline.StatusError, "refused at the limits: "+reason, 0); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s; the turn is ended as an error", ErrRejected, reason)
	}
	step, err := sess.guard.ChunkStep(m.Turn, c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if tools {
		// a tool call since the last chunk: the stream resumed (the guard
		// ended the call too), and the call's time is no ITL
		sess.endTool(ts, at)
		sess.mu.Lock()
		pause, ts.toolPause = ts.toolPause, 0
		sess.mu.Unlock()
	}
	sess.srv.rec.chunk(ts.rec, c)
	if n == 0 {
		sess.srv.m.ttft.Observe(at.Seconds())
	} else {
		sess.srv.m.itl.Observe((at - prev - pause).Seconds())
	}
	sess.mu.Lock()
	ts.chunks++
	ts.lastAt = at
	if n == 0 {
		sess.ttft, sess.hasTTFT = at, true
	}
	if h := ts.series; h.Open {
		h.token(ts.begin.Add(at), step.At, step.Before, step.After)
	}
	sess.mu.Unlock()
	return nil
}

func (sess *session) turnEnd(m Message) error {
	ts, err := sess.open(m.Turn)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	ts.outTok = m.OutputTokens
	sess.mu.Unlock()
	return sess.finish(ts, m.Status, m.Error, m.OutputTokens)
}

func (sess *session) bargeIn(m Message, arrived time.Time) error {
	ts, at, err := sess.openAt(m, arrived)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	ts.barged, ts.bargeAt = true, at
	sess.bargeIns++
	sess.mu.Unlock()
	sess.srv.m.bargeIns.Inc()
	sess.publish(eventMessage{Type: "barge_in", Session: sess.id, Turn: m.Turn,
		AtMs: pipeline.Millis(at), UnixNs: ts.begin.Add(at).UnixNano()})
	sess.log.Info().Str("event", "barge_in").Str("turn", m.Turn).Float64("at_ms", pipeline.Millis(at)).Msg("barge_in")
	return sess.finish(ts, pipeline.StatusCancelled, "barge-in", 0)
}

// toolMessage applies a tool_call or tool_result (the guard is called
// without sess.mu: it raises events that take it).
func (sess *session) toolMessage(m Message, arrived time.Time) error {
	ts, at, err := sess.openAt(m, arrived)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	running, chunks, last := ts.tool, ts.chunks, ts.lastAt
	sess.mu.Unlock()
	if m.Type == TypeToolResult {
		if running == nil {
			return fmt.Errorf("%w: turn %q has no tool call running (send tool_call first)", ErrRejected, m.Turn)
		}
		at = max(at, running.At)
		if err := sess.guard.ToolReturned(m.Turn, at); err != nil {
			return fmt.Errorf("%w: %w", ErrRejected, err)
		}
		sess.endTool(ts, at)
		return nil
	}
	if chunks > 0 && at < last {
		if m.HasAt {
			return fmt.Errorf("%w: turn %q tool call: t_ms %.3f is before the last chunk's %.3f",
				ErrRejected, m.Turn, pipeline.Millis(at), pipeline.Millis(last))
		}
		at = last
	}
	if err := sess.guard.ToolCall(m.Turn, pipeline.ToolCall{At: at, Name: m.Name}); err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	sess.endTool(ts, at) // a call running ends where this one starts
	sess.mu.Lock()
	ts.tool = &pipeline.ToolCall{At: at, Name: m.Name}
	sess.mu.Unlock()
	sess.log.Info().Str("event", "tool_call").Str("turn", m.Turn).Str("name", m.Name).Float64("at_ms", pipeline.Millis(at)).Msg("tool_call")
	sess.publish(eventMessage{Type: "tool_call", Session: sess.id, Turn: m.Turn, Name: m.Name,
		AtMs: pipeline.Millis(at), UnixNs: ts.begin.Add(at).UnixNano()})
	return nil
}

// endTool ends the turn's running tool call, if any, at at, and records
// it (sess.mu not held: the recording may wait for its writer).
func (sess *session) endTool(ts *turnState, at time.Duration) {
	sess.mu.Lock()
	tc := ts.tool
	if tc != nil {
		tc.Duration = max(0, at-tc.At)
		ts.tool = nil
		ts.toolPause += tc.Duration
	}
	sess.mu.Unlock()
	if tc != nil {
		sess.srv.rec.tool(ts.rec, *tc)
	}
}

// finish ends an open turn: the guard raises its last events, the
// recording gets its end record.
func (sess *session) finish(ts *turnState, status pipeline.Status, errText string, outTok int) error {
	sess.mu.Lock()
	running := ts.tool
	sess.mu.Unlock()
	if running != nil {
		// the turn ended with its tool call running: it ran until now
		at := max(sess.srv.clock.Now().Sub(ts.begin), running.At)
		_ = sess.guard.ToolReturned(ts.id, at)
		sess.endTool(ts, at)
	}
	err := sess.guard.End(ts.id, status)
	sess.mu.Lock()
	delete(sess.turns, ts.id)
	if sess.last == ts.id {
		sess.last = ""
		for id := range sess.turns {
			sess.last = id
		}
	}
	sess.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	sess.srv.rec.end(&pipeline.Turn{ID: ts.rec, Status: status, Error: errText, OutputTokens: outTok})
	sess.srv.m.openTurns.Dec()
	return nil
}

// close ends the turns still open as incomplete (the connection went
// away) and stops the guard.
func (sess *session) close() {
	sess.mu.Lock()
	open := make([]*turnState, 0, len(sess.turns))
	for _, ts := range sess.turns {
		open = append(open, ts)
	}
	sess.mu.Unlock()
	for _, ts := range open {
		_ = sess.finish(ts, pipeline.StatusIncomplete, "", 0)
	}
	sess.guard.Close()
	sess.mu.Lock()
	sess.closed = true
	sess.mu.Unlock()
}

// onEvent receives the guard's events (guard locks held: it must not call
// the guard). Events after a barge-in are dropped; a gap the barge-in cut
// short is clipped at the cut.
func (sess *session) onEvent(e pipeline.Event) {
	if e.Kind == pipeline.EventSpeech && sess.srv.hub.chunkSubs.Load() == 0 {
		return // one a chunk, and no subscriber wants them (publishChunk)
	}
	sess.mu.Lock()
	ts := sess.turns[e.Turn]
	var begin time.Time
	if ts != nil {
		begin = ts.begin
	}
	interruption := sess.srv.opts.Config.Interruption
	switch e.Kind {
	case pipeline.EventStall:
		sess.stalls++
		sess.warnAt = sess.srv.clock.Now()
		if h := sess.series.turn(e.Turn); h != nil {
			h.stall(begin.Add(e.At))
		}
		sess.mu.Unlock()
		sess.srv.m.stalls.Inc()
		sess.log.Warn().Str("event", string(e.Kind)).Str("turn", e.Turn).Float64("at_ms", pipeline.Millis(e.At)).
			Float64("tolerance_ms", pipeline.Millis(e.Tolerance)).Int("last_token", e.LastToken).Msg(string(e.Kind))
		sess.publish(eventMessage{Type: string(e.Kind), Session: sess.id, Turn: e.Turn,
			AtMs: pipeline.Millis(e.At), LateMs: pipeline.Millis(e.Now - e.At), ToleranceMs: pipeline.Millis(e.Tolerance),
			LastToken: ptr(e.LastToken), UnixNs: begin.Add(e.At).UnixNano()})
	case pipeline.EventDrain:
		if ts == nil || (ts.barged && e.At >= ts.bargeAt) {
			sess.mu.Unlock()
			return
		}
		ts.draining = true
		if h := sess.series.turn(e.Turn); h != nil {
			h.drain(begin.Add(e.At))
		}
		sess.mu.Unlock()
		sess.log.Warn().Str("event", string(e.Kind)).Str("turn", e.Turn).Float64("start_ms", pipeline.Millis(e.At)).
			Float64("late_ms", pipeline.Millis(e.Now-e.At)).Int("last_token", e.LastToken).Msg(string(e.Kind))
		sess.publish(eventMessage{Type: string(e.Kind), Session: sess.id, Turn: e.Turn,
			AtMs: pipeline.Millis(e.At), LateMs: pipeline.Millis(e.Now - e.At), LastToken: ptr(e.LastToken),
			Cause: string(e.Underrun.Cause), UnixNs: begin.Add(e.At).UnixNano()})
	case pipeline.EventUnderrun:
		if ts == nil {
			sess.mu.Unlock()
			return
		}
		u, ok := clip(e.Underrun, ts, interruption)
		ts.draining = false
		h := sess.series.turn(e.Turn)
		if !ok {
			if h != nil {
				h.undrain()
			}
			sess.mu.Unlock()
			return
		}
		if u.Cause == pipeline.CauseTool {
			// the stream stopped for a tool call: a silence, no underrun
			if h != nil {
				h.undrain()
			}
			sess.mu.Unlock()
			sess.srv.m.toolSilences.Inc()
			sess.srv.m.toolSilence.Add(u.Duration.Seconds())
			msg := eventMessage{Type: "tool_silence", Session: sess.id, Turn: e.Turn,
				AtMs: pipeline.Millis(u.Start), DurationMs: pipeline.Millis(u.Duration), LateMs: pipeline.Millis(e.Now - e.At),
				Cause: string(u.Cause), Token: ptr(u.Token), UnixNs: begin.Add(u.Start).UnixNano()}
			log := sess.log.Info().Str("event", "tool_silence").Str("turn", e.Turn).Float64("start_ms", pipeline.Millis(u.Start)).
				Float64("duration_ms", pipeline.Millis(u.Duration))
			if cfg := sess.srv.opts.Config; cfg.Filler.Plays() {
				cov := cfg.Filler.Cover(u.Duration, cfg)
				msg.FillerCoveredMs, msg.FillerLateMs = ptr(pipeline.Millis(cov.Covered)), ptr(pipeline.Millis(cov.Late))
				log = log.Float64("filler_covered_ms", *msg.FillerCoveredMs).Float64("filler_late_ms", *msg.FillerLateMs)
			}
			log.Msg("tool_silence")
			sess.publish(msg)
			return
		}
		if u.Class == pipeline.Interruption {
			sess.interruptions++
		} else {
			sess.glitches++
		}
		sess.silence += u.Duration
		if h != nil {
			h.gap(begin.Add(u.Start), begin.Add(u.Start+u.Duration), u.Class == pipeline.Interruption)
		}
		sess.mu.Unlock()
		if u.Class == pipeline.Interruption {
			sess.srv.m.interruptions.Inc()
		} else {
			sess.srv.m.glitches.Inc()
		}
		sess.srv.m.underrun.Observe(u.Duration.Seconds())
		pipeline.LogUnderrun(sess.log, u)
		sess.publish(eventMessage{Type: string(e.Kind), Session: sess.id, Turn: e.Turn,
			AtMs: pipeline.Millis(u.Start), DurationMs: pipeline.Millis(u.Duration), LateMs: pipeline.Millis(e.Now - e.At),
			Class: string(u.Class), Cause: string(u.Cause), Position: string(u.Position), Token: ptr(u.Token),
			ITLMs: pipeline.Millis(u.ITL), ToleranceMs: pipeline.Millis(u.Tolerance), UnixNs: begin.Add(u.Start).UnixNano()})
	case pipeline.EventSpeech:
		sess.mu.Unlock()
		sess.srv.publishChunk(e, sess.id, begin)
	case pipeline.EventTurn:
		sum := summarize(e, ts, interruption)
		sess.turnsDone++
		if sum.hasTPOT {
			sess.tpot, sess.hasTPOT = sum.tpot, true
		}
		if sum.hasTTFA {
			sess.ttfa, sess.hasTTFA = sum.ttfa, true
		}
		if ts != nil {
			ts.draining = false
		}
		sess.series.end(e.Turn, begin.Add(e.At))
		var done TurnDone
		if sess.srv.opts.OnTurn != nil {
			done = turnDone(e, ts, sum.status, interruption)
		}
		played := sess.endAudio(e.Turn, e.Record)
		sess.mu.Unlock()
		if played != nil {
			sess.reportHeard(played)
		}
		m := sess.srv.m
		m.turns.WithLabelValues(sum.status).Inc()
		m.speech.Add(sum.speech.Seconds())
		if sum.status == string(pipeline.StatusOK) && sum.gaps.Interruptions == 0 {
			m.goodTurns.Inc() // as analyze's speech goodput counts a turn
		}
		if sum.hasTPOT {
			m.tpot.Observe(sum.tpot.Seconds())
		}
		if sum.hasTTFA {
			m.ttfa.Observe(sum.ttfa.Seconds())
		}
		ev := sess.log.Info().Str("event", "turn").Str("turn", e.Turn).Str("status", sum.status).Int("tokens", sum.tokens).
			Float64("ttft_ms", pipeline.Millis(sum.ttft)).Float64("e2el_ms", pipeline.Millis(sum.e2e))
		if sum.hasTPOT {
			ev = ev.Float64("tpot_ms", pipeline.Millis(sum.tpot))
		}
		if sum.hasTTFA {
			ev = ev.Float64("ttfa_ms", pipeline.Millis(sum.ttfa))
		}
		ev.Float64("speech_ms", pipeline.Millis(sum.speech)).Int("glitches", sum.gaps.Glitches).
			Int("interruptions", sum.gaps.Interruptions).Float64("underrun_ms", pipeline.Millis(sum.gaps.Silence)).Msg("turn")
		msg := eventMessage{Type: "turn", Session: sess.id, Turn: e.Turn, Status: sum.status, Tokens: sum.tokens,
			AtMs: pipeline.Millis(e.At), TTFTMs: pipeline.Millis(sum.ttft), E2ELMs: pipeline.Millis(sum.e2e),
			SpeechMs: pipeline.Millis(sum.speech), Glitches: ptr(sum.gaps.Glitches), Interruptions: ptr(sum.gaps.Interruptions),
			UnderrunMs: pipeline.Millis(sum.gaps.Silence), ToolSilences: sum.gaps.ToolSilences,
			ToolSilenceMs: pipeline.Millis(sum.gaps.ToolSilence), UnixNs: begin.Add(e.At).UnixNano()}
		if sum.hasTPOT {
			msg.TPOTMs = ptr(pipeline.Millis(sum.tpot))
		}
		if sum.hasTTFA {
			msg.TTFAMs = ptr(pipeline.Millis(sum.ttfa))
		}
		sess.publish(msg)
		if on := sess.srv.opts.OnTurn; on != nil {
			on(done)
		}
	default:
		sess.mu.Unlock()
	}
}

func ptr[T any](v T) *T { return &v }

// clip cuts an underrun at the turn's barge-in: gone when it starts at or
// after the cut, shortened (and graded again) when it runs past it.
func clip(u pipeline.Underrun, ts *turnState, interruption time.Duration) (pipeline.Underrun, bool) {
	if ts == nil || !ts.barged {
		return u, true
	}
	if u.Start >= ts.bargeAt {
		return u, false
	}
	if end := u.Start + u.Duration; end > ts.bargeAt {
		ratio := float64(ts.bargeAt-u.Start) / float64(u.Duration)
		u.Duration = ts.bargeAt - u.Start
		u.Samples = int64(math.Round(float64(u.Samples) * ratio))
		u.Class = pipeline.Glitch
		if u.Duration >= interruption {
			u.Class = pipeline.Interruption
		}
	}
	return u, true
}

// turnSummary is what a finished turn adds to the session and metrics.
type turnSummary struct {
	status                string
	tokens                int
	ttft, e2e, tpot, ttfa time.Duration
	hasTPOT, hasTTFA      bool
	speech                time.Duration
	gaps                  pipeline.Tally // the underruns, cut at a barge-in; the tool-call silences apart
}

func summarize(e pipeline.Event, ts *turnState, interruption time.Duration) turnSummary {
	rec := *e.Record
	if ts != nil && ts.outTok > 0 {
		rec.OutputTokens = ts.outTok
	}
	sum := turnSummary{status: string(rec.Status), tokens: rec.Tokens()}
	if ts != nil && ts.barged {
		sum.status = "barge_in"
	}
	if tm, ok := rec.Timing(); ok {
		sum.ttft, sum.e2e = tm.TTFT, tm.E2E
		if s, ok := rec.TPOTSeconds(); ok {
			sum.tpot, sum.hasTPOT = time.Duration(math.Round(s*1e9)), true
		}
	}
	if p := e.Playout; p != nil {
		if at, ok := p.Started(); ok && (ts == nil || !ts.barged || at < ts.bargeAt) {
			sum.ttfa, sum.hasTTFA = at, true
		}
		sum.speech = p.Speech()
		for _, u := range p.Underruns {
			if u, ok := clip(u, ts, interruption); ok {
				sum.gaps.Add(u)
			}
		}
	}
	return sum
}

// voiceScale is a session's speech durations: the voice model (or the
// configured Durations) scaled by what the app's real synthesizer reported
// in tts facts. Before the first fact it defers to the model.
type voiceScale struct {
	voice         tts.Voice
	base          pipeline.Durations
	bits          atomic.Uint64 // the scale factor, 0 before any fact
	mu            sync.Mutex
	model, actual time.Duration
}

var _ pipeline.Durations = (*voiceScale)(nil)

// Duration returns the audio of text as this session's synthesizer speaks it.
func (v *voiceScale) Duration(text string) (time.Duration, error) {
	f := math.Float64frombits(v.bits.Load())
	if f == 0 {
		if v.base != nil {
			return v.base.Duration(text)
		}
		return 0, nil // the engine keeps the voice model's audio
	}
	d, err := v.model1(text)
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(d) * f), nil
}

func (v *voiceScale) model1(text string) (time.Duration, error) {
	if v.base != nil {
		return v.base.Duration(text)
	}
	return v.voice.Duration(text), nil
}

// Scale limits: a fact far outside them is a unit mistake, not a voice.
const (
	minScale = 0.1
	maxScale = 10
)

// learn adds a tts fact and returns the new scale factor.
func (v *voiceScale) learn(text string, audio time.Duration) (float64, error) {
	d, err := v.model1(text)
	if err != nil {
		return 0, fmt.Errorf("%w: tts fact: %w", ErrRejected, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: tts fact: the text %q has no speech in the voice model", ErrRejected, text)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.model += d
	v.actual += audio
	f := min(maxScale, max(minScale, float64(v.actual)/float64(v.model)))
	v.bits.Store(math.Float64bits(f))
	return f, nil
}
