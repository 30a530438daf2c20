package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of the engine.
const (
	DefaultInterruption = 150 * time.Millisecond
	DefaultStallFactor  = 3.0
	DefaultTTFA         = 100 * time.Millisecond
	DefaultRTF          = 0.1
	DefaultPolicy       = "word"
)

// Config describes the speech side of the pipeline.
type Config struct {
	// Voice turns text into audio time.
	Voice tts.Voice
	// Policy decides when buffered text goes to the synthesizer.
	Policy tts.Policy
	// Synth models the synthesizer.
	Synth tts.Synth
	// Stack names the tts.Stack the policy and synthesizer came from, if
	// any, for reports; it changes nothing in the engine.
	Stack string
	// Preroll delays the player's start until this much audio is ready
	// (or the whole turn's speech, if shorter); zero starts at the first
	// audio.
	Preroll time.Duration
	// Interruption is the shortest underrun graded an interruption.
	Interruption time.Duration
	// SampleRate is the rate underruns are counted in samples at.
	SampleRate int
	// StallFactor is how many times the turn's median inter-token latency an
	// ITL must exceed to be called a stall.
	StallFactor float64
	// TokenAudio, when positive, speaks every token for exactly this long,
	// text or not, instead of the voice model: with token chunking, no
	// synthesizer latency and RTF 0 the player then plays each token for
	// TokenAudio the moment it arrives.
	TokenAudio time.Duration
	// Durations, when set, measures the audio of every released speech
	// chunk (a real synthesizer's durations) instead of the voice model,
	// which then only estimates text not yet released. Chunks holding
	// tokens without text keep the model's audio.
	Durations Durations
	// Measured, when set, gives what a real synthesizer did with each
	// speech chunk, as `underrun speak` measured it while the turn played:
	// a chunk it knows takes its audio, start, first audio (Ready) and last
	// audio (Done) from it instead of the voice model and Synth, so the
	// engine predicts the gaps of that very run. Chunks it does not know
	// keep the models; one it measured without audio is no speech chunk.
	// Within a measured chunk the player plays no further than the audio
	// that had arrived (SynthTiming.Arrivals), or, without arrivals, has
	// all of it from its first audio on (frames follow Synth.RTF only for
	// the pre-roll start).
	Measured MeasuredSynth
}

// Durations measures how long a synthesizer speaks a text.
type Durations interface {
	Duration(text string) (time.Duration, error)
}

// ContextDurations measures a speech chunk within the whole turn's text:
// a real engine speaks a word inside its sentence shorter than alone.
// InContext returns the audio of text[from:to] spoken as part of text.
// PlayTurn, which knows the whole turn, measures every chunk so when the
// turn's tokens all carry text; chunks pushed one by one (the live Guard)
// are measured alone.
type ContextDurations interface {
	Durations
	InContext(text string, from, to int) (time.Duration, error)
}

// SpokenText returns the text a turn's chunks speak, in which speech
// chunks' byte offsets (SpeechChunk.From, To) count: the chunks' text in
// order, reasoning left out, tts.TextlessToken for each chunk of tokens
// without text.
func SpokenText(t *Turn) string {
	var b []byte
	for i := range t.Chunks {
		if c := &t.Chunks[i]; !c.Reasoning {
			b = append(b, spoken(c)...)
		}
	}
	return string(b)
}

// spoken is the text a chunk adds to the turn's spoken text.
func spoken(c *Chunk) string {
	if c.Textless {
		return tts.TextlessToken
	}
	return c.Text
}

// MeasuredSynth answers what a real synthesizer did with the speech chunk
// of turn that covers bytes [from, to) of the turn's spoken text (the
// offsets of SpeechChunk.From and To).
type MeasuredSynth interface {
	Measured(turn string, from, to int) (SynthTiming, bool)
}

// SynthTiming is one speech chunk as a real synthesizer handled it, in
// times since the turn began: when the synthesizer was given it (Start),
// when its first audio reached the player (Ready), when its last audio did
// (Done), and how long its audio is. Arrivals, when set, are the pieces in
// which the audio reached the player, in order (the first at Ready; their
// audio adds up to Audio).
type SynthTiming struct {
	Start, Ready, Done, Audio time.Duration
	Arrivals                  []Arrival
}

// Arrival is a piece of a chunk's audio reaching the player: At, with
// Audio of speech in it.
type Arrival struct {
	At, Audio time.Duration
}

// DefaultConfig returns a word-streaming synthesizer with 100 ms to first
// audio and RTF 0.1, the built-in voice, immediate start and a 150 ms
// interruption threshold.
func DefaultConfig() Config {
	p, _ := tts.ParsePolicy(DefaultPolicy)
	return Config{
		Voice:        tts.DefaultVoice(),
		Policy:       p,
		Synth:        tts.Synth{Mode: tts.DefaultMode, TTFA: DefaultTTFA, Continuation: tts.DefaultContinuation, RTF: DefaultRTF},
		Interruption: DefaultInterruption,
		SampleRate:   tts.DefaultSampleRate,
		StallFactor:  DefaultStallFactor,
	}
}

// ErrConfig reports an engine configuration that cannot run.
var ErrConfig = errors.New("invalid engine configuration")

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	if err := c.Voice.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Synth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.Policy == nil:
		return fmt.Errorf("%w: no chunking policy", ErrConfig)
	case c.Preroll < 0:
		return fmt.Errorf("%w: pre-roll must not be negative, got %v", ErrConfig, c.Preroll)
	case c.Interruption <= 0:
		return fmt.Errorf("%w: interruption threshold must be positive, got %v", ErrConfig, c.Interruption)
	case c.SampleRate <= 0:
		return fmt.Errorf("%w: sample rate must be positive, got %d", ErrConfig, c.SampleRate)
	case c.TokenAudio < 0:
		return fmt.Errorf("%w: token audio must not be negative, got %v", ErrConfig, c.TokenAudio)
	case !(c.StallFactor >= 1):
		return fmt.Errorf("%w: stall factor must be at least 1, got %v", ErrConfig, c.StallFactor)
	}
	return nil
}

// ErrOrder reports a chunk pushed out of time order or after the end.
var ErrOrder = errors.New("chunk out of order")

