package player

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// DefaultPeriod is how often Run drains the buffer: the sink takes the
// samples due since its last turn, each at its own due time.
const DefaultPeriod = 5 * time.Millisecond

// Gap is a moment the player played silence while its turn's speech was
// not finished: an underrun as the listener heard it.
type Gap struct {
	// Start is when the silence began, since the turn began; Duration is
	// how long it lasted.
	Start, Duration time.Duration
	// StartSample and Samples are the same at the player's rate, counted
	// from the turn's beginning.
	StartSample, Samples int64
	// Chunk is the tag of the audio that ended the silence (Add's chunk):
	// the speech chunk that came late.
	Chunk int
	// Played is where the gap begins in what the player played: samples
	// since the turn's first (Heard.FirstSample).
	Played int64
}

// End returns when the gap ended.
func (g Gap) End() time.Duration { return g.Start + g.Duration }

// Span is a stretch of a turn's time: from Start (since the turn began)
// for Duration.
type Span struct {
	Start, Duration time.Duration
}

// End returns when the span ended.
func (s Span) End() time.Duration { return s.Start + s.Duration }

// Heard is what the player played of one turn.
type Heard struct {
	// Turn names the turn; Begin is when it began (its request was sent).
	Turn  string
	Begin time.Time
	// Started is whether any audio played; Start is when the first sample
	// played, since Begin (the start-up delay, not an underrun), and End
	// when the last one ended.
	Started    bool
	Start, End time.Duration
	// FirstSample is where the turn's first audio lies in all the player
	// played (Options.Record's samples, from 0).
	FirstSample int64
	// Speech is the audio played, Samples the same in samples.
	Speech  time.Duration
	Samples int64
	// Gaps are the underruns, in time order.
	Gaps []Gap
	// Fillers are the stretches of an app's filler the player played
	// inside the turn, in time order: a phrase or sound it plays while a
	// tool runs, heard but not the turn's speech (not in Speech). What they
	// play over is not a gap.
	Fillers []Span
	// Late is how much later than its due time the buffer was drained, at
	// most (Run's scheduling on a busy machine; a sound card's own buffer
	// for Streamer): how long after the fact a gap was known.
	Late time.Duration
	// Pull is, for a sound card (Streamer), the most audio it asked for at
	// once: a gap shorter than that can fall between two of its asks, and
	// a gap's end is known to within it. 0 for Run, which plays each
	// sample at its own time.
	Pull time.Duration
}

// Silence returns the total length of the gaps.
func (h Heard) Silence() time.Duration {
	var d time.Duration
	for _, g := range h.Gaps {
		d += g.Duration
	}
	return d
}

