package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// EventKind names what a Guard event reports.
type EventKind string

// The kinds of Guard events, in the order a turn can raise them.
const (
	// EventStall: the stall tolerance (how much longer the stream can stay
	// silent before the player starves) fell to GuardOptions.WarnTolerance
	// or below. It is raised once until new audio lifts the tolerance above
	// the threshold again.
	EventStall EventKind = "stall_warning"
	// EventDrain: the player has just run out of audio while the turn is
	// still streaming: an underrun has started. Raised when the buffer
	// drains, not when the next token arrives. If the turn then ends with
	// no more speech (the drain was the end of its audio), or new audio is
	// ready at the very instant of the drain, no EventUnderrun follows.
	EventDrain EventKind = "underrun_started"
	// EventUnderrun: an underrun is complete (audio resumed); Underrun is
	// what offline analysis of the same turn reports, except that its
	// Cause is settled from the chunks so far (the turn's usual ITL may
	// still change); EventTurn's Playout holds the final causes.
	EventUnderrun EventKind = "underrun"
	// EventTurn: the turn has ended; Record and Playout hold its summary.
	EventTurn EventKind = "turn"
	// EventSpeech: a speech chunk was handed to the player; Speech says
	// when it plays, Text what it says. Raised when its play time is
	// settled: at its release, or when the player starts. Logged at debug
	// level as a "chunk" event (LogChunk).
	EventSpeech EventKind = "speech"
)

// Event is one thing a Guard saw happen to a turn, delivered to
// GuardOptions.OnEvent and written to the logger.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Turn and Session name the turn (Session may be empty).
	Turn, Session string
	// At is when it happened in engine time, since the turn began: the
	// moment the buffer drained (EventDrain), the underrun's end, when
	// audio resumed (EventUnderrun), the moment the tolerance fell below
	// the threshold (EventStall), or the last chunk's arrival (EventTurn).
	At time.Duration
	// Now is the turn time on the Guard's clock when the event was raised;
	// Now - At is how late it came.
	Now time.Duration
	// Underrun is the gap (EventUnderrun; EventDrain when the gap is
	// already known, else only its Turn and Start are set).
	Underrun Underrun
	// Tolerance is, for EventStall, the stall tolerance left at At.
	Tolerance time.Duration
	// Speech is, for EventSpeech, the chunk; Text its text (tts.TextlessToken
	// for each token without text, and then Textless is true: the text is
	// a stand-in, not words to speak); Gaps the underruns inside it (a
	// synthesizer slower than real time).
	Speech   SpeechChunk
	Text     string
	Textless bool
	Gaps     []Underrun
	// Index is, for EventSpeech, the chunk's index in the turn, from 0.
	Index int
	// LastToken is the index (from 0, in Turn.Chunks) of the last streamed
	// chunk that had arrived when the event was raised; -1 before the
	// first. It is not the chunk an underrun blames (Underrun.Token): a
	// drain is raised while that one is still awaited.
	LastToken int
	// Record is, for EventTurn, the turn as streamed; it stays valid after
	// the callback.
	Record *Turn
	// Playout is, for EventTurn, the turn's finished engine. It is reused
	// after the callback returns: copy what you keep.
	Playout *Playout
}

// GuardOptions configure a Guard. The zero value is usable: real clock,
// no-op logger, no callback, no stall warnings.
type GuardOptions struct {
	// Clock drives the guard's timers (nil: RealClock).
	Clock Clock
	// Logger receives one zerolog event per Event: LogUnderrun for
	// underruns, LogTurn for turn summaries, LogChunk for speech chunks
	// (at debug level), and "underrun_started" and "stall_warning" events.
	// The zero Logger logs nothing.
	Logger zerolog.Logger
	// OnEvent, when set, is called with every event. Calls are never
	// concurrent, and the events of a turn arrive in order. It must not call
	// the Guard, and should return quickly: it holds up the guard.
	OnEvent func(Event)
	// SpeechWanted, when set, is asked before the Guard raises speech
	// chunks (EventSpeech): while it returns false, and the logger writes
	// no debug events, they are skipped, text and all (a server whose
	// listeners for chunks come and go). The other events are raised as
	// ever.
	SpeechWanted func() bool
	// WarnTolerance raises EventStall when the stall tolerance falls to it
	// or below (0: no warnings). The live stall tolerance at time t is
	// DrainsAt - Playout.NextLatency - t: how much longer the stream can
	// stay silent before new text could no longer be synthesized in time
	// (the next chunk's latency: the continuation latency in stream mode). It looks only at the
	// audio in hand; the offline Playout.Tolerance also knows the future.
	WarnTolerance time.Duration
}