// Playout runs one turn through chunker, synthesizer and player. Push the
// streamed chunks in arrival order, then End; Underruns grow as gaps
// become known. Offline analysis pushes a whole recorded turn; the live
// Guard pushes chunks as they arrive and uses Deadline and DrainsAt to know
// when to look again. Reset reuses a Playout, and its memory, for the next
// turn; PlayTurn reuses more, all that the text made, when the next turn
// has the text of the one before (a Monte Carlo run, a search over
// timings, benchmark files of text-less turns). A Playout is not safe for
// concurrent use.
type Playout struct {
	cfg       Config
	chunker   tts.Chunker
	meter     tts.Meter
	tokenTime time.Duration
	frame     time.Duration
	timed     bool  // the policy can release text on its own (Deadline)
	mode      uint8 // modeStream, modeRequest or modeParallel

	turn   string
	at     []time.Duration // per streamed chunk: arrival
	end    []int           // per streamed chunk: text offset after it
	audio  []time.Duration // per streamed chunk: audio up to its end
	meters []bool          // per streamed chunk: the meter was in a word before it (text turns)
	text   []byte
	kind   []uint8 // per streamed chunk: kindText, kindTextless, kindReasoning

	hasText           bool // some chunk carried text: positions can be told
	metered           bool // some chunk's audio came from the meter: meters is kept
	released          int
	releasedAudio     time.Duration
	cursor            int           // streamed chunk audioAt last looked at
	first             int           // streamed chunk holding the first unreleased byte
	synthDone         time.Duration // when the synthesizer has produced all released audio
	startHeld         bool          // the pre-roll start waited for an earlier chunk's last frames
	allReady          time.Duration // parallel mode: when the last frame of every released chunk is ready
	timerOrigin       int
	timerArmed        bool
	timerDeadline     time.Duration
	started, ended    bool
	startAt, playhead time.Duration
	startChunk        int // the chunk whose audio started the player
	scheduled         int // chunks handed to the player
	readyAudio        time.Duration
	spokenRecords     int
	sortedITL         []time.Duration // medianITL's: the ITLs of the first sortedN chunks, sorted
	sortedN           int             // 0: none yet (after resetTiming)
	gapKinds          []uint8         // per underrun: how its chunk's text stood
	arrivals          [][]Arrival     // per speech chunk, with Config.Measured: its measured pieces
	speech            time.Duration   // audio of the released chunks
	earliestStart     time.Duration   // the latest of every chunk's first audio (and allowance) less the audio before it
	whole             string          // the turn's spoken text, for ContextDurations (PlayTurn)
	err               error           // first Config.Durations failure

	// What PlayTurn reuses from the turn before when the next has the same
	// text (reuse: the policy's releases depend on the text alone, and no
	// Durations or Measured): that turn's chunks without their times
	// (keys) and its speech chunks as released, before synthesis (log).
	// The text state above (end, audio, meters, text, kind and the
	// release cursors) is then still the turn's. memo says keys and log
	// describe it.
	reuse, memo, recording bool
	replaying              bool // PlayTurn is replaying the log: causes wait for End
	keys                   []turnKey
	textless               bool // every key is the first, of text-less tokens (not reasoning)
	log                    []loggedChunk

	// Chunks are the speech chunks released so far.
	Chunks []SpeechChunk
	// Underruns are the gaps found so far, in time order.
	Underruns []Underrun
	// Tolerance holds, after End, the stall tolerance after each streamed
	// chunk: the largest extra delay of everything after it that adds no
	// underrun (Unbounded when none can).
	Tolerance []time.Duration
	// MinPreroll is, after End, the smallest pre-roll in whole
	// milliseconds with no underrun: passed back as Config.Preroll (or
	// --preroll), the turn plays with no gap.
	MinPreroll time.Duration
}

// turnKey is what a streamed chunk gives the engine besides its time (its
// Tokens as set: 0 and 1 say the same, but a turn that writes them
// differently is merely played in full).
type turnKey struct {
	text      string
	tokens    int32
	textless  bool
	reasoning bool
}

// loggedChunk is a released speech chunk as its text made it: what
// SpeechChunk holds before synthesis, and Synth.Produce of its audio.
type loggedChunk struct {
	from, to, first, last, trigger int32
	end                            bool
	audio, produce                 time.Duration
}

// set makes c the chunk as released at at, but for its times after the
// release: field by field, as a composite literal of a struct this large
// is built on the stack and copied, which costs more than the rest of a
// token's work.
func (l *loggedChunk) set(c *SpeechChunk, at time.Duration) {
	c.From, c.To = int(l.from), int(l.to)
	c.First, c.Last, c.Trigger = int(l.first), int(l.last), int(l.trigger)
	c.Timer, c.End = false, l.end
	c.Audio, c.Release = l.audio, at
}

// logLimit bounds the offsets and counts a loggedChunk or turnKey holds.
const logLimit = math.MaxInt32

// The synthesizer's timing modes (tts.Mode), as the engine switches on
// them.
const (
	modeStream uint8 = iota
	modeRequest
	modeParallel
)

const (
	kindText uint8 = iota
	kindTextless
	kindReasoning
	kindFixed // text spoken at Config.TokenAudio per token
)

// NewPlayout returns a Playout for cfg, ready for a turn named id.
func NewPlayout(cfg Config, id string) (*Playout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Playout{cfg: cfg, chunker: cfg.Policy.NewChunker(), timed: true}
	if tp, ok := cfg.Policy.(interface{ HasTimer() bool }); ok {
		p.timed = tp.HasTimer()
	}
	if bp, ok := cfg.Policy.(interface{ ReleasesByText() bool }); ok {
		p.reuse = bp.ReleasesByText() && !p.timed && cfg.Durations == nil && cfg.Measured == nil
	}
	p.tokenTime = cfg.Voice.TokenTime()
	if cfg.TokenAudio > 0 {
		p.tokenTime = cfg.TokenAudio
	}
	p.frame = cfg.Synth.FrameSize()
	switch cfg.Synth.Timing() {
	case tts.ModeRequest:
		p.mode = modeRequest
	case tts.ModeParallel:
		p.mode = modeParallel
	default:
		p.mode = modeStream
	}
	p.Reset(id)
	return p, nil
}

// Reset clears the Playout for a new turn named id, keeping its memory.
func (p *Playout) Reset(id string) {
	p.chunker.Reset()
	p.meter = p.cfg.Voice.Meter()
	p.end, p.audio, p.meters = p.end[:0], p.audio[:0], p.meters[:0]
	p.text, p.kind = p.text[:0], p.kind[:0]
	p.hasText, p.metered = false, false
	p.released, p.releasedAudio, p.cursor, p.first = 0, 0, 0, 0
	p.spokenRecords = 0
	p.memo, p.recording, p.replaying = false, false, false
	p.resetTiming(id)
}

// resetTiming clears what depends on the turn's times, keeping the state
// its text made.
func (p *Playout) resetTiming(id string) {
	p.turn = id
	p.at = p.at[:0]
	p.sortedN = 0
	p.synthDone, p.allReady, p.startHeld = 0, 0, false
	p.timerOrigin, p.timerArmed = 0, false
	p.started, p.ended = false, false
	p.startAt, p.playhead, p.startChunk, p.scheduled, p.readyAudio = 0, 0, 0, 0, 0
	p.Chunks, p.Underruns, p.Tolerance = p.Chunks[:0], p.Underruns[:0], p.Tolerance[:0]
	p.gapKinds = p.gapKinds[:0]
	p.arrivals = p.arrivals[:0]
	p.speech, p.err, p.whole = 0, nil, ""
	p.earliestStart = math.MinInt64
	p.MinPreroll = 0
}