// Options configure a Player. The zero value starts each turn at its
// first audio and uses the wall clock.
type Options struct {
	// Preroll holds a turn's start until this much of its audio has
	// arrived (or all of it, if shorter), as the playout engine's
	// Config.Preroll.
	Preroll time.Duration
	// OnGap, when set, is called when a gap starts (GapStarted: only
	// Start, StartSample and Chunk -1 are known), when it ends (GapEnded),
	// and when the turn's speech turned out to be over instead
	// (GapCancelled: the silence after the last audio is no underrun).
	// Calls come from the goroutine draining the buffer, never
	// concurrently; they must return quickly and not call the Player.
	OnGap func(turn string, g Gap, e GapEvent)
	// Record, when set, receives every sample played, silence included, in
	// order: what the listener heard (a WAV file). It is called from the
	// goroutine draining the buffer and must not keep the slice.
	Record func(samples []float32)
	// Transport, when set, sends each turn's audio to the listener as
	// that output transport does (tts.Sender): in its frames, a partial
	// frame held for the next audio, padding, the listener's clock and a
	// drifting sender; the gaps are then what the listener hears through
	// it, as the playout engine's Config.Transport predicts them. A
	// segment ends at Finish, and at EndSegment where the synthesizer
	// takes a request per chunk.
	Transport tts.Transport
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// GapEvent says what happened to a gap (Options.OnGap).
type GapEvent int

// The gap events.
const (
	GapStarted GapEvent = iota
	GapEnded
	GapCancelled
)

// Errors of the Player.
var (
	// ErrClosed reports a call after Close.
	ErrClosed = errors.New("player closed")
	// ErrTurn reports a turn that is unknown, already begun, or already
	// finished.
	ErrTurn = errors.New("player turn")
)

// Player plays turns one after another: a turn's audio plays once the
// turn before it has been played out. Begin a turn when its request is
// sent, Add its audio as it arrives, Finish it when no more will come,
// and Wait for what was heard. One drain drives it: Run or Streamer. A
// Player is safe for concurrent use.
type Player struct {
	rate int
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	turns   []*turn // not yet played out, in order; turns[0] plays
	byID    map[string]*turn
	origin  time.Time // wall time of sample 0
	started bool      // origin is set
	pos     int64     // samples drained
	// drainedCh is closed, and replaced, whenever samples are drained
	// (WaitDrained waits on it)
	drainedCh chan struct{}
	closed    bool
	late      time.Duration
	pull      time.Duration // the most a card asked for at once
	scratch   []float32
	events    []event
}

type piece struct {
	samples []float32
	at      time.Time
	chunk   int
	pad     int64 // samples of silence the transport sends after it
}

type turn struct {
	id       string
	begin    time.Time
	pieces   []piece // not yet played
	head     int     // samples of pieces[0] already played
	arrived  int     // pieces[:arrived] have arrived by the last due time looked at
	ready    int64   // samples of pieces[:arrived] (before the start)
	finished bool
	finishAt time.Time
	playing  bool
	lastEnd  time.Time // when the last sample played ended
	heard    Heard
	gap      *Gap
	gapFrom  int64 // the gap's first sample
	done     chan struct{}
	err      error
	resample float64 // rate conversion remainder

	// with Options.Transport: the sender, the audio added but not yet
	// sent, in samples and in its sender's time, and the sample before
	// which nothing may play (the padding of the last frame)
	sender    *tts.Sender
	pending   []float32
	added     int64
	addedTime time.Duration
	sentAudio time.Duration
	sentN     int64
	holdUntil int64
}

type event struct {
	turn string
	gap  Gap
	kind GapEvent
}

// New returns a Player at rate samples per second.
func New(rate int, opts Options) (*Player, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("player: sample rate %d, want a positive rate", rate)
	}
	if opts.Preroll < 0 {
		return nil, fmt.Errorf("player: pre-roll %v, want 0 or more", opts.Preroll)
	}
	p := &Player{rate: rate, opts: opts, now: opts.Now, byID: map[string]*turn{}}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Origin returns when sample 0 was due (the zero time before the drain
// starts): sample k of what was played (Options.Record) was due k sample
// periods later.
func (p *Player) Origin() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.origin
}

// WaitDrained blocks until n samples have been drained (the drain is
// running: a sound card has started to take audio), ctx ends, or the
// player is closed.
func (p *Player) WaitDrained(ctx context.Context, n int64) error {
	p.mu.Lock()
	if p.drainedCh == nil {
		p.drainedCh = make(chan struct{})
	}
	for p.pos < n && !p.closed {
		ch := p.drainedCh
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return nil
}

// Rate returns the player's sample rate.
func (p *Player) Rate() int { return p.rate }

// Begin opens turn id, whose request was sent at begin.
func (p *Player) Begin(id string, begin time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if _, ok := p.byID[id]; ok {
		return fmt.Errorf("%w %q: begun twice", ErrTurn, id)
	}
	t := &turn{id: id, begin: begin, done: make(chan struct{}), heard: Heard{Turn: id, Begin: begin}}
	if !p.opts.Transport.None() {
		t.sender = p.opts.Transport.NewSender(func(f tts.Sent) { p.sent(t, f) })
	}
	p.turns = append(p.turns, t)
	p.byID[id] = t
	return nil
}

// Add appends audio of turn id that arrived at at, tagged chunk (the
// speech chunk it says, reported with the gap it ends), and returns when
// the player has it: at, or now if that is later (the audio can play no
// sooner than it is in the buffer), or when the audio before it came.
// Audio at another rate than the player's is resampled.
func (p *Player) Add(id string, a tts.Audio, at time.Time, chunk int) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := p.open(id)
	if err != nil {
		return at, err
	}
	if now := p.now(); now.After(at) {
		at = now
	}
	samples := a.Samples
	if a.Rate != p.rate && len(samples) > 0 {
		if a.Rate <= 0 {
			return at, fmt.Errorf("%w %q: audio at rate %d", ErrTurn, id, a.Rate)
		}
		exact := float64(len(samples))*float64(p.rate)/float64(a.Rate) + t.resample
		n := int(math.Floor(exact))
		t.resample = exact - float64(n)
		samples = tts.Fit(a, n)
	}
	if n := len(t.pieces); n > 0 && at.Before(t.pieces[n-1].at) {
		at = t.pieces[n-1].at // arrivals are in order
	}
	if len(samples) == 0 {
		return at, nil
	}
	if t.sender != nil {
		t.pending = append(t.pending, samples...)
		t.added += int64(len(samples))
		was := t.addedTime
		t.addedTime = p.period(t.added)
		t.sender.Add(t.addedTime-was, at.Sub(t.begin), chunk)
		return at, nil
	}
	t.pieces = append(t.pieces, piece{samples: samples, at: at, chunk: chunk})
	return at, nil
}

// sent takes a frame the transport sent off turn t's pending audio (mu
// held).
func (p *Player) sent(t *turn, f tts.Sent) {
	t.sentAudio += f.Audio
	n := int64(math.Round(t.sentAudio.Seconds()*float64(p.rate))) - t.sentN
	n = min(max(n, 0), int64(len(t.pending)))
	t.sentN += n
	pad := int64(math.Round((f.Length - f.Audio).Seconds() * float64(p.rate)))
	t.pieces = append(t.pieces, piece{samples: t.pending[:n:n], at: t.begin.Add(f.At), chunk: f.Chunk, pad: pad})
	t.pending = t.pending[n:]
}

// EndSegment ends turn id's synthesis segment with its latest audio: the
// transport sends the partial frame it held (Options.Transport; a
// synthesizer that takes a request per chunk ends a segment with each).
func (p *Player) EndSegment(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := p.open(id)
	if err != nil || t.sender == nil {
		return err
	}
	t.sender.End(0)
	return nil
}

// Finish says that turn id has no more audio, as of at.
func (p *Player) Finish(id string, at time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, err := p.open(id)
	if err != nil {
		return err
	}
	if t.sender != nil {
		t.sender.End(0)
		t.pending = nil
	}
	t.finished, t.finishAt = true, at
	return nil
}

func (p *Player) open(id string) (*turn, error) {
	if p.closed {
		return nil, ErrClosed
	}
	t, ok := p.byID[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q: not begun", ErrTurn, id)
	case t.finished:
		return nil, fmt.Errorf("%w %q: already finished", ErrTurn, id)
	}
	return t, nil
}

// Wait blocks until turn id has been played out (or ctx ends, or the
// player is closed) and returns what was heard.
func (p *Player) Wait(ctx context.Context, id string) (Heard, error) {
	p.mu.Lock()
	t, ok := p.byID[id]
	p.mu.Unlock()
	if !ok {
		return Heard{}, fmt.Errorf("%w %q: not begun", ErrTurn, id)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return Heard{}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byID, id)
	return t.heard, t.err
}

// Close stops the player: turns not played out end with ErrClosed.
func (p *Player) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.drainedCh != nil {
		close(p.drainedCh)
		p.drainedCh = nil
	}
	for _, t := range p.turns {
		t.err = ErrClosed
		close(t.done)
	}
	p.turns = nil
}