// Errors of the Guard.
var (
	// ErrUnknownTurn reports a turn that was never begun, or has ended.
	ErrUnknownTurn = errors.New("unknown turn")
	// ErrTurnOpen reports a Begin for a turn that is already open.
	ErrTurnOpen = errors.New("turn already open")
	// ErrGuardClosed reports a call after Close.
	ErrGuardClosed = errors.New("guard closed")
)

// Guard watches live turns in wall-clock time with the same engine
// (Playout) that offline analysis uses. Begin a turn when its request is
// sent, feed each Chunk as it arrives, and End it when the stream ends; in
// between, a timer fires when the buffered audio runs out (EventDrain),
// when the chunking policy's timer releases text, and when the stall
// tolerance falls below the warning threshold. Every underrun it reports
// is the one offline analysis of the recorded turn reports. A Guard is
// safe for concurrent use across turns.
type Guard struct {
	cfg   Config
	opts  GuardOptions
	clock Clock

	mu     sync.Mutex // guards turns, free, room, closed
	turns  map[string]*guardTurn
	free   []*Playout
	room   int // the chunks of the turn that ended last: the room a new turn's record starts with
	closed bool

	emitMu sync.Mutex // serializes OnEvent and the logger

	logChunks bool // the logger writes debug events: chunks are raised for it
}

// guardTurn is one open turn. Lock order: guardTurn.mu, then Guard.mu or
// Guard.emitMu.
type guardTurn struct {
	mu    sync.Mutex
	rec   Turn
	begin time.Time
	p     *Playout
	// the turn's timer: armed for due (turn time) while armed is set; it
	// is set again (ResetTimer) rather than made anew where the clock
	// allows, so a call can come early or after a Stop (see fire)
	timer  Timer
	due    time.Duration
	armed  bool
	ended  bool
	room   int // the chunks the record makes room for with its first
	spoken int // speech chunks announced (EventSpeech)
	drains int // underruns whose start was announced
	done   int // underruns announced complete
	// open drain: announced at the playhead before its underrun is known
	drainOpen bool
	drainAt   time.Duration
	warned    bool
	toolOpen  bool // the last tool call has not returned (ToolCall, ToolReturned)
	toolFrom  int  // the first chunk after the last tool call
}

// inTool reports whether the turn's stream stopped for a tool call and
// no chunk has come since (t.mu held): the silence ahead is the tool's.
func (t *guardTurn) inTool() bool {
	n := len(t.rec.ToolCalls)
	if n == 0 {
		return false
	}
	k := len(t.rec.Chunks)
	return k == 0 || t.rec.Chunks[k-1].At <= t.rec.ToolCalls[n-1].At
}

// toolQuiet reports whether a silence ahead at now is the last tool
// call's (t.mu held): the stream stopped for it, and the player has not
// yet played speech of the chunks after it. A stall warning then would
// only announce the tool's silence (offline, the stall tolerance at the
// first chunk after a tool call is unbounded).
func (t *guardTurn) toolQuiet(now time.Duration) bool {
	n := len(t.rec.ToolCalls)
	if n == 0 {
		return false
	}
	if t.inTool() {
		return true
	}
	after := t.toolFrom
	for i := t.p.scheduled - 1; i >= 0 && t.p.Chunks[i].Last >= after; i-- {
		if c := &t.p.Chunks[i]; c.First >= after && c.PlayStart <= now {
			return false
		}
	}
	return true
}