// Config returns the configuration the Playout runs with.
func (p *Playout) Config() Config { return p.cfg }

// Started reports whether the player has started, and when.
func (p *Playout) Started() (time.Duration, bool) { return p.startAt, p.started }

// Ended reports whether End has been called.
func (p *Playout) Ended() bool { return p.ended }

// Speech returns the audio released to the synthesizer so far.
func (p *Playout) Speech() time.Duration { return p.speech }

// Err returns the first error of Config.Durations in this turn (its chunk
// then kept the voice model's audio).
func (p *Playout) Err() error { return p.err }

// Buffered returns the audio already released but not yet played at time
// t (Backlog(t).Buffered).
func (p *Playout) Buffered(t time.Duration) time.Duration { return p.Backlog(t).Buffered }

// DrainsAt returns when the audio handed to the player runs out if nothing
// else is released: the moment a live guard raises an underrun. ok is false
// before the player starts and after End.
func (p *Playout) DrainsAt() (time.Duration, bool) {
	if !p.started || p.ended {
		return 0, false
	}
	return p.playhead, true
}

// Deadline returns when the chunking policy will release buffered text on
// its own (a timer policy); the caller calls Advance then.
func (p *Playout) Deadline() (time.Duration, bool) {
	if p.ended {
		return 0, false
	}
	return p.chunker.Deadline()
}

// Advance lets time pass to t with no new chunk, firing policy timers.
func (p *Playout) Advance(t time.Duration) {
	if p.ended || !p.timed {
		return
	}
	for {
		d, ok := p.chunker.Deadline()
		if !ok || d > t {
			return
		}
		rel := p.chunker.Expire(d)
		p.timerArmed = false
		if rel > p.released {
			p.release(rel, d, p.timerOrigin, true)
		}
	}
}

// Push adds the next streamed chunk of the turn.
func (p *Playout) Push(c Chunk) error { return p.push(&c) }

// InContext reports whether PlayTurn measured the turn's speech chunks in
// the context of the whole turn (Config.Durations is a ContextDurations
// and every token carries text).
func (p *Playout) InContext() bool { return p.whole != "" }

// Text returns what speech chunk c says (tts.TextlessToken for each token
// without text).
func (p *Playout) Text(c SpeechChunk) string { return string(p.text[c.From:c.To]) }

// Textless reports whether speech chunk c holds tokens that carry no text
// (each spoken as tts.TextlessToken, a stand-in rather than words).
func (p *Playout) Textless(c SpeechChunk) bool {
	for i := max(0, c.First); i <= c.Last && i < len(p.kind); i++ {
		if p.kind[i] == kindTextless {
			return true
		}
	}
	return false
}

func (p *Playout) push(c *Chunk) error {
	if p.ended {
		return fmt.Errorf("%w: turn %q has ended", ErrOrder, p.turn)
	}
	k := len(p.at)
	if k > 0 && c.At < p.at[k-1] {
		return fmt.Errorf("%w: turn %q chunk %d arrives at %v, before chunk %d at %v", ErrOrder, p.turn, k, c.At, k-1, p.at[k-1])
	}
	if c.At < 0 {
		return fmt.Errorf("%w: turn %q chunk %d arrives at %v, before its request", ErrOrder, p.turn, k, c.At)
	}
	p.Advance(c.At)
	p.at = append(p.at, c.At)
	if c.Reasoning {
		p.kind = append(p.kind, kindReasoning)
		p.end = append(p.end, len(p.text))
		p.audio = append(p.audio, p.audioSoFar())
		if p.metered {
			p.meters = append(p.meters, p.meter.InWord())
		}
		return nil
	}
	p.spokenRecords++
	var text string
	var a time.Duration
	switch {
	case c.Textless:
		text = spoken(c)
		a = time.Duration(c.TokenCount()) * p.tokenTime
		p.kind = append(p.kind, kindTextless)
	case p.cfg.TokenAudio > 0:
		p.hasText = true
		text = c.Text
		a = time.Duration(c.TokenCount()) * p.cfg.TokenAudio
		p.kind = append(p.kind, kindFixed)
	default:
		p.hasText = true
		if !p.metered {
			p.metered = true
			for range k {
				p.meters = append(p.meters, p.meter.InWord())
			}
		}
		p.meters = append(p.meters, p.meter.InWord())
		text = c.Text
		a = p.meter.Add(text)
		p.kind = append(p.kind, kindText)
	}
	if p.metered && p.kind[k] != kindText {
		p.meters = append(p.meters, p.meter.InWord())
	}
	prev := p.audioSoFar()
	p.text = append(p.text, text...)
	p.end = append(p.end, len(p.text))
	p.audio = append(p.audio, prev+a)
	rel := p.chunker.Append(c.At, text)
	if p.timed {
		if d, armed := p.chunker.Deadline(); armed && (!p.timerArmed || d != p.timerDeadline) {
			p.timerOrigin, p.timerDeadline, p.timerArmed = k, d, true
		} else if !armed {
			p.timerArmed = false
		}
	}
	if rel > p.released {
		p.release(rel, c.At, k, false)
	}
	return nil
}

// audioSoFar is the audio of all text appended so far.
func (p *Playout) audioSoFar() time.Duration {
	if n := len(p.audio); n > 0 {
		return p.audio[n-1]
	}
	return 0
}

// End closes the turn at the arrival of its last chunk: the policy flushes
// what it holds, the player plays it out, and the stall tolerances and the
// smallest gap-free pre-roll are computed.
func (p *Playout) End() {
	if p.ended {
		return
	}
	last := time.Duration(0)
	if n := len(p.at); n > 0 {
		last = p.at[n-1]
		p.Advance(last)
	}
	if rel := p.chunker.Flush(); rel > p.released {
		n := len(p.Chunks)
		p.release(rel, last, len(p.at)-1, false)
		if len(p.Chunks) > n {
			p.Chunks[n].End = true
			if p.recording {
				p.log[len(p.log)-1].end = true
			}
		}
	}
	p.finish()
}

// finish plays out the turn once every chunk is released, and computes
// the causes, stall tolerances and the smallest gap-free pre-roll.
func (p *Playout) finish() {
	if !p.started && len(p.Chunks) > 0 {
		c := &p.Chunks[len(p.Chunks)-1]
		own := c.Ready + p.lastFrameOffset(c)
		p.startHeld = p.allReady > own
		p.start(max(p.allReady, own), len(p.Chunks)-1)
	}
	p.ended = true
	for i := range p.Underruns {
		p.classify(len(p.at), i)
	}
	p.tolerance()
	p.minPreroll()
}

