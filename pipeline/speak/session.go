package speak

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// SessionOptions configure a Session.
type SessionOptions struct {
	// Pipeline speaks the turns (required).
	Pipeline *Pipeline
	// Guard predicts the same turns in wall-clock time, from the same
	// token arrivals (required; a pipeline.Guard on pipeline.RealClock).
	Guard *pipeline.Guard
	// Recorder, when set, records every turn as it streamed, the
	// synthesizer's timings (RecordTiming) and what was heard.
	Recorder *Recorder
	// Rate is the player's sample rate, for the heard records.
	Rate int
	// Tolerance is Compare's: how far a heard gap may lie from the
	// predicted one's to be the same gap (0: DefaultTolerance).
	Tolerance time.Duration
}

// Session speaks turns one after another through a Pipeline while a guard
// predicts them, and sets each turn heard beside the engine's prediction
// (Compare): the run behind `underrun speak`. Its methods may be called
// from the pipeline's goroutines (RecordTiming) and the caller's at once.
type Session struct {
	opts SessionOptions

	mu      sync.Mutex
	err     error // the first recording error
	cmps    []*Comparison
	results []*Result
}

// NewSession returns a Session for opts.
func NewSession(opts SessionOptions) (*Session, error) {
	if opts.Pipeline == nil || opts.Guard == nil {
		return nil, fmt.Errorf("%w: a session needs a pipeline and a guard", ErrConfig)
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = DefaultTolerance
	}
	return &Session{opts: opts}, nil
}

// fail keeps the first recording error.
func (s *Session) fail(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// Err returns the first error the recording met, if any: the run went on
// without waiting for it.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// RecordTiming records a speech chunk's measured timing (Config.OnChunk's
// ChunkDone), where the session records.
func (s *Session) RecordTiming(turn string, t Timing) {
	if s.opts.Recorder != nil {
		s.fail(s.opts.Recorder.WriteTiming(turn, t))
	}
}

// Heard returns what every turn heard to its end was, in order, and its
// comparison with the prediction.
func (s *Session) Heard() ([]*Result, []*Comparison) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.results, s.cmps
}

// Report returns the session's comparisons as a Report.
func (s *Session) Report() *Report {
	results, cmps := s.Heard()
	cfg := s.opts.Pipeline.Config()
	return &Report{Synthesizer: cfg.Synthesizer.Name(), Mode: cfg.Engine.Synth.Timing(), Tolerance: s.opts.Tolerance,
		Results: results, Comparisons: cmps}
}

// SessionTurn is one turn of a Session being spoken.
type SessionTurn struct {
	s  *Session
	t  *Turn
	id string
}

// Begin opens turn id of session, its request sent at begin, in the
// pipeline and the guard.
func (s *Session) Begin(ctx context.Context, id, session string, begin time.Time) (*SessionTurn, error) {
	t, err := s.opts.Pipeline.Begin(ctx, id, session, begin)
	if err != nil {
		return nil, err
	}
	if err := s.opts.Guard.BeginAt(id, session, begin); err != nil {
		t.Abort()
		return nil, err
	}
	if s.opts.Recorder != nil {
		s.fail(s.opts.Recorder.BeginTurn(&pipeline.Turn{ID: id, Session: session, Start: begin}))
	}
	return &SessionTurn{s: s, t: t, id: id}, nil
}

// ID is the turn's id.
func (st *SessionTurn) ID() string { return st.id }

// Push feeds a chunk to the pipeline and the guard.
func (st *SessionTurn) Push(c pipeline.Chunk) error {
	spoken, err := st.t.Push(c)
	if err != nil {
		return err
	}
	if err := st.s.opts.Guard.Chunk(st.id, spoken); err != nil {
		return err
	}
	if rec := st.s.opts.Recorder; rec != nil {
		st.s.fail(rec.WriteChunk(st.id, spoken))
	}
	return nil
}

// ToolCall notes a tool call of the turn at tc.At: the pipeline ends the
// reply there (Turn.ToolCall), the guard hears the silence as the tool's
// (Guard.ToolCall), and the recording keeps the call as tc gives it.
func (st *SessionTurn) ToolCall(tc pipeline.ToolCall) error {
	if err := st.t.ToolCall(tc); err != nil {
		return err
	}
	if err := st.s.opts.Guard.ToolCall(st.id, tc); err != nil {
		return err
	}
	if rec := st.s.opts.Recorder; rec != nil {
		st.s.fail(rec.WriteToolCall(st.id, tc))
	}
	return nil
}

// ToolReturned notes that the turn's tool call returned at at (from the
// turn's beginning; 0: now): the guard warns of stalls again from the
// speech after it (Guard.ToolReturned).
func (st *SessionTurn) ToolReturned(at time.Duration) error {
	return st.s.opts.Guard.ToolReturned(st.id, at)
}

// step feeds one step of recorded turn t (Turn.Steps).
func (st *SessionTurn) step(t *pipeline.Turn, step pipeline.TurnStep) error {
	switch {
	case step.Tool < 0:
		ch := t.Chunks[step.Chunk]
		ch.At = max(ch.At, 1) // a chunk at the very request: At must be set
		return st.Push(ch)
	case step.Return:
		return st.ToolReturned(max(step.At, 1))
	default:
		return st.ToolCall(t.ToolCalls[step.Tool])
	}
}