// sampleTime is when sample k is due.
func (p *Player) sampleTime(k int64) time.Time {
	return p.origin.Add(time.Duration(math.Round(float64(k) * float64(time.Second) / float64(p.rate))))
}

// period returns the length of n samples.
func (p *Player) period(n int64) time.Duration {
	return time.Duration(math.Round(float64(n) * float64(time.Second) / float64(p.rate)))
}

// render drains len(out) samples (mu held): sample j is due at due(j) and
// may use audio that arrived by avail(due).
func (p *Player) render(out []float32, due func(j int) time.Time, avail func(due time.Time) time.Time) {
	for j := range out {
		d := due(j)
		out[j] = p.next(p.pos+int64(j), d, avail(d))
	}
	p.pos += int64(len(out))
}

// next returns sample k, due at due, with the audio that arrived by by.
func (p *Player) next(k int64, due, by time.Time) float32 {
	for len(p.turns) > 0 {
		t := p.turns[0]
		if !t.playing {
			if !p.ready(t, by) {
				if t.finished && !t.finishAt.After(by) && len(t.pieces) == 0 {
					p.endTurn(t, due) // a turn with no audio at all
					continue
				}
				return 0 // start-up, or idle: not an underrun
			}
			t.playing = true
			t.heard.Started = true
			t.heard.Start = due.Sub(t.begin)
			t.heard.FirstSample = k
		}
		if t.sender != nil {
			if d, ok := t.sender.Deadline(); ok && !t.begin.Add(d).After(by) {
				t.sender.Expire() // the framework sends what it held, for silence
			}
		}
		if len(t.pieces) > 0 && !t.pieces[0].at.After(by) && p.onClock(t, k) {
			pc := &t.pieces[0]
			v := pc.samples[t.head]
			if t.gap != nil {
				p.closeGap(t, k, pc.chunk)
			}
			t.head++
			t.heard.Samples++
			t.lastEnd = due.Add(p.period(1))
			if t.head == len(pc.samples) {
				t.holdUntil = k + 1 + pc.pad
				t.pieces[0] = piece{}
				t.pieces = t.pieces[1:]
				t.head = 0
				t.arrived = max(0, t.arrived-1)
			}
			return v
		}
		if t.finished && !t.finishAt.After(by) && len(t.pieces) == 0 {
			if t.gap != nil {
				// the speech ended while the player waited: silence after the
				// last audio is no underrun
				p.events = append(p.events, event{turn: t.id, gap: *t.gap, kind: GapCancelled})
				t.gap = nil
			}
			p.endTurn(t, due)
			continue
		}
		if t.gap == nil {
			start := due.Sub(t.begin)
			t.gap = &Gap{Start: start, StartSample: int64(math.Round(start.Seconds() * float64(p.rate))), Chunk: -1, Played: k - t.heard.FirstSample}
			t.gapFrom = k
			p.events = append(p.events, event{turn: t.id, gap: *t.gap, kind: GapStarted})
		}
		return 0
	}
	return 0
}