// audioAt returns the audio of the spoken text before byte offset off.
func (p *Playout) audioAt(off int) time.Duration {
	for p.cursor < len(p.end) && p.end[p.cursor] < off {
		p.cursor++
	}
	r := p.cursor
	if r >= len(p.end) {
		return p.audio[len(p.audio)-1]
	}
	if p.end[r] == off {
		return p.audio[r]
	}
	from, before := 0, time.Duration(0)
	if r > 0 {
		from, before = p.end[r-1], p.audio[r-1]
	}
	prefix := off - from
	if p.kind[r] == kindFixed {
		return before + (p.audio[r]-before)*time.Duration(prefix)/time.Duration(p.end[r]-from)
	}
	if p.kind[r] == kindTextless {
		width := p.end[r] - from
		full := p.audio[r] - before
		if prefix <= 1 || width <= 1 {
			return before
		}
		return before + full*time.Duration(prefix-1)/time.Duration(width-1)
	}
	m := p.meter.WithInWord(p.meters[r])
	return before + m.Add(string(p.text[from:off]))
}

// recordAt returns the streamed chunk holding byte off.
func (p *Playout) recordAt(off int) int {
	return min(sort.Search(len(p.end), func(i int) bool { return p.end[i] > off }), len(p.end)-1)
}

func (p *Playout) release(rel int, at time.Duration, trigger int, timer bool) {
	from := p.released
	for p.first < len(p.end)-1 && p.end[p.first] <= from {
		p.first++
	}
	first := p.first
	total := p.audioAt(rel)
	last := min(p.cursor, len(p.end)-1) // audioAt leaves it on the chunk holding byte rel-1
	a := total - p.releasedAudio
	p.released, p.releasedAudio = rel, total
	var real SynthTiming
	measured := false
	if p.cfg.Measured != nil {
		if real, measured = p.cfg.Measured.Measured(p.turn, from, rel); measured {
			a = real.Audio
		}
	}
	if a <= 0 {
		return
	}
	if p.cfg.Durations != nil && !measured {
		a = p.measure(first, last, from, rel, a)
	}
	p.speech += a
	c := p.newChunk()
	// field by field: see loggedChunk.set
	c.From, c.To, c.First, c.Last = from, rel, first, last
	c.Trigger, c.Timer, c.End = trigger, timer, false
	c.Audio, c.Release = a, at
	c.Start, c.Ready, c.Done, c.PlayStart, c.PlayEnd = 0, 0, 0, 0, 0
	if p.recording {
		if rel >= logLimit || len(p.at) >= logLimit {
			p.recording = false // past what a log holds: played in full every time
		} else {
			p.log = append(p.log, loggedChunk{
				from: int32(from), to: int32(rel), first: int32(first), last: int32(last), trigger: int32(trigger),
				audio: a, produce: p.cfg.Synth.Produce(a),
			})
		}
	}
	i := len(p.Chunks) - 1
	p.synthesize(c, i, at)
	if measured {
		c.Start, c.Ready, c.Done = real.Start, real.Ready, max(real.Ready, real.Done)
	}
	if p.cfg.Measured != nil {
		p.arrivals = append(p.arrivals, real.Arrivals) // nil when not measured
	}
	p.play(c, i)
}

// newChunk appends a speech chunk, built in place by the caller: a
// SpeechChunk is large, and this runs per token.
func (p *Playout) newChunk() *SpeechChunk {
	if len(p.Chunks) < cap(p.Chunks) {
		p.Chunks = p.Chunks[:len(p.Chunks)+1]
	} else {
		p.Chunks = append(p.Chunks, SpeechChunk{})
	}
	return &p.Chunks[len(p.Chunks)-1]
}

// synthesize sets when speech chunk i, released at at, starts synthesis,
// has its first audio and its last.
func (p *Playout) synthesize(c *SpeechChunk, i int, at time.Duration) {
	switch p.mode {
	case modeRequest:
		c.Start = max(at, p.synthDone)
		c.Ready = c.Start + p.cfg.Synth.TTFA
	case modeParallel:
		c.Start = at
		c.Ready = at + p.cfg.Synth.TTFA
	default:
		c.Start = at
		c.Ready = max(at+p.latency(i), p.synthDone)
	}
	c.Done = c.Ready + p.cfg.Synth.Produce(c.Audio)
}

// play hands speech chunk i, synthesized, to the player: it starts the
// player when the start policy is met, and schedules it once started.
func (p *Playout) play(c *SpeechChunk, i int) {
	p.earliest(c)
	a := c.Audio
	p.synthDone = max(p.synthDone, c.Done)
	before := p.allReady // every earlier chunk is whole by then
	if p.mode == modeParallel {
		// only parallel requests can finish out of order: in the other
		// modes a chunk's first audio follows the audio before it
		p.allReady = max(p.allReady, c.Ready+p.lastFrameOffset(c))
	}
	if !p.started {
		need := p.cfg.Preroll
		if need <= 0 {
			p.start(c.Ready, i)
			return
		}
		if p.readyAudio+a >= need {
			// the player holds the audio in order: the pre-roll is full
			// when every earlier chunk is whole and enough of this one is
			x := need - p.readyAudio
			k := (x+p.frame-1)/p.frame - 1
			own := c.Ready + p.frameOffset(k)
			p.startHeld = before > own
			p.start(max(before, own), i)
			return
		}
		p.readyAudio += a
		return
	}
	p.schedule()
}

// earliest notes, for minPreroll, when the player could start at the
// earliest for speech chunk c, just released, to play with no gap: its
// first audio (and allowance) less the audio before it.
func (p *Playout) earliest(c *SpeechChunk) {
	p.earliestStart = max(p.earliestStart, c.Ready+p.allowance(c)-(p.speech-c.Audio))
}

// latency is how long speech chunk i waits after its release for its
// first audio with the synthesizer otherwise idle.
func (p *Playout) latency(i int) time.Duration {
	if i > 0 && p.mode == modeStream {
		return p.cfg.Synth.Continuation
	}
	return p.cfg.Synth.TTFA
}

// readyIf is when speech chunk i's first audio would have been ready had
// it been released at x, the chunks before it as they were.
func (p *Playout) readyIf(i int, x time.Duration) time.Duration {
	var prevDone time.Duration
	if i > 0 {
		prevDone = p.Chunks[i-1].Done
	}
	switch p.mode {
	case modeRequest:
		return max(x, prevDone) + p.cfg.Synth.TTFA
	case modeParallel:
		return x + p.cfg.Synth.TTFA
	}
	return max(x+p.latency(i), prevDone)
}

