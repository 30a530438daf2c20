package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

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
	tools  []ToolCall      // the turn's tool calls (PlayTurn, SetToolCalls)
	toolAt int             // the tool calls before it have ended the LLM's reply (flushTools)
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
	heard             []Underrun      // hear's other slice: the player's underruns of the turn before
	toolChunks        []int           // the chunks a tool-call silence comes before, in order (toolSegments)
	streams           []int           // stream mode: the speech chunks after a tool call, which open a stream (endReply)
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
	// interruptionsOnly keeps only the first gap that is an interruption:
	// a search that asks whether a timing interrupts (MaxTPOT) then holds
	// no list of every gap of a turn of 262,144 tokens. Set only where
	// nothing else reads the gaps: no tool calls, transport or filler.
	interruptionsOnly bool
	replaying         bool // PlayTurn is replaying the log: causes wait for End
	keys              []turnKey
	textless          bool // every key is the first, of text-less tokens (not reasoning)
	log               []loggedChunk

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
	p.tools = nil
	p.resetTiming(id)
}

// maxReused is the most streamed chunks a Playout keeps room for once Trim
// has run: an ordinary turn's buffers are kept for the next turn, a huge
// one's (a turn of the readers' 262,144 tokens) let go.
const maxReused = 1 << 14

// emptied returns s emptied, keeping its room unless it is over maxReused
// elements.
func emptied[T any](s []T) []T {
	if cap(s) > maxReused {
		return nil
	}
	return s[:0]
}

// Trim lets go of the buffers a huge turn grew (room for more than
// maxReused streamed chunks), emptying the Playout as Reset does, so that a
// Playout kept for reuse (by a Guard between turns, a report, a search)
// holds memory for an ordinary turn, not for the largest it ever played.
// After an ordinary turn it does nothing: what the next turn reuses stays.
func (p *Playout) Trim() {
	if cap(p.at) <= maxReused {
		return
	}
	p.Reset("")
	p.end, p.audio, p.meters = emptied(p.end), emptied(p.audio), emptied(p.meters)
	p.text, p.kind = emptied(p.text), emptied(p.kind)
	p.keys, p.log = emptied(p.keys), emptied(p.log)
	p.at, p.sortedITL, p.streams = emptied(p.at), emptied(p.sortedITL), emptied(p.streams)
	p.Chunks, p.Underruns, p.Tolerance = emptied(p.Chunks), emptied(p.Underruns), emptied(p.Tolerance)
	p.gapKinds, p.arrivals, p.heard = emptied(p.gapKinds), emptied(p.arrivals), emptied(p.heard)
}

// resetTiming clears what depends on the turn's times, keeping the state
// its text made.
func (p *Playout) resetTiming(id string) {
	p.turn = id
	p.at = p.at[:0]
	p.sortedN = 0
	p.synthDone, p.allReady, p.startHeld = 0, 0, false
	p.timerOrigin, p.timerArmed = 0, false
	p.toolAt = 0
	p.streams = p.streams[:0]
	p.started, p.ended = false, false
	p.startAt, p.playhead, p.startChunk, p.scheduled, p.readyAudio = 0, 0, 0, 0, 0
	p.Chunks, p.Underruns, p.Tolerance = p.Chunks[:0], p.Underruns[:0], p.Tolerance[:0]
	p.gapKinds = p.gapKinds[:0]
	p.arrivals = p.arrivals[:0]
	p.speech, p.err, p.whole = 0, nil, ""
	p.earliestStart = math.MinInt64
	p.MinPreroll = 0
}

// SetToolCalls gives the turn being played its tool calls (after Reset,
// before End): a gap they explain takes CauseTool.
func (p *Playout) SetToolCalls(tc []ToolCall) { p.tools = tc }

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
	if p.toolAt < len(p.tools) {
		p.flushTools(c.At)
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

// flushTools ends the LLM's reply at each tool call that starts before
// t: the frameworks end the model's response there (Pipecat's
// LLMFullResponseEndFrame, LiveKit's end of the generation's text
// stream), and their text aggregators let go of what they hold, so the
// text before a tool call is spoken before the call returns.
func (p *Playout) flushTools(t time.Duration) {
	for ; p.toolAt < len(p.tools) && p.tools[p.toolAt].At < t; p.toolAt++ {
		p.endReply(p.tools[p.toolAt].At)
	}
}

// endReply ends the LLM's reply at time at (no earlier than the last
// chunk): the policy lets go of what it holds.
func (p *Playout) endReply(at time.Duration) {
	k := len(p.at) - 1
	if k < 0 {
		return // nothing said before it
	}
	at = max(at, p.at[k])
	p.Advance(at)
	p.timerArmed = false
	if rel := p.chunker.Flush(); rel > p.released {
		p.release(rel, at, k, false)
	}
	if n := len(p.streams); p.mode == modeStream && (n == 0 || p.streams[n-1] != len(p.Chunks)) {
		p.streams = append(p.streams, len(p.Chunks)) // the reply after it is a new stream
	}
}

// ToolCall starts a tool call of the turn being pushed, at tc.At (no
// earlier than the last chunk): the LLM's reply ends there, so the policy
// lets go of what it holds at once, and the gap the call explains takes
// CauseTool. The chunks after it arrive once it has returned; its
// Duration may come then (ToolReturned). A live feed calls it (Guard);
// PlayTurn takes a turn's tool calls whole, and SetToolCalls gives them
// before the chunks.
func (p *Playout) ToolCall(tc ToolCall) error {
	if p.ended {
		return fmt.Errorf("%w: turn %q has ended", ErrOrder, p.turn)
	}
	if n := len(p.at); n > 0 && tc.At < p.at[n-1] {
		return fmt.Errorf("%w: turn %q tool call at %v, before chunk %d at %v", ErrOrder, p.turn, tc.At, n-1, p.at[n-1])
	}
	if n := len(p.tools); n > 0 && tc.At < p.tools[n-1].At {
		return fmt.Errorf("%w: turn %q tool call at %v, before the one at %v", ErrOrder, p.turn, tc.At, p.tools[n-1].At)
	}
	p.flushTools(tc.At)
	// a new array: the tools may be a caller's (SetToolCalls)
	p.tools = append(p.tools[:len(p.tools):len(p.tools)], tc)
	p.endReply(tc.At)
	p.toolAt = len(p.tools)
	return nil
}

// ToolReturned notes that the last tool call of ToolCall returned at at.
func (p *Playout) ToolReturned(at time.Duration) {
	if n := len(p.tools); n > 0 && at >= p.tools[n-1].At {
		p.tools[n-1].Duration = at - p.tools[n-1].At
	}
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
	p.toolSegments()
	p.tolerance()
	p.minPreroll()
	p.hear()
}