// End closes the turn's stream.
func (st *SessionTurn) End(status pipeline.Status, errText string, outputTokens int) error {
	if err := st.t.End(status, errText); err != nil {
		return err
	}
	if err := st.s.opts.Guard.End(st.id, status); err != nil && !errors.Is(err, pipeline.ErrUnknownTurn) {
		return err
	}
	if rec := st.s.opts.Recorder; rec != nil {
		st.s.fail(rec.EndTurn(&pipeline.Turn{ID: st.id, Status: status, Error: errText, OutputTokens: outputTokens}))
	}
	return nil
}

// Abort drops the turn (Turn.Abort).
func (st *SessionTurn) Abort() { st.t.Abort() }

// Heard waits until the turn was played out, compares what was heard
// with the prediction and keeps both.
func (st *SessionTurn) Heard(ctx context.Context) (*Result, *Comparison, error) {
	res, err := st.t.Wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := st.s
	cmp, err := Compare(s.opts.Pipeline.Config().Engine, res, s.opts.Tolerance)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.results = append(s.results, res)
	s.cmps = append(s.cmps, cmp)
	s.mu.Unlock()
	if rec := s.opts.Recorder; rec != nil {
		s.fail(rec.WriteHeard(res.Heard, s.opts.Rate))
	}
	return res, cmp, nil
}

// TurnError is a turn the pipeline or the guard refused (a bad chunk, a
// turn id used twice): the input's fault, not the run's.
type TurnError struct {
	Turn string
	Err  error
}

func (e *TurnError) Error() string { return fmt.Sprintf("turn %q: %v", e.Turn, e.Err) }

// Unwrap returns the refusal.
func (e *TurnError) Unwrap() error { return e.Err }

// Replay speaks recorded turns one after another, each chunk at its
// recorded time since its turn began, pause between turns, and calls
// heard (if set) as each turn was heard to its end; a refused turn is a
// *TurnError.
func (s *Session) Replay(ctx context.Context, turns []*pipeline.Turn, pause time.Duration, heard func(st *SessionTurn, res *Result, cmp *Comparison) error) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(until time.Time) error { return pipeline.SleepUntil(ctx, timer, until) }
	for i, t := range turns {
		if i > 0 && pause > 0 {
			if err := wait(time.Now().Add(pause)); err != nil {
				return err
			}
		}
		begin := time.Now()
		st, err := s.Begin(ctx, t.ID, t.Session, begin)
		if err != nil {
			return &TurnError{Turn: t.ID, Err: err}
		}
		for step := range t.Steps() {
			if err := wait(begin.Add(step.At)); err != nil {
				st.Abort()
				return err
			}
			if err := st.step(t, step); err != nil {
				st.Abort()
				return &TurnError{Turn: t.ID, Err: err}
			}
		}
		status := t.Status
		if status == "" {
			status = pipeline.StatusOK
		}
		if err := st.End(status, t.Error, t.OutputTokens); err != nil {
			return err
		}
		res, cmp, err := st.Heard(ctx)
		if err != nil {
			return err
		}
		if heard != nil {
			if err := heard(st, res, cmp); err != nil {
				return err
			}
		}
	}
	return nil
}

// Feed takes a turn into a Session as a client streams it: a trace
// writer (BeginTurn, WriteChunk, EndTurn, as openai.Client.Trace takes),
// one turn at a time. A refusal of the pipeline or the guard is kept
// (Err), not returned to the writer, except at BeginTurn.
type Feed struct {
	s   *Session
	ctx context.Context
	// OnStreamError, when set, is told of a turn that ended with
	// pipeline.StatusError, with its error text.
	OnStreamError func(turn, text string)
	turn          *SessionTurn
	err           error
}

// Feed returns a Feed of turns into s.
func (s *Session) Feed(ctx context.Context) *Feed { return &Feed{s: s, ctx: ctx} }

// BeginTurn opens t in the session.
func (f *Feed) BeginTurn(t *pipeline.Turn) error {
	st, err := f.s.Begin(f.ctx, t.ID, t.Session, t.Start)
	if err != nil {
		f.err = err
		return err
	}
	f.turn = st
	return nil
}

// WriteChunk pushes a chunk of the open turn.
func (f *Feed) WriteChunk(turn string, c pipeline.Chunk) error {
	if f.turn == nil {
		return nil
	}
	if err := f.turn.Push(c); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

// EndTurn ends the open turn's stream.
func (f *Feed) EndTurn(t *pipeline.Turn) error {
	if f.turn == nil {
		return nil
	}
	if t.Status == pipeline.StatusError && f.OnStreamError != nil {
		f.OnStreamError(t.ID, t.Error)
	}
	if err := f.turn.End(t.Status, t.Error, t.OutputTokens); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

// Turn returns the turn the feed took and forgets it (nil: none began).
func (f *Feed) Turn() *SessionTurn {
	t := f.turn
	f.turn = nil
	return t
}

// Err returns the refusal met since the last Reset, if any.
func (f *Feed) Err() error { return f.err }

// Reset forgets the last refusal, before the next turn.
func (f *Feed) Reset() { f.err = nil }
