package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"

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
	// Preroll delays the player's start until this much audio is ready
	// (or the whole turn's speech, if shorter); zero starts at the first
	// audio.
	Preroll time.Duration
	// Interruption is the shortest underrun graded an interruption.
	Interruption time.Duration
	// SampleRate is the rate underruns are counted in samples at.
	SampleRate int
	// StallFactor is how many times the turn's mean inter-token latency an
	// ITL must exceed to be called a stall.
	StallFactor float64
	// TokenAudio, when positive, speaks every token for exactly this long,
	// text or not, instead of the voice model: with token chunking, no
	// synthesizer latency and RTF 0 the player then plays each token for
	// TokenAudio the moment it arrives.
	TokenAudio time.Duration
}

// DefaultConfig returns a word-streaming synthesizer with 100 ms to first
// audio and RTF 0.1, the built-in voice, immediate start and a 150 ms
// interruption threshold.
func DefaultConfig() Config {
	p, _ := tts.ParsePolicy(DefaultPolicy)
	return Config{
		Voice:        tts.DefaultVoice(),
		Policy:       p,
		Synth:        tts.Synth{TTFA: DefaultTTFA, RTF: DefaultRTF},
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
// turn. A Playout is not safe for concurrent use.
type Playout struct {
	cfg       Config
	chunker   tts.Chunker
	meter     tts.Meter
	tokenTime time.Duration
	frame     time.Duration

	turn   string
	at     []time.Duration // per streamed chunk: arrival
	end    []int           // per streamed chunk: text offset after it
	audio  []time.Duration // per streamed chunk: audio up to its end
	meters []tts.Meter     // per streamed chunk: meter before it (text turns)
	text   []byte
	kind   []uint8 // per streamed chunk: kindText, kindTextless, kindReasoning

	hasText           bool // some chunk carried text: positions can be told
	metered           bool // some chunk's audio came from the meter: meters is kept
	released          int
	releasedAudio     time.Duration
	cursor            int
	synthDone         time.Duration
	timerOrigin       int
	timerArmed        bool
	timerDeadline     time.Duration
	started, ended    bool
	startAt, playhead time.Duration
	startChunk        int // the chunk whose audio started the player
	scheduled         int // chunks handed to the player
	readyAudio        time.Duration
	spokenRecords     int

	// Chunks are the speech chunks released so far.
	Chunks []SpeechChunk
	// Underruns are the gaps found so far, in time order.
	Underruns []Underrun
	// Tolerance holds, after End, the stall tolerance after each streamed
	// chunk: the largest extra delay of everything after it that adds no
	// underrun (Unbounded when none can).
	Tolerance []time.Duration
	// MinPreroll is, after End, the smallest pre-roll with no underrun.
	MinPreroll time.Duration
}

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
	p := &Playout{cfg: cfg, chunker: cfg.Policy.NewChunker()}
	p.tokenTime = cfg.Voice.TokenTime()
	if cfg.TokenAudio > 0 {
		p.tokenTime = cfg.TokenAudio
	}
	p.frame = cfg.Synth.FrameSize()
	p.Reset(id)
	return p, nil
}

// Reset clears the Playout for a new turn named id, keeping its memory.
func (p *Playout) Reset(id string) {
	p.chunker.Reset()
	p.meter = p.cfg.Voice.Meter()
	p.turn = id
	p.at, p.end, p.audio, p.meters = p.at[:0], p.end[:0], p.audio[:0], p.meters[:0]
	p.text, p.kind = p.text[:0], p.kind[:0]
	p.hasText, p.metered = false, false
	p.released, p.releasedAudio, p.cursor = 0, 0, 0
	p.synthDone = 0
	p.timerOrigin, p.timerArmed = 0, false
	p.started, p.ended = false, false
	p.startAt, p.playhead, p.startChunk, p.scheduled, p.readyAudio = 0, 0, 0, 0, 0
	p.spokenRecords = 0
	p.Chunks, p.Underruns, p.Tolerance = p.Chunks[:0], p.Underruns[:0], p.Tolerance[:0]
	p.MinPreroll = 0
}

// Config returns the configuration the Playout runs with.
func (p *Playout) Config() Config { return p.cfg }

// Started reports whether the player has started, and when.
func (p *Playout) Started() (time.Duration, bool) { return p.startAt, p.started }

// Ended reports whether End has been called.
func (p *Playout) Ended() bool { return p.ended }

// Speech returns the audio released to the synthesizer so far.
func (p *Playout) Speech() time.Duration { return p.releasedAudio }

// Buffered returns the audio already released but not yet played at time
// t: what the listener still has in hand.
func (p *Playout) Buffered(t time.Duration) time.Duration {
	if !p.started {
		return p.releasedAudio
	}
	if p.scheduled < len(p.Chunks) {
		// chunks waiting behind the player: all their audio is still ahead
		var d time.Duration
		for _, c := range p.Chunks[p.scheduled:] {
			d += c.Audio
		}
		return max(0, p.playhead-t) + d
	}
	return max(0, p.playhead-t)
}

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
	if p.ended {
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
func (p *Playout) Push(c Chunk) error {
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
		p.audio = append(p.audio, p.releasedAudio+p.unreleasedAudio())
		if p.metered {
			p.meters = append(p.meters, p.meter)
		}
		return nil
	}
	p.spokenRecords++
	var text string
	var a time.Duration
	switch {
	case c.Textless:
		text = tts.TextlessToken
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
				p.meters = append(p.meters, p.meter)
			}
		}
		p.meters = append(p.meters, p.meter)
		text = c.Text
		a = p.meter.Add(text)
		p.kind = append(p.kind, kindText)
	}
	if p.metered && p.kind[k] != kindText {
		p.meters = append(p.meters, p.meter)
	}
	prev := time.Duration(0)
	if k > 0 {
		prev = p.audio[k-1]
	}
	p.text = append(p.text, text...)
	p.end = append(p.end, len(p.text))
	p.audio = append(p.audio, prev+a)
	rel := p.chunker.Append(c.At, text)
	if d, armed := p.chunker.Deadline(); armed && (!p.timerArmed || d != p.timerDeadline) {
		p.timerOrigin, p.timerDeadline, p.timerArmed = k, d, true
	} else if !armed {
		p.timerArmed = false
	}
	if rel > p.released {
		p.release(rel, c.At, k, false)
	}
	return nil
}