// toolReturned ends the open tool call at at (t.mu held).
func (t *guardTurn) toolReturned(at time.Duration) {
	if !t.toolOpen {
		return
	}
	t.toolOpen = false
	tc := &t.rec.ToolCalls[len(t.rec.ToolCalls)-1]
	tc.Duration = max(0, at-tc.At)
	t.p.ToolReturned(at)
}

// NewGuard returns a Guard for the engine configuration cfg.
func NewGuard(cfg Config, opts GuardOptions) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.WarnTolerance < 0 {
		return nil, fmt.Errorf("%w: warn tolerance must not be negative, got %v", ErrConfig, opts.WarnTolerance)
	}
	g := &Guard{cfg: cfg, opts: opts, clock: opts.Clock, turns: map[string]*guardTurn{}}
	ev := opts.Logger.Debug()
	g.logChunks = ev.Enabled()
	ev.Discard()
	if g.clock == nil {
		g.clock = RealClock()
	}
	return g, nil
}

// Config returns the engine configuration the Guard runs.
func (g *Guard) Config() Config { return g.cfg }

// Open returns how many turns are open.
func (g *Guard) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.turns)
}

// Begin opens a turn whose request is being sent now: chunk times count
// from this moment.
func (g *Guard) Begin(turnID, session string) error {
	return g.BeginAt(turnID, session, g.clock.Now())
}

// BeginAt opens a turn that began at start (on the Guard's clock; a start
// in the future is taken as now): chunk times count from that moment. A
// server that learns of turns a little after they began (it reads its
// socket late) passes when the news arrived.
func (g *Guard) BeginAt(turnID, session string, start time.Time) error {
	now := g.clock.Now()
	if start.Before(now) {
		now = start
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrGuardClosed
	}
	if _, ok := g.turns[turnID]; ok {
		return fmt.Errorf("%w: %q", ErrTurnOpen, turnID)
	}
	var p *Playout
	if n := len(g.free); n > 0 {
		p, g.free = g.free[n-1], g.free[:n-1]
		p.Reset(turnID)
	} else {
		var err error
		if p, err = NewPlayout(g.cfg, turnID); err != nil {
			return err
		}
	}
	g.turns[turnID] = &guardTurn{
		rec:   Turn{ID: turnID, Session: session, Start: now},
		begin: now,
		p:     p,
		room:  g.room,
	}
	return nil
}

func (g *Guard) lookup(turnID string) (*guardTurn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrGuardClosed
	}
	t, ok := g.turns[turnID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTurn, turnID)
	}
	return t, nil
}

// streaming returns the open turn turnID locked, or why it cannot take
// more: unknown, or ended.
func (g *Guard) streaming(turnID string) (*guardTurn, error) {
	t, err := g.lookup(turnID)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: %q has ended", ErrUnknownTurn, turnID)
	}
	return t, nil
}

// Chunk feeds the next chunk of a turn, as it arrives. Its time is the
// Guard's clock since Begin, unless c.At is set (positive): replays pass
// the recorded time, so that their underruns are exactly the offline ones.
func (g *Guard) Chunk(turnID string, c Chunk) error {
	return g.chunk(turnID, c, nil)
}

// chunk feeds a chunk (Chunk); step, when not nil, gets the turn's
// backlog before and after it, at the time it was taken.
func (g *Guard) chunk(turnID string, c Chunk, step *BacklogStep) error {
	t, err := g.streaming(turnID)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	clock := g.clock.Now()
	now := clock.Sub(t.begin)
	if c.At <= 0 {
		c.At = now
	}
	if step != nil {
		step.At, step.Before = clock, t.p.Backlog(now)
	}
	if n := len(t.rec.ToolCalls); n > 0 {
		if tc := t.rec.ToolCalls[n-1]; c.At < tc.At {
			return fmt.Errorf("%w: turn %q chunk %d arrives at %v, before the tool call at %v", ErrOrder, turnID, len(t.rec.Chunks), c.At, tc.At)
		}
		t.toolReturned(c.At) // the stream resumed: the tool has returned
	}
	if err := t.p.Push(c); err != nil {
		return err
	}
	if t.rec.Chunks == nil && t.room > 0 {
		// a Guard's turns are much alike: one allocation for the record,
		// not one at each doubling (it is the turn's own: it outlives it)
		t.rec.Chunks = make([]Chunk, 0, t.room)
	}
	t.rec.Chunks = append(t.rec.Chunks, c)
	g.process(t, now)
	g.arm(t, now)
	if step != nil {
		step.After = t.p.Backlog(now)
	}
	return nil
}

