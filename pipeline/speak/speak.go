package speak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/player"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// Config describes a voice pipeline that runs for real.
type Config struct {
	// Engine is the speech model the run is held against: its chunking
	// policy releases the text (the very chunkers the engine runs), its
	// Synth.Mode says how the synthesizer is driven, and its Preroll
	// starts the player (give Player the same).
	Engine pipeline.Config
	// Synthesizer speaks the chunks; stream mode needs a
	// stream.ContextSynthesizer.
	Synthesizer stream.Synthesizer
	// Player plays the audio; something must drain it (Player.Run or a
	// sound card pulling Player.Stream).
	Player *player.Player
	// OnChunk, when set, is called as each speech chunk goes to the
	// synthesizer, when its first audio arrives, and when its audio is
	// over (Done set, or Err). Calls for a chunk come in that order, from
	// the pipeline's goroutines; they must return quickly.
	OnChunk func(turn string, t Timing, e ChunkEvent)
	// Logger receives a warning for every failed synthesis.
	Logger zerolog.Logger
}

// ChunkEvent says what just happened to a speech chunk (Config.OnChunk).
type ChunkEvent int

// The chunk events, in the order a chunk raises them.
const (
	ChunkSent ChunkEvent = iota
	ChunkAudio
	ChunkDone
)

// Timing is what the synthesizer did with one speech chunk, measured;
// times count from the turn's beginning.
type Timing struct {
	// Index is the chunk's place among the turn's speech chunks (from 0);
	// From and To its bytes of the turn's spoken text; Text the text.
	Index    int           `json:"chunk"`
	From     int           `json:"from"`
	To       int           `json:"to"`
	Text     string        `json:"text"`
	Release  time.Duration `json:"-"` // when the chunking policy released it: the engine's release time
	Sent     time.Duration `json:"-"` // when the synthesizer was given it
	First    time.Duration `json:"-"` // when its first audio reached the player (0: none came)
	Ready    time.Duration `json:"-"` // when that audio could play: after the chunk before it had all arrived
	Done     time.Duration `json:"-"` // when its last audio reached the player
	Audio    time.Duration `json:"-"` // its audio's length
	Samples  int64         `json:"samples"`
	Rate     int           `json:"rate"`
	Err      string        `json:"error,omitempty"` // the synthesis failed; the audio before the failure stands
	HasAudio bool          `json:"-"`
	// Arrivals are the pieces in which the audio came, each at the moment
	// the player could play it.
	Arrivals []pipeline.Arrival `json:"-"`

	over      bool // all its audio is with the player (Turn.over)
	endsReply bool // a tool call ended the reply after it: its end ends the segment
}

// Result is one turn as it was spoken and heard.
type Result struct {
	// Record is the turn as it streamed, with words in place of tokens
	// that carried no text (tokens.Filler), so that what was spoken is in
	// it.
	Record *pipeline.Turn
	// Chunks are the speech chunks the synthesizer was given, in order.
	Chunks []Timing
	// Heard is what the player played.
	Heard player.Heard
	// Errors are the synthesis failures of the turn; it went on.
	Errors []string
}

// ErrConfig reports a pipeline that cannot run as configured.
var ErrConfig = errors.New("voice pipeline")

// Pipeline runs turns through the chunker, the synthesizer and the player.
// It is safe for concurrent use; its turns play one after another.
type Pipeline struct {
	cfg  Config
	mode tts.Mode
}

// New returns a Pipeline for cfg.
func New(cfg Config) (*Pipeline, error) {
	if err := cfg.Engine.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Synthesizer == nil:
		return nil, fmt.Errorf("%w: no synthesizer", ErrConfig)
	case cfg.Player == nil:
		return nil, fmt.Errorf("%w: no player", ErrConfig)
	}
	mode := cfg.Engine.Synth.Timing()
	if _, ok := cfg.Synthesizer.(stream.ContextSynthesizer); mode == tts.ModeStream && !ok {
		return nil, fmt.Errorf("%w: %s takes one request per text, no synthesis context: stream mode needs one (use the request or parallel mode)", ErrConfig, cfg.Synthesizer.Name())
	}
	return &Pipeline{cfg: cfg, mode: mode}, nil
}