// onClock reports whether turn t's next audio may play at sample k: not
// within the padding of the last frame, and, after a gap, only on a tick
// of the listener's clock, which runs on from the end of the padding.
func (p *Player) onClock(t *turn, k int64) bool {
	if k < t.holdUntil {
		return false
	}
	tick := p.opts.Transport.Tick
	if t.gap == nil || tick <= 0 {
		return true
	}
	n := int64(math.Round(tick.Seconds() * float64(p.rate)))
	from := max(t.gapFrom, t.holdUntil)
	return n <= 1 || (k-from)%n == 0
}

// ready reports whether turn t may start at a sample whose audio is what
// arrived by by.
func (p *Player) ready(t *turn, by time.Time) bool {
	for t.arrived < len(t.pieces) && !t.pieces[t.arrived].at.After(by) {
		t.ready += int64(len(t.pieces[t.arrived].samples))
		t.arrived++
	}
	if t.ready == 0 {
		return false
	}
	need := int64(math.Ceil(p.opts.Preroll.Seconds() * float64(p.rate)))
	if t.ready >= need {
		return true
	}
	// all of a short turn's speech is in
	return t.finished && !t.finishAt.After(by) && t.arrived == len(t.pieces)
}

// closeGap ends turn t's gap before sample k, which plays chunk's audio;
// its length is its samples (a sound card's pulls need not be evenly
// spaced in time).
func (p *Player) closeGap(t *turn, k int64, chunk int) {
	g := *t.gap
	g.Samples = k - t.gapFrom
	g.Duration = p.period(g.Samples)
	g.Chunk = chunk
	t.heard.Gaps = append(t.heard.Gaps, g)
	t.gap = nil
	p.events = append(p.events, event{turn: t.id, gap: g, kind: GapEnded})
}