// ToolCall notes that a turn's LLM stream stopped for a tool call, now
// (or at tc.At when it is positive: replays pass the recorded time), as
// Playout.ToolCall plays it: the policy lets go of what it holds, and the
// silence the call causes is an underrun of CauseTool (EventDrain's
// Underrun says so when the buffer drains). No stall warning is raised
// from then until the next chunk. ToolReturned, or the next chunk, ends
// the call.
func (g *Guard) ToolCall(turnID string, tc ToolCall) error {
	t, err := g.streaming(turnID)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	now := g.clock.Now().Sub(t.begin)
	if tc.At <= 0 {
		tc.At = now
	}
	t.toolReturned(tc.At)
	tc.Duration = 0
	if err := t.p.ToolCall(tc); err != nil {
		return err
	}
	t.rec.ToolCalls = append(t.rec.ToolCalls, tc)
	t.toolOpen, t.toolFrom = true, len(t.rec.Chunks)
	t.warned = false
	g.process(t, now)
	g.arm(t, now)
	return nil
}

// ToolReturned notes that the turn's open tool call returned, now (or at
// at when it is positive). Without it the next chunk's arrival ends the
// call.
func (g *Guard) ToolReturned(turnID string, at time.Duration) error {
	t, err := g.streaming(turnID)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	if !t.toolOpen {
		return fmt.Errorf("%w: %q has no tool call running", ErrOrder, turnID)
	}
	if at <= 0 {
		at = g.clock.Now().Sub(t.begin)
	}
	t.toolReturned(at)
	return nil
}

// End closes a turn with its status. Underruns not yet announced are
// raised at once, then the turn summary (EventTurn).
func (g *Guard) End(turnID string, status Status) error {
	t, err := g.lookup(turnID)
	if err != nil {
		return err
	}
	return g.end(t, status, nil)
}

// EndTurn closes turn t.ID as End does, with t's status, and carries t's
// error text and output tokens (a server's usage count), which a recorder
// knows only at the end, and the model and operation of its request, into
// the turn summary: EventTurn's Record is then
// the turn as it was recorded, and reports and sinks account it as they
// would the recorded turn, without playing it again.
func (g *Guard) EndTurn(t *Turn) error {
	gt, err := g.lookup(t.ID)
	if err != nil {
		return err
	}
	return g.end(gt, t.Status, t)
}

// end closes t with status, and what recorded (nil: nothing) knows of it.
func (g *Guard) end(t *guardTurn, status Status, recorded *Turn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return fmt.Errorf("%w: %q has ended", ErrUnknownTurn, t.rec.ID)
	}
	now := g.clock.Now().Sub(t.begin)
	t.toolReturned(now)
	t.ended = true
	t.armed = false
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.p.End()
	g.process(t, Unbounded)
	t.rec.Status = status
	if recorded != nil {
		t.rec.Error, t.rec.OutputTokens = recorded.Error, recorded.OutputTokens
		t.rec.Model, t.rec.Operation = recorded.Model, recorded.Operation
	}
	at := time.Duration(0)
	if n := len(t.rec.Chunks); n > 0 {
		at = t.rec.Chunks[n-1].At
	}
	g.emit(Event{Kind: EventTurn, Turn: t.rec.ID, Session: t.rec.Session, At: at, Now: now,
		LastToken: len(t.rec.Chunks) - 1, Record: &t.rec, Playout: t.p})
	// the engine waits for the next turn emptied: a huge turn's buffers go
	// now, not when a turn reuses it
	t.p.Trim()
	g.mu.Lock()
	if g.turns[t.rec.ID] == t {
		delete(g.turns, t.rec.ID)
	}
	g.free = append(g.free, t.p)
	g.room = min(len(t.rec.Chunks), maxReused)
	g.mu.Unlock()
	t.p = nil
	return nil
}