// Config returns the pipeline's configuration.
func (p *Pipeline) Config() Config { return p.cfg }

// Turn is one turn running through the pipeline: Push its chunks as they
// arrive, End it when the stream ends, and Wait for what was heard.
type Turn struct {
	p     *Pipeline
	ctx   context.Context
	stop  context.CancelFunc
	begin time.Time

	mu       sync.Mutex
	rec      pipeline.Turn
	chunker  tts.Chunker
	filler   tokens.Filler
	text     []byte
	released int
	lastAt   time.Duration
	timer    *time.Timer
	deadline time.Duration
	armed    bool
	ended    bool
	chunks   []*Timing
	errs     []string
	driver   driver
	done     chan struct{} // the driver has handed all audio to the player
}

// Begin starts turn id of session, whose request was sent at begin (chunk
// times count from it). ctx bounds its synthesis.
func (p *Pipeline) Begin(ctx context.Context, id, session string, begin time.Time) (*Turn, error) {
	if err := p.cfg.Player.Begin(id, begin); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	t := &Turn{p: p, ctx: ctx, stop: stop, begin: begin, chunker: p.cfg.Engine.Policy.NewChunker(),
		rec: pipeline.Turn{ID: id, Session: session, Start: begin}, done: make(chan struct{})}
	switch p.mode {
	case tts.ModeStream:
		t.driver = newContextDriver(t)
	case tts.ModeParallel:
		t.driver = newParallelDriver(t)
	default:
		t.driver = newRequestDriver(t)
	}
	return t, nil
}

// ID returns the turn's ID.
func (t *Turn) ID() string { return t.rec.ID }

// Begin returns when the turn began.
func (t *Turn) Begin() time.Time { return t.begin }

// since returns wall time w as turn time.
func (t *Turn) since(w time.Time) time.Duration { return w.Sub(t.begin) }

// Push feeds the next chunk of the turn; c.At counts from the turn's
// beginning (0 or less: now). A chunk without text is given filler words,
// so that there is something to say. It returns the chunk as spoken: with
// its time and words.
func (t *Turn) Push(c pipeline.Chunk) (pipeline.Chunk, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return c, fmt.Errorf("%w: turn %q has ended", pipeline.ErrOrder, t.rec.ID)
	}
	if c.At <= 0 {
		c.At = max(t.since(time.Now()), 1)
	}
	if c.At < t.lastAt {
		return c, fmt.Errorf("%w: turn %q chunk %d arrives at %v, before the one before it at %v", pipeline.ErrOrder, t.rec.ID, len(t.rec.Chunks), c.At, t.lastAt)
	}
	if c.Textless {
		c.Text, c.Textless = t.filler.Text(c.TokenCount()), false
	}
	t.expire(c.At)
	t.lastAt = c.At
	t.rec.Chunks = append(t.rec.Chunks, c)
	if c.Reasoning {
		return c, nil
	}
	t.text = append(t.text, c.Text...)
	if rel := t.chunker.Append(c.At, c.Text); rel > t.released {
		t.release(rel, c.At)
	}
	t.arm()
	return c, nil
}