// endTurn closes turn t, found over at due.
func (p *Player) endTurn(t *turn, due time.Time) {
	if t.heard.Started {
		t.heard.End = t.lastEnd.Sub(t.begin)
	}
	t.heard.Speech = time.Duration(math.Round(float64(t.heard.Samples) * float64(time.Second) / float64(p.rate)))
	t.heard.Late, t.heard.Pull = p.late, p.pull
	p.turns[0] = nil
	p.turns = p.turns[1:]
	close(t.done)
}

// drain renders n samples and returns them.
func (p *Player) drain(n int, due func(j int) time.Time, avail func(due time.Time) time.Time) []float32 {
	if cap(p.scratch) < n {
		p.scratch = make([]float32, n)
	}
	out := p.scratch[:n]
	p.render(out, due, avail)
	if p.drainedCh != nil {
		close(p.drainedCh)
		p.drainedCh = make(chan struct{})
	}
	return out
}

func (p *Player) deliver(out []float32, events []event) {
	for _, e := range events {
		if p.opts.OnGap != nil {
			p.opts.OnGap(e.turn, e.gap, e.kind)
		}
	}
	if p.opts.Record != nil && len(out) > 0 {
		p.opts.Record(out)
	}
}

// Run drains the buffer by the monotonic clock until ctx ends or the
// player is closed: every period it plays the samples due since the last
// time, each sample k due at the start plus k sample periods, using only
// audio that had arrived by its due time. It returns ctx's error, or nil
// after Close.
func (p *Player) Run(ctx context.Context, period time.Duration) error {
	if period <= 0 {
		period = DefaultPeriod
	}
	if err := p.begin(p.now()); err != nil {
		return err
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if !p.advance(p.now()) {
			return nil
		}
	}
}

// begin sets the time of sample 0 for Run.
func (p *Player) begin(origin time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return fmt.Errorf("player: drained already")
	}
	p.started, p.origin = true, origin
	return nil
}

// advance plays the samples due by now; false once the player is closed.
func (p *Player) advance(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	target := int64(math.Floor(now.Sub(p.origin).Seconds() * float64(p.rate)))
	n := int(target - p.pos)
	if n <= 0 {
		return true
	}
	if late := now.Sub(p.sampleTime(p.pos)); late > p.late {
		p.late = late
	}
	from := p.pos
	out := p.drain(n, func(j int) time.Time { return p.sampleTime(from + int64(j)) }, func(due time.Time) time.Time { return due })
	events := p.events
	p.events = nil
	p.deliver(out, events) // under the lock: Record keeps the order
	return true
}

// Stream fills buf with the next samples for a sound card that pulls
// them: a sample uses the audio that had arrived when it was asked for,
// and is timed from then (the card plays it a buffer later). It reports
// false once the player is closed.
func (p *Player) Stream(buf []float32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	now := p.now()
	if !p.started {
		p.started, p.origin = true, now
	}
	// The samples are timed from the moment the card asked for them, one
	// sample period apart: when the player had to have them. The card
	// plays them its buffer's length later (Heard.Late).
	due := func(j int) time.Time { return now.Add(p.period(int64(j))) }
	if ahead := p.period(int64(len(buf))); ahead > p.late {
		p.late = ahead
	}
	p.pull = max(p.pull, p.period(int64(len(buf))))
	out := p.drain(len(buf), due, func(time.Time) time.Time { return now })
	copy(buf, out)
	events := p.events
	p.events = nil
	p.deliver(out, events)
	return true
}