// Close stops every timer and ends the turns still open as incomplete
// (each raises its summary). Calls after Close fail with ErrGuardClosed.
func (g *Guard) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	open := make([]*guardTurn, 0, len(g.turns))
	for _, t := range g.turns {
		open = append(open, t)
	}
	g.mu.Unlock()
	for _, t := range open {
		// a concurrent End may have won: that is fine
		_ = g.end(t, StatusIncomplete, nil)
	}
	return nil
}

// fire is the call of turn t's timer. A call can come that is no longer
// wanted: one that was running, or about to run, when the timer was
// stopped (nothing is armed, or the turn has ended), or when it was set
// again, for later (it is early). The first is dropped; the second waits
// on for the time armed. A call for an earlier arming that comes once the
// time now armed has passed does the work of the call for it, which then
// finds nothing armed, or later.
func (g *Guard) fire(t *guardTurn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || !t.armed {
		return
	}
	now := g.clock.Now().Sub(t.begin)
	if now < t.due {
		g.schedule(t, t.due-now)
		return
	}
	t.armed = false
	t.p.Advance(now)
	g.process(t, now)
	g.arm(t, now)
}

// tolerance is the stall tolerance at time now: how much longer the
// stream can stay silent before the player starves, given that new text
// needs the next chunk's latency before its first audio. ok is false while the
// player has not started.
func (g *Guard) tolerance(t *guardTurn, now time.Duration) (time.Duration, bool) {
	d, ok := t.p.DrainsAt()
	if !ok {
		return 0, false
	}
	return d - t.p.NextLatency() - now, true
}

// process raises every event due by now (t.mu held).
func (g *Guard) process(t *guardTurn, now time.Duration) {
	p := t.p
	us := p.Underruns
	last := len(t.rec.Chunks) - 1
	report := now
	if now == Unbounded {
		report = g.clock.Now().Sub(t.begin)
	}
	if g.opts.OnEvent != nil || g.logChunks {
		if !g.logChunks && g.opts.SpeechWanted != nil && t.spoken < p.scheduled && !g.opts.SpeechWanted() {
			t.spoken = p.scheduled // nobody wants these
		}
		for ; t.spoken < p.scheduled; t.spoken++ {
			c := p.Chunks[t.spoken]
			var gaps []Underrun
			for _, u := range us {
				if u.Chunk == t.spoken && u.Start >= c.PlayStart && u.Start < c.PlayEnd {
					gaps = append(gaps, u)
				}
			}
			g.emit(Event{Kind: EventSpeech, Turn: t.rec.ID, Session: t.rec.Session, At: c.Release, Now: report,
				LastToken: last, Speech: c, Text: p.Text(c), Textless: p.Textless(c), Gaps: gaps, Index: t.spoken})
		}
	}
	if g.opts.WarnTolerance > 0 && !t.ended && !t.toolQuiet(now) {
		if tol, ok := g.tolerance(t, now); ok {
			switch {
			case tol > g.opts.WarnTolerance:
				t.warned = false
			case !t.warned:
				t.warned = true
				at := now
				if last >= 0 {
					// it fell below at the threshold, unless a chunk
					// arrived with less already
					at = max(now-(g.opts.WarnTolerance-tol), t.rec.Chunks[last].At)
				}
				g.emit(Event{Kind: EventStall, Turn: t.rec.ID, Session: t.rec.Session,
					At: at, Now: report, Tolerance: max(0, tol), LastToken: last})
			}
		}
	}
	for {
		switch {
		case t.done < t.drains && end(us[t.done]) <= now:
			g.emit(Event{Kind: EventUnderrun, Turn: t.rec.ID, Session: t.rec.Session,
				At: end(us[t.done]), Now: report, Underrun: us[t.done], LastToken: last})
			t.done++
			continue
		case t.drains < len(us) && us[t.drains].Start <= now:
			u := us[t.drains]
			if t.drainOpen && u.Start == t.drainAt {
				t.drainOpen = false // announced when the buffer drained
			} else {
				g.emit(Event{Kind: EventDrain, Turn: t.rec.ID, Session: t.rec.Session,
					At: u.Start, Now: report, Underrun: u, LastToken: last})
			}
			t.drains++
			continue
		}
		break
	}
	d, ok := p.DrainsAt()
	if t.drainOpen && (!ok || d != t.drainAt) {
		// new audio reached the player before the announced drain became a
		// gap (a chunk carrying an earlier At), or the turn ended
		t.drainOpen = false
	}
	if ok && d <= now && !t.drainOpen && t.drains == len(us) {
		t.drainOpen, t.drainAt = true, d
		u := Underrun{Turn: t.rec.ID, Start: d, StartSample: p.samples(d)}
		if t.inTool() {
			u.Cause = CauseTool // the stream stopped for it: the silence is the tool's
		}
		g.emit(Event{Kind: EventDrain, Turn: t.rec.ID, Session: t.rec.Session,
			At: d, Now: report, Underrun: u, LastToken: last})
	}
}