// ToolCall notes that the stream stopped at tc.At for a tool call (times
// from the turn's beginning): the LLM's reply ends there, so the policy
// lets go of what it holds, as the frameworks' text aggregators do, the
// synthesis segment ends once that text is spoken (an output transport
// sends its partial frame then), and in stream mode the reply after the
// call is spoken into a synthesis context of its own.
func (t *Turn) ToolCall(tc pipeline.ToolCall) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return fmt.Errorf("%w: turn %q has ended", pipeline.ErrOrder, t.rec.ID)
	}
	if tc.At < t.lastAt {
		return fmt.Errorf("%w: turn %q tool call at %v, before the chunk before it at %v", pipeline.ErrOrder, t.rec.ID, tc.At, t.lastAt)
	}
	t.expire(tc.At)
	t.lastAt = tc.At
	t.rec.ToolCalls = append(t.rec.ToolCalls, tc)
	if rel := t.chunker.Flush(); rel > t.released {
		t.release(rel, tc.At)
	}
	t.driver.endReply()
	t.arm()
	if n := len(t.chunks); n > 0 && t.p.mode == tts.ModeStream {
		// a request per chunk ends a segment with every chunk already
		last := t.chunks[n-1]
		if last.over {
			t.endSegment(last)
		} else {
			last.endsReply = true
		}
	}
	return nil
}

// endSegment ends the synthesis segment after chunk c's audio.
func (t *Turn) endSegment(c *Timing) {
	if err := t.p.cfg.Player.EndSegment(t.rec.ID); err != nil {
		t.errs = append(t.errs, fmt.Sprintf("chunk %d %q: %s", c.Index, clip(c.Text), err))
	}
}

// expire fires the policy's timers due by at (mu held).
func (t *Turn) expire(at time.Duration) {
	for {
		d, ok := t.chunker.Deadline()
		if !ok || d > at {
			return
		}
		if rel := t.chunker.Expire(d); rel > t.released {
			t.release(rel, d)
		}
	}
}

// arm sets the wall-clock timer for the policy's next deadline (mu held).
func (t *Turn) arm() {
	d, ok := t.chunker.Deadline()
	if t.timer != nil && (!ok || !t.armed || d != t.deadline) {
		t.timer.Stop()
		t.timer, t.armed = nil, false
	}
	if !ok || t.armed {
		return
	}
	t.deadline, t.armed = d, true
	t.timer = time.AfterFunc(time.Until(t.begin.Add(d)), func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.ended || !t.armed || t.deadline != d {
			return
		}
		t.armed, t.timer = false, nil
		t.expire(d)
		t.arm()
	})
}

// release hands text up to rel, released at at, to the synthesizer (mu
// held). Text with nothing to say (white space) is no speech chunk.
func (t *Turn) release(rel int, at time.Duration) {
	from := t.released
	t.released = rel
	text := string(t.text[from:rel])
	if strings.TrimSpace(text) == "" {
		return
	}
	c := &Timing{Index: len(t.chunks), From: from, To: rel, Text: text, Release: at}
	t.chunks = append(t.chunks, c)
	t.driver.speak(c)
}

// End closes the turn's stream with its status: the policy releases what
// it holds, and the synthesizer finishes.
func (t *Turn) End(status pipeline.Status, errText string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return fmt.Errorf("%w: turn %q has ended", pipeline.ErrOrder, t.rec.ID)
	}
	t.expire(t.lastAt)
	if rel := t.chunker.Flush(); rel > t.released {
		t.release(rel, t.lastAt)
	}
	t.ended = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if status == "" {
		status = pipeline.StatusOK
	}
	t.rec.Status, t.rec.Error = status, errText
	t.driver.close()
	return nil
}

// Abort stops the turn's synthesis at once (Ctrl-C): what was heard so
// far is still reported by Wait once the player has played what it has.
func (t *Turn) Abort() {
	t.mu.Lock()
	if !t.ended {
		t.ended = true
		if t.timer != nil {
			t.timer.Stop()
		}
		t.rec.Status = pipeline.StatusCancelled
		t.driver.close()
	}
	t.mu.Unlock()
	t.stop()
}

// Wait blocks until the turn has been played out and returns what was
// spoken and heard.
func (t *Turn) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	heard, err := t.p.cfg.Player.Wait(ctx, t.rec.ID)
	t.stop()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &Result{Record: &t.rec, Heard: heard, Errors: t.errs}
	for _, c := range t.chunks {
		cp := *c
		cp.Arrivals = slices.Clone(c.Arrivals)
		r.Chunks = append(r.Chunks, cp)
	}
	return r, nil
}