// NextLatency is how long the next chunk released would wait for its
// first audio with the synthesizer otherwise idle: the time to first
// audio, or in stream mode once the turn has a chunk, the continuation
// latency.
func (p *Playout) NextLatency() time.Duration { return p.latency(len(p.Chunks)) }

// measure returns Config.Durations' audio of text [from, rel), held by
// streamed chunks first..last, or model when the text holds tokens without
// text or the measurement fails.
func (p *Playout) measure(first, last, from, rel int, model time.Duration) time.Duration {
	for r := first; r <= last; r++ {
		if k := p.kind[r]; k != kindText && k != kindReasoning {
			return model
		}
	}
	var d time.Duration
	var err error
	if cd, ok := p.cfg.Durations.(ContextDurations); ok && p.whole != "" {
		d, err = cd.InContext(p.whole, from, rel)
	} else {
		d, err = p.cfg.Durations.Duration(string(p.text[from:rel]))
	}
	if err != nil {
		if p.err == nil {
			p.err = fmt.Errorf("turn %q: speech chunk at byte %d: %w", p.turn, from, err)
		}
		return model
	}
	if d <= 0 {
		return model
	}
	return d
}

// frameOffset is when frame k of a chunk is ready, after its first frame.
func (p *Playout) frameOffset(k time.Duration) time.Duration {
	if k <= 0 || p.cfg.Synth.RTF == 0 {
		return 0
	}
	return time.Duration(float64(k*p.frame) * p.cfg.Synth.RTF)
}

func (p *Playout) frames(c *SpeechChunk) time.Duration {
	return (c.Audio + p.frame - 1) / p.frame
}

func (p *Playout) lastFrameOffset(c *SpeechChunk) time.Duration {
	return p.frameOffset(p.frames(c) - 1)
}

// allowance is how much earlier than its play start a chunk's first frame
// must be ready so that no later frame of it comes late (RTF > 1).
func (p *Playout) allowance(c *SpeechChunk) time.Duration {
	if p.cfg.Synth.RTF <= 1 {
		return 0
	}
	k := p.frames(c) - 1
	return p.frameOffset(k) - k*p.frame
}

func (p *Playout) start(at time.Duration, chunk int) {
	p.started = true
	p.startAt, p.playhead, p.startChunk = at, at, chunk
	p.schedule()
}

// schedule hands released chunks to the player in order.
func (p *Playout) schedule() {
	for ; p.scheduled < len(p.Chunks); p.scheduled++ {
		i := p.scheduled
		c := &p.Chunks[i]
		if c.Ready > p.playhead {
			p.gap(i, p.playhead, c.Ready-p.playhead)
			p.playhead = c.Ready
		}
		c.PlayStart = p.playhead
		if i < len(p.arrivals) && len(p.arrivals[i]) > 0 {
			// measured: the player plays what has arrived, piece by piece
			t := c.PlayStart
			for _, a := range p.arrivals[i] {
				if a.Audio <= 0 {
					continue // nothing to wait for
				}
				if a.At > t {
					p.intraGap(i, t, a.At-t)
					t = a.At
				}
				t += a.Audio
			}
			p.playhead = t
			c.PlayEnd = t
			continue
		}
		if p.cfg.Synth.RTF <= 1 || c.Audio <= p.frame {
			p.playhead += c.Audio
			c.PlayEnd = p.playhead
			continue
		}
		t := c.PlayStart
		for k, n := time.Duration(0), p.frames(c); k < n; k++ {
			if r := c.Ready + p.frameOffset(k); r > t {
				p.intraGap(i, t, r-t)
				t = r
			}
			t += min(p.frame, c.Audio-k*p.frame)
		}
		p.playhead = t
		c.PlayEnd = t
	}
}

func (p *Playout) samples(d time.Duration) int64 {
	return int64(math.Round(d.Seconds() * float64(p.cfg.SampleRate)))
}

func (p *Playout) newUnderrun(chunk int, at, d time.Duration) Underrun {
	u := Underrun{
		Turn: p.turn, Start: at, Duration: d,
		StartSample: p.samples(at), Chunk: chunk,
		Class: Glitch,
	}
	u.Samples = p.samples(at+d) - u.StartSample
	if d >= p.cfg.Interruption {
		u.Class = Interruption
	}
	return u
}

func (p *Playout) intraGap(chunk int, at, d time.Duration) {
	u := p.newUnderrun(chunk, at, d)
	u.Cause, u.Position = CauseSynthesizer, MidChunk
	u.Token = p.Chunks[chunk].First
	p.Underruns = append(p.Underruns, u)
	p.gapKinds = append(p.gapKinds, gapSynth)
}

func (p *Playout) itl(k int) time.Duration {
	if k <= 0 {
		return p.at[0]
	}
	return p.at[k] - p.at[k-1]
}

// How the text of a late chunk stood when the player ran dry; classify
// turns it into a Cause.
const (
	gapSynth   uint8 = iota // released in time; the synthesizer was late
	gapWaited               // all its text was in; the release waited for the trigger token
	gapPartial              // some of its text was in; the policy held it for the rest
	gapLate                 // none of its text was in
)

// gap records the gap before chunk i and finds its cause. A cause that
// depends on the turn's usual pace is settled provisionally from the
// chunks so far, and again at End from the whole turn.
func (p *Playout) gap(i int, at, d time.Duration) {
	u, kind := p.gapBefore(i, at, d)
	p.Underruns = append(p.Underruns, u)
	p.gapKinds = append(p.gapKinds, kind)
	if !p.replaying { // a replay settles every cause at End
		p.classify(len(p.at), len(p.Underruns)-1)
	}
}

// gapBefore accounts a gap of d at at before chunk i: the underrun with
// its token, ITL and tolerance, and how the chunk's text stood (the kind
// classify needs for its cause).
func (p *Playout) gapBefore(i int, at, d time.Duration) (Underrun, uint8) {
	u := p.newUnderrun(i, at, d)
	c := &p.Chunks[i]
	prev := &p.Chunks[i-1]
	u.Position = p.position(prev.To)
	first, last := p.spokenRange(c)
	kind := gapLate
	switch {
	case c.Release+p.latency(i) <= at:
		kind = gapSynth
		u.Token = c.First
	case p.readyIf(i, p.at[last]) <= at:
		kind = gapWaited
		u.Token = c.Trigger
	default:
		if p.readyIf(i, p.at[first]) <= at {
			kind = gapPartial
		}
		j := c.Last
		for k := prev.Last + 1; k <= c.Last; k++ {
			if p.itl(k) > p.itl(j) {
				j = k
			}
		}
		u.Token = j
	}
	u.ITL = p.itl(u.Token)
	if kind != gapSynth {
		u.Tolerance = max(0, u.ITL-d)
	}
	return u, kind
}