func end(u Underrun) time.Duration { return u.Start + u.Duration }

// arm sets the turn's timer for the next moment something can happen
// (t.mu held).
func (g *Guard) arm(t *guardTurn, now time.Duration) {
	next := Unbounded
	us := t.p.Underruns
	if t.done < len(us) {
		next = min(next, end(us[t.done]))
	}
	if t.drains < len(us) {
		next = min(next, us[t.drains].Start)
	}
	if d, ok := t.p.DrainsAt(); ok && !t.drainOpen {
		next = min(next, d)
		if g.opts.WarnTolerance > 0 && !t.warned && !t.toolQuiet(now) {
			next = min(next, d-t.p.NextLatency()-g.opts.WarnTolerance)
		}
	}
	if d, ok := t.p.Deadline(); ok {
		next = min(next, d)
	}
	if next == Unbounded {
		t.armed = false
		if t.timer != nil {
			t.timer.Stop()
		}
		return
	}
	t.armed, t.due = true, next
	g.schedule(t, max(0, next-now))
}

// schedule has the turn's timer call fire in d (t.mu held): the timer is
// set again where the clock allows (ResetTimer), else a new one replaces
// it.
func (g *Guard) schedule(t *guardTurn, d time.Duration) {
	if r, ok := t.timer.(ResetTimer); ok {
		r.Reset(d)
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer = g.clock.AfterFunc(d, func() { g.fire(t) })
}

// emit delivers an event to the callback and the logger.
func (g *Guard) emit(e Event) {
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	if g.opts.OnEvent != nil {
		g.opts.OnEvent(e)
	}
	log := g.opts.Logger
	switch e.Kind {
	case EventUnderrun:
		LogUnderrun(log, e.Underrun)
	case EventTurn:
		LogTurn(log, e.Record, e.Playout)
	case EventDrain:
		ev := log.Warn().Str("event", string(EventDrain)).Str("turn", e.Turn)
		if e.Session != "" {
			ev = ev.Str("session", e.Session)
		}
		ev.Float64("start_ms", Millis(e.At)).Float64("late_ms", Millis(e.Now-e.At)).
			Int("last_token", e.LastToken).Msg(string(EventDrain))
	case EventSpeech:
		if g.logChunks {
			LogChunk(log, e.ChunkReport())
		}
	case EventStall:
		ev := log.Warn().Str("event", string(EventStall)).Str("turn", e.Turn)
		if e.Session != "" {
			ev = ev.Str("session", e.Session)
		}
		ev.Float64("at_ms", Millis(e.At)).Float64("tolerance_ms", Millis(e.Tolerance)).
			Int("last_token", e.LastToken).Msg(string(EventStall))
	}
}

// Buffered returns the audio an open turn has released but not yet
// played, now on the Guard's clock (Playout.Buffered); ok is false for a
// turn that is not open.
func (g *Guard) Buffered(turnID string) (d time.Duration, ok bool) {
	t, err := g.lookup(turnID)
	if err != nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.p == nil {
		return 0, false
	}
	return t.p.Buffered(g.clock.Now().Sub(t.begin)), true
}