// finished is the driver's word that all audio is with the player.
func (t *Turn) finished() {
	if err := t.p.cfg.Player.Finish(t.rec.ID, time.Now()); err != nil {
		t.fail(nil, err)
	}
	close(t.done)
}

// heard hands a piece of chunk c's audio to the player and measures it;
// ready is when the player may play it (the piece's arrival, or later
// when an earlier chunk's audio came after it).
func (t *Turn) heard(c *Timing, p stream.Piece) {
	if len(p.Samples) == 0 {
		return
	}
	// the audio can play once the player has it: when it arrived, or
	// later if this goroutine came to it late
	have, err := t.p.cfg.Player.Add(t.rec.ID, tts.Audio{Samples: p.Samples, Rate: p.Rate}, p.At, c.Index)
	if err != nil {
		t.fail(c, err)
		return
	}
	t.mu.Lock()
	at := t.since(have)
	first := !c.HasAudio
	if first {
		c.HasAudio, c.First, c.Rate = true, at, p.Rate
		c.Ready = at
		for i := c.Index - 1; i >= 0; i-- {
			if prev := t.chunks[i]; prev.HasAudio {
				c.Ready = max(c.Ready, prev.Done)
				break
			}
		}
	}
	c.Done = max(c.Done, at)
	before := c.Audio
	c.Samples += int64(len(p.Samples))
	if c.Rate > 0 {
		c.Audio = time.Duration(float64(c.Samples) * float64(time.Second) / float64(c.Rate))
	}
	c.Arrivals = append(c.Arrivals, pipeline.Arrival{At: max(at, c.Ready), Audio: c.Audio - before})
	snap := *c
	t.mu.Unlock()
	if first && t.p.cfg.OnChunk != nil {
		t.p.cfg.OnChunk(t.rec.ID, snap, ChunkAudio)
	}
}

// sent marks chunk c as given to the synthesizer now.
func (t *Turn) sent(c *Timing) {
	t.mu.Lock()
	c.Sent = t.since(time.Now())
	snap := *c
	t.mu.Unlock()
	if t.p.cfg.OnChunk != nil {
		t.p.cfg.OnChunk(t.rec.ID, snap, ChunkSent)
	}
}

// sentLocked is sent with the turn locked (a driver's speak).
func (t *Turn) sentLocked(c *Timing) {
	c.Sent = t.since(time.Now())
	if t.p.cfg.OnChunk != nil {
		t.p.cfg.OnChunk(t.rec.ID, *c, ChunkSent)
	}
}

// over marks chunk c's audio as complete.
func (t *Turn) over(c *Timing) {
	t.mu.Lock()
	c.over = true
	// a request per chunk ends a synthesis segment, and so does the
	// end of the LLM's reply at a tool call: an output transport sends
	// its partial frame now
	if t.p.mode != tts.ModeStream || c.endsReply {
		t.endSegment(c)
	}
	snap := *c
	t.mu.Unlock()
	if t.p.cfg.OnChunk != nil {
		t.p.cfg.OnChunk(t.rec.ID, snap, ChunkDone)
	}
}

// fail records a synthesis failure of chunk c (nil: of the turn).
func (t *Turn) fail(c *Timing, err error) {
	if err == nil || (errors.Is(err, context.Canceled) && t.ctx.Err() != nil) {
		return
	}
	t.mu.Lock()
	msg := err.Error()
	if c != nil {
		c.Err = msg
		msg = fmt.Sprintf("chunk %d %q: %s", c.Index, clip(c.Text), msg)
	}
	t.errs = append(t.errs, msg)
	t.mu.Unlock()
	t.p.cfg.Logger.Warn().Str("event", "synthesis_failed").Str("turn", t.rec.ID).Str("error", msg).Msg("synthesis_failed")
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:37] + "..."
}