// unreleasedAudio is the audio of text appended but not yet released.
func (p *Playout) unreleasedAudio() time.Duration {
	if n := len(p.audio); n > 0 {
		return p.audio[n-1] - p.releasedAudio
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
		p.release(rel, last, len(p.at)-1, false)
	}
	if !p.started && len(p.Chunks) > 0 {
		c := &p.Chunks[len(p.Chunks)-1]
		p.start(c.Ready+p.lastFrameOffset(c), len(p.Chunks)-1)
	}
	p.ended = true
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
	m := p.meters[r]
	return before + m.Add(string(p.text[from:off]))
}

// recordAt returns the streamed chunk holding byte off.
func (p *Playout) recordAt(off int) int {
	lo, hi := 0, len(p.end)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.end[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return min(lo, len(p.end)-1)
}

func (p *Playout) release(rel int, at time.Duration, trigger int, timer bool) {
	total := p.audioAt(rel)
	a := total - p.releasedAudio
	from := p.released
	p.released, p.releasedAudio = rel, total
	if a <= 0 {
		return
	}
	c := SpeechChunk{
		From: from, To: rel,
		First: p.recordAt(from), Last: p.recordAt(rel - 1),
		Trigger: trigger, Timer: timer,
		Audio: a, Release: at,
	}
	c.Start = max(at, p.synthDone)
	c.Ready = c.Start + p.cfg.Synth.TTFA
	c.Done = c.Start + p.cfg.Synth.Busy(a)
	p.synthDone = c.Done
	p.Chunks = append(p.Chunks, c)
	if !p.started {
		need := p.cfg.Preroll
		if need <= 0 {
			p.start(c.Ready, len(p.Chunks)-1)
			return
		}
		if p.readyAudio+a >= need {
			x := need - p.readyAudio
			k := (x+p.frame-1)/p.frame - 1
			p.start(c.Ready+p.frameOffset(k), len(p.Chunks)-1)
			return
		}
		p.readyAudio += a
		return
	}
	p.schedule()
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
}

func (p *Playout) itl(k int) time.Duration {
	if k <= 0 {
		return p.at[0]
	}
	return p.at[k] - p.at[k-1]
}

// gap records the gap before chunk i and finds its cause.
func (p *Playout) gap(i int, at, d time.Duration) {
	u := p.newUnderrun(i, at, d)
	c := &p.Chunks[i]
	prev := &p.Chunks[i-1]
	ttfa := p.cfg.Synth.TTFA
	u.Position = p.position(prev.To)
	switch {
	case c.Release+ttfa <= at:
		u.Cause = CauseSynthesizer
		u.Token = c.First
		u.ITL = p.itl(u.Token)
	case max(p.at[c.Last], prev.Done)+ttfa <= at:
		u.Cause = CauseHeld
		u.Token = c.Trigger
		u.ITL = p.itl(u.Token)
		u.Tolerance = max(0, u.ITL-d)
	default:
		j := c.Last
		for k := prev.Last + 1; k <= c.Last; k++ {
			if p.itl(k) > p.itl(j) {
				j = k
			}
		}
		u.Token, u.ITL = j, p.itl(j)
		u.Tolerance = max(0, u.ITL-d)
		typical := time.Duration(0)
		if c.Last >= 2 {
			typical = (p.at[c.Last] - p.at[0] - u.ITL) / time.Duration(c.Last-1)
		}
		perRecord := p.audio[c.Last] / time.Duration(max(1, p.spokenRecords))
		switch {
		case typical > 0 && float64(u.ITL) > p.cfg.StallFactor*float64(typical),
			typical == 0 && u.ITL > perRecord:
			u.Cause = CauseStall
		case typical > perRecord:
			u.Cause = CausePace
		default:
			u.Cause = CauseStartup
		}
	}
	p.Underruns = append(p.Underruns, u)
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
// all chunks after k that adds no underrun. Delaying them delays the
// release s_c of every speech chunk c released by a later chunk; with the
// synthesizer's busy times X_c, chunk c stays gap-free when
// max_{k in [c0,c]}(s_k + X_k + ... + X_{c-1}) + d + TTFA <= L_c, L_c being
// its latest gap-free first-audio time. That gives, for each first
// delayed chunk c0, d <= min_{k >= c0} (M_k - TTFA - s_k) with
// M_k = min(L_k, M_{k+1} - X_k): two backward passes, O(n).
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
	// Backward pass: suffix[c] holds min_{k>=c} G_k; backlog[c] whether any
	// chunk >= c waited for the synthesizer. Reuse the chunks' PlayEnd of
	// the previous chunk as L.
	ttfa := p.cfg.Synth.TTFA
	M := Unbounded
	T := Unbounded
	backlog := false
	// Walk chunks backward while walking streamed chunks backward, so
	// each streamed chunk k gets T for c0(k) = first chunk with Trigger > k.
	k := n - 1
	for c := C - 1; c >= -1; c-- {
		// assign tolerances to streamed chunks whose c0 is c+1
		lowTrigger := -1
		if c >= 0 {
			lowTrigger = p.Chunks[c].Trigger
		}
		for ; k >= 0 && k >= lowTrigger; k-- {
			switch {
			case c+1 >= C || T == Unbounded:
				p.Tolerance[k] = Unbounded
			case c+1 <= p.startChunk && !backlog:
				p.Tolerance[k] = Unbounded
			default:
				p.Tolerance[k] = max(0, T)
			}
		}
		if c < 0 {
			break
		}
		ch := &p.Chunks[c]
		L := Unbounded
		if c > p.startChunk {
			L = p.Chunks[c-1].PlayEnd - p.allowance(ch)
		}
		X := ch.Done - ch.Start
		if M != Unbounded {
			M -= X
		}
		M = min(M, L)
		if M != Unbounded {
			T = min(T, M-ttfa-ch.Release)
		}
		if ch.Start > ch.Release {
			backlog = true
		}
	}
}

// minPreroll finds the smallest pre-roll with no underrun: the player must
// start no earlier than S* = max_c(ready_c + allowance_c - audio before
// c), so the pre-roll is the audio ready strictly before S*, plus one
// sample.
func (p *Playout) minPreroll() {
	p.MinPreroll = 0
	if len(p.Chunks) == 0 {
		return
	}
	var before time.Duration
	S := time.Duration(math.MinInt64)
	for i := range p.Chunks {
		c := &p.Chunks[i]
		S = max(S, c.Ready+p.allowance(c)-before)
		before += c.Audio
	}
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
	}
	if ready == 0 {
		return
	}
	p.MinPreroll = ready + time.Duration(math.Ceil(float64(time.Second)/float64(p.cfg.SampleRate)))
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
func (p *Playout) PlayTurn(t *Turn) error {
	p.Reset(t.ID)
	for _, c := range t.Chunks {
		if err := p.Push(c); err != nil {
			return err
		}
	}
	p.End()
	return nil
}