// spokenRange returns the streamed chunks holding the first and last
// non-space bytes of speech chunk c: white space that a policy releases
// with a chunk belongs to the token after it.
func (p *Playout) spokenRange(c *SpeechChunk) (first, last int) {
	from, to := c.From, c.To
	for to > from+1 && isSpaceByte(p.text[to-1]) {
		to--
	}
	for from < to-1 && isSpaceByte(p.text[from]) {
		from++
	}
	return p.recordAt(from), p.recordAt(to - 1)
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// classify settles the cause of underrun i from the first n streamed
// chunks. An ITL is a stall when it exceeds StallFactor times the median
// ITL. A chunk whose text was in but whose release waited for a token, or
// one the policy held while the rest of it streamed, is held unless that
// token came after a stall. A chunk none of whose text was in is late for
// a stall, else for the stream's pace when the median ITL is longer than
// the audio a streamed chunk carries on average, else for start-up.
func (p *Playout) classify(n, i int) {
	p.classifyKind(&p.Underruns[i], p.gapKinds[i], n)
}

// classifyKind settles u's cause, its text having stood as kind, from
// the first n streamed chunks.
func (p *Playout) classifyKind(u *Underrun, kind uint8, n int) {
	if kind == gapSynth {
		u.Cause = CauseSynthesizer
		return
	}
	if p.Chunks[u.Chunk].Timer && kind == gapWaited {
		u.Cause = CauseHeld
		return
	}
	median := p.medianITL(n, u.Token)
	var stall bool
	if median > 0 {
		stall = float64(u.ITL) > p.cfg.StallFactor*float64(median)
	} else {
		stall = u.ITL > p.perRecordAudio(n)
	}
	switch {
	case stall:
		u.Cause = CauseStall
	case kind != gapLate:
		u.Cause = CauseHeld
	case median > p.perRecordAudio(n):
		u.Cause = CausePace
	default:
		u.Cause = CauseStartup
	}
}

// perRecordAudio is the mean audio of a spoken streamed chunk so far.
func (p *Playout) perRecordAudio(n int) time.Duration {
	if n == 0 || p.spokenRecords == 0 {
		return 0
	}
	return p.audio[n-1] / time.Duration(p.spokenRecords)
}

// medianITL returns the median ITL of the first n streamed chunks, leaving
// out the ITL before chunk skip; 0 when there is none.
func (p *Playout) medianITL(n, skip int) time.Duration {
	// p.sortedITL holds the ITLs of the first p.sortedN chunks, sorted:
	// extended as n grows (classify asks with n growing, and at End for
	// every underrun with the same n), started again for a smaller n
	if n < p.sortedN || p.sortedN == 0 {
		p.sortedITL, p.sortedN = p.sortedITL[:0], 1
	}
	if added := n - p.sortedN; added > 0 {
		if added > 8 && added > len(p.sortedITL)/8 {
			for k := p.sortedN; k < n; k++ {
				p.sortedITL = append(p.sortedITL, p.at[k]-p.at[k-1])
			}
			slices.Sort(p.sortedITL)
		} else {
			for k := p.sortedN; k < n; k++ {
				d := p.at[k] - p.at[k-1]
				i, _ := slices.BinarySearch(p.sortedITL, d)
				p.sortedITL = slices.Insert(p.sortedITL, i, d)
			}
		}
		p.sortedN = n
	}
	s := p.sortedITL
	// the sorted ITLs without (one of the values equal to) the one before
	// skip: value i of them is s[i] below the place of that value, s[i+1]
	// from it on
	gone := len(s)
	if skip >= 1 && skip < n {
		gone, _ = slices.BinarySearch(s, p.at[skip]-p.at[skip-1])
	}
	m := len(s)
	if gone < len(s) {
		m--
	}
	at := func(i int) time.Duration {
		if i >= gone {
			return s[i+1]
		}
		return s[i]
	}
	if m == 0 {
		return 0
	}
	if m%2 == 1 {
		return at(m / 2)
	}
	return (at(m/2-1) + at(m/2)) / 2
}

// position classifies the place in the text where audio stopped at off.
func (p *Playout) position(off int) Position {
	if !p.hasText {
		return PositionUnknown
	}
	before := p.text[:off]
	trimmed := before
	for len(trimmed) > 0 {
		r, size := utf8.DecodeLastRune(trimmed)
		if !unicode.IsSpace(r) {
			break
		}
		trimmed = trimmed[:len(trimmed)-size]
	}
	for len(trimmed) > 0 {
		r, size := utf8.DecodeLastRune(trimmed)
		switch {
		case tts.IsSentenceEnd(r):
			return AtSentenceBoundary
		case r == '"' || r == '\'' || r == ')' || r == '”' || r == '’' || r == ']':
			trimmed = trimmed[:len(trimmed)-size]
			continue
		case r == ',' || r == ';' || r == ':' || r == '—' || r == '–':
			return AtClauseBoundary
		}
		break
	}
	if len(before) > 0 && off < len(p.text) {
		r1, _ := utf8.DecodeLastRune(before)
		r2, _ := utf8.DecodeRune(p.text[off:])
		if isWord(r1) && isWord(r2) {
			return MidWord
		}
	}
	return MidSentence
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// tolerance computes, for every streamed chunk k, the largest delay d of
// all chunks after k that adds no underrun time. Delaying them delays the
// release s_c of every speech chunk c released by a later chunk. The
// turn's silence is its last play end minus start and audio, and the last
// play end is the maximum over c of (first audio of c + its play time +
// the audio after it), so nothing is added when every delayed chunk's
// first audio R'_c stays at or before L_c, the latest first-audio time
// that keeps the last play end (with no gap after c, DESIGN.md's
// e_{c-1} - a_c). Every mode makes R'_c = max(s_c + d + l_c, R'_{c-1} +
// G_c), with l_c the chunk's latency (Playout.latency) and G_c the chain
// from the chunk before: its production time plus, in request mode, the
// time to first audio of the next request (D_{c-1} - R_{c-1} + TTFA); in
// stream mode its production time (D_{c-1} - R_{c-1}); in parallel mode
// no chain at all. Per first delayed chunk c0 this gives d <= min_{k >=
// c0} (M_k - l_k - s_k) with M_k = min(L_k, M_{k+1} - G_{k+1}): one
// backward pass, O(n). When the player has not started before c0 the start
// moves with the delay: the answer is Unbounded if no chunk waited for the
// synthesizer (and the start waited for no earlier chunk), and otherwise
// this bound, which is then conservative.
func (p *Playout) tolerance() {
	n := len(p.at)
	C := len(p.Chunks)
	if cap(p.Tolerance) >= n {
		p.Tolerance = p.Tolerance[:n]
	} else {
		p.Tolerance = make([]time.Duration, n)
	}
	if C == 0 {
		for i := range p.Tolerance {
			p.Tolerance[i] = Unbounded
		}
		return
	}
	chunks, tol := p.Chunks, p.Tolerance
	startChunk := p.startChunk
	parallel := p.mode == modeParallel
	var chain time.Duration // besides production, between chunks: request mode's next time to first audio
	if p.mode == modeRequest {
		chain = p.cfg.Synth.TTFA
	}
	lat0, latN := p.latency(0), p.latency(1) // the first chunk's, every other's
	slow := p.cfg.Synth.RTF > 1              // frames can come late: allowance
	// Walking chunks backward, each step knows the tolerance next of the
	// streamed chunks whose first delayed speech chunk is the one after:
	// those from this chunk's Trigger on (a timer's release can have an
	// earlier Trigger than the release before it).
	next := Unbounded
	k := len(tol) - 1
	M := Unbounded
	T := Unbounded
	backlog := p.startHeld // some chunk >= c0 (or the start) waited
	end := chunks[C-1].PlayEnd
	var tail time.Duration // audio of the chunks after c
	c := C - 1
	if !slow && !parallel {
		// the usual case, the chunks after the one that started the
		// player (c > startChunk >= 0: not the first) alone, in a loop
		// small enough to keep its state in registers
		for ; c > startChunk; c-- {
			ch := &chunks[c]
			for ; k >= ch.Trigger; k-- {
				tol[k] = next
			}
			L := end - tail - ch.Audio
			tail += ch.Audio
			if M != Unbounded {
				M -= ch.Done - ch.Ready + chain
			}
			M = min(M, L)
			if M != Unbounded {
				T = min(T, M-latN-ch.Release)
			}
			backlog = backlog || ch.Ready > ch.Release+latN
			next = Unbounded
			if T != Unbounded {
				next = max(0, T)
			}
		}
	}
	for ; c >= 0; c-- {
		ch := &chunks[c]
		for ; k >= ch.Trigger; k-- {
			tol[k] = next
		}
		L := Unbounded
		if c > startChunk {
			// the latest first-audio time that keeps the turn's last
			// audio, and so its total silence, where it is
			L = end - tail - ch.Audio
			if slow {
				L -= p.allowance(ch)
			}
		}
		tail += ch.Audio
		// M holds M_{c+1}: follow the chain from chunk c to chunk c+1
		if M != Unbounded {
			M -= ch.Done - ch.Ready + chain
			if parallel {
				M = Unbounded
			}
		}
		M = min(M, L)
		l := latN
		if c == 0 {
			l = lat0
		}
		if M != Unbounded {
			T = min(T, M-l-ch.Release)
		}
		backlog = backlog || ch.Ready > ch.Release+l
		// the tolerance when c is the first chunk delayed
		next = Unbounded
		if T != Unbounded && (c > startChunk || backlog) {
			next = max(0, T)
		}
	}
	for ; k >= 0; k-- {
		tol[k] = next
	}
}

// minPreroll finds the smallest pre-roll with no underrun: the player must
// start no earlier than S* = max_c(ready_c + allowance_c - audio before
// c). The player holds audio in order, so what it has buffered at a time
// is the audio of the chunks whole by then and the frames ready of the
// next; any pre-roll above what it holds just before S* starts it at S*
// or later. MinPreroll is the smallest whole millisecond above that, a
// value that works when passed back as Config.Preroll (or --preroll).
func (p *Playout) minPreroll() {
	p.MinPreroll = 0
	if len(p.Chunks) == 0 {
		return
	}
	S := p.earliestStart // max over the chunks, as they were released
	var ready time.Duration
	for i := range p.Chunks {
		c := &p.Chunks[i]
		if c.Ready >= S {
			break
		}
		if p.cfg.Synth.RTF == 0 {
			ready += c.Audio
			continue
		}
		// frames k with Ready + frameOffset(k) < S
		frames := time.Duration(float64(S-c.Ready) / (float64(p.frame) * p.cfg.Synth.RTF))
		for frames > 0 && p.frameOffset(frames-1) >= S-c.Ready {
			frames--
		}
		for p.frameOffset(frames) < S-c.Ready && frames*p.frame < c.Audio {
			frames++
		}
		ready += min(c.Audio, frames*p.frame)
		if frames*p.frame < c.Audio {
			break // the chunks after it wait behind it
		}
	}
	if ready == 0 {
		return
	}
	p.MinPreroll = (ready/time.Millisecond + 1) * time.Millisecond
}

// allText reports whether every spoken chunk of t carries text.
func allText(t *Turn) bool {
	for i := range t.Chunks {
		if c := &t.Chunks[i]; c.Textless && !c.Reasoning {
			return false
		}
	}
	return true
}

// Play runs a whole recorded turn through a fresh Playout.
func Play(cfg Config, t *Turn) (*Playout, error) {
	p, err := NewPlayout(cfg, t.ID)
	if err != nil {
		return nil, err
	}
	if err := p.PlayTurn(t); err != nil {
		return nil, err
	}
	return p, nil
}

// PlayTurn resets the Playout and runs a whole recorded turn through it.
// A turn with the same text as the turn played before it (every chunk's
// text, tokens and kind alike, times aside, and the Text of text-less
// tokens, which the engine never reads) reuses what that turn's text
// made, when the policy's releases depend on the text alone: the result
// is the same.
func (p *Playout) PlayTurn(t *Turn) error {
	if p.memo && p.replay(t) {
		return nil
	}
	p.Reset(t.ID)
	if _, ok := p.cfg.Durations.(ContextDurations); ok && p.cfg.TokenAudio <= 0 && allText(t) {
		p.whole = SpokenText(t)
	}
	if p.reuse {
		p.recording = true
		p.log = p.log[:0]
	}
	for i := range t.Chunks {
		if err := p.push(&t.Chunks[i]); err != nil {
			p.recording = false
			return err
		}
	}
	p.End()
	if p.recording {
		p.recording = false
		p.keys = p.keys[:0]
		p.memo = true
		for i := range t.Chunks {
			c := &t.Chunks[i]
			if c.Tokens > logLimit {
				p.memo = false
				break
			}
			p.keys = append(p.keys, turnKey{text: c.Text, tokens: int32(c.Tokens), textless: c.Textless, reasoning: c.Reasoning})
		}
		p.textless = p.memo && len(p.keys) > 0
		for i := range p.keys {
			if k := &p.keys[i]; !k.textless || k.reasoning || k.tokens != p.keys[0].tokens {
				p.textless = false
				break
			}
		}
	}
	return p.err
}

// replay plays turn t from the log of the turn before, which had the same
// text; it reports false, having played nothing that counts, when t's text
// differs or its chunks are out of order (the caller then plays it in
// full, and finds the error).
func (p *Playout) replay(t *Turn) bool {
	n := len(t.Chunks)
	if n != len(p.keys) {
		return false
	}
	p.resetTiming(t.ID)
	// the text first, in a pass over the turn alone: every chunk as the
	// logged turn's, and in time order
	at := slices.Grow(p.at[:0], n)[:n]
	keys := p.keys[:n]
	prev := time.Duration(0)
	if p.textless {
		// the usual benchmark file: text-less tokens alone, whose Text
		// the engine never reads
		tokens := int(keys[0].tokens)
		for i := range t.Chunks {
			c := &t.Chunks[i]
			if c.At < prev || !c.Textless || c.Reasoning || c.Tokens != tokens {
				return false // c.At < 0 too: prev starts at 0
			}
			prev = c.At
			at[i] = prev
		}
		keys = nil
	}
	for i := range keys {
		c, k := &t.Chunks[i], &keys[i]
		if c.At < prev || c.Textless != k.textless || c.Reasoning != k.reasoning || c.Tokens != int(k.tokens) ||
			len(c.Text) != len(k.text) || unsafe.StringData(c.Text) != unsafe.StringData(k.text) && c.Text != k.text {
			return false // c.At < 0 too: prev starts at 0
		}
		prev = c.At
		at[i] = prev
	}
	p.at = at
	p.replaying = true
	defer func() { p.replaying = false }()
	// once the player has started, a chunk that plays whole on arrival of
	// its audio (no frame can come late: RTF <= 1) and that no parallel
	// request can overtake is placed here; the rest go through play
	inline := p.cfg.Synth.RTF <= 1 && p.mode != modeParallel
	ttfa, cont := p.cfg.Synth.TTFA, p.cfg.Synth.Continuation
	if p.mode != modeStream {
		cont = ttfa
	}
	// the player's and synthesizer's state in locals, for the loop's sake,
	// put back before anything else reads it
	log, j := p.log, 0
	for ; j < len(log) && (!inline || !p.started); j++ {
		l := &log[j]
		release := prev // End's flush, at the last arrival
		if !l.end {
			release = at[l.trigger]
		}
		p.replayChunk(l, release)
	}
	if j < len(log) && !log[j].end {
		// End's flush is the log's last entry, if any: the rest are
		// releases on arrival
		rest := log[j:]
		if rest[len(rest)-1].end {
			rest = rest[:len(rest)-1]
		}
		j += len(rest)
		if p.mode == modeRequest {
			p.replayRequests(rest, at, ttfa)
		} else {
			p.replayStream(rest, at, cont)
		}
	}
	for ; j < len(log); j++ {
		p.replayChunk(&log[j], prev) // End's flush, at the last arrival
	}
	p.finish()
	return true
}

// replayStream places the logged chunks of a stream synthesizer released
// on arrival (times at) with the player running, at RTF <= 1: play and
// schedule, inlined, with their state in locals (put back before anything
// else reads it). cont is every chunk's latency (none is the first). Its
// inner loop calls nothing, so that its state stays in registers: a gap
// leaves it for the outer loop, which records the gap and goes on.
func (p *Playout) replayStream(log []loggedChunk, at []time.Duration, cont time.Duration) {
	synthDone, earliest, speech, playhead := p.synthDone, p.earliestStart, p.speech, p.playhead
	base := len(p.Chunks)
	all := slices.Grow(p.Chunks, len(log))[:base+len(log)]
	chunks := all[base:]
	for j := 0; j < len(log); {
		var ready time.Duration
		for ; j < len(log); j++ {
			l := &log[j]
			release := at[l.trigger]
			start := release
			ready = max(release+cont, synthDone)
			done := ready + l.produce
			synthDone = max(synthDone, done)
			ch := &chunks[j]
			l.set(ch, release)
			ch.Start, ch.Ready, ch.Done = start, ready, done
			earliest = max(earliest, ready-speech) // earliest, with no allowance at RTF <= 1
			speech += l.audio
			if ready > playhead {
				break // to the gap, out of the loop that calls nothing
			}
			ch.PlayStart = playhead
			playhead += l.audio
			ch.PlayEnd = playhead
		}
		if j == len(log) {
			break
		}
		// the player waits for chunk i
		i := base + j
		p.synthDone, p.earliestStart, p.speech, p.Chunks, p.scheduled = synthDone, earliest, speech, all[:i+1], i
		p.gap(i, playhead, ready-playhead)
		playhead = ready
		ch := &chunks[j]
		ch.PlayStart = playhead
		playhead += ch.Audio
		ch.PlayEnd = playhead
		j++
	}
	p.synthDone, p.earliestStart, p.speech, p.playhead = synthDone, earliest, speech, playhead
	p.Chunks, p.scheduled = all, len(all)
}

// replayRequests is replayStream for a synthesizer that takes a request
// per chunk, one after another, each paying ttfa.
func (p *Playout) replayRequests(log []loggedChunk, at []time.Duration, ttfa time.Duration) {
	synthDone, earliest, speech, playhead := p.synthDone, p.earliestStart, p.speech, p.playhead
	base := len(p.Chunks)
	all := slices.Grow(p.Chunks, len(log))[:base+len(log)]
	chunks := all[base:]
	for j := 0; j < len(log); {
		var ready time.Duration
		for ; j < len(log); j++ {
			l := &log[j]
			release := at[l.trigger]
			start := max(release, synthDone)
			ready = start + ttfa
			done := ready + l.produce
			synthDone = max(synthDone, done)
			ch := &chunks[j]
			l.set(ch, release)
			ch.Start, ch.Ready, ch.Done = start, ready, done
			earliest = max(earliest, ready-speech) // earliest, with no allowance at RTF <= 1
			speech += l.audio
			if ready > playhead {
				break // to the gap, out of the loop that calls nothing
			}
			ch.PlayStart = playhead
			playhead += l.audio
			ch.PlayEnd = playhead
		}
		if j == len(log) {
			break
		}
		// the player waits for chunk i
		i := base + j
		p.synthDone, p.earliestStart, p.speech, p.Chunks, p.scheduled = synthDone, earliest, speech, all[:i+1], i
		p.gap(i, playhead, ready-playhead)
		playhead = ready
		ch := &chunks[j]
		ch.PlayStart = playhead
		playhead += ch.Audio
		ch.PlayEnd = playhead
		j++
	}
	p.synthDone, p.earliestStart, p.speech, p.playhead = synthDone, earliest, speech, playhead
	p.Chunks, p.scheduled = all, len(all)
}

// replayChunk releases a logged speech chunk at at.
func (p *Playout) replayChunk(l *loggedChunk, at time.Duration) {
	c := p.newChunk()
	l.set(c, at)
	c.Start, c.Ready, c.Done, c.PlayStart, c.PlayEnd = 0, 0, 0, 0, 0
	p.speech += c.Audio
	i := len(p.Chunks) - 1
	p.synthesize(c, i, at)
	p.play(c, i)
}
