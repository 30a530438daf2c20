package pipeline

import (
	"math"
	"slices"
	"time"
	"unsafe"
)

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
	if len(t.ToolCalls) > 0 {
		// a tool call flushes the policy (flushTools): the releases
		// depend on where it falls, not on the text alone
		p.memo = false
	}
	if p.memo {
		p.tools = t.ToolCalls
		if p.replay(t) {
			return nil
		}
	}
	p.Reset(t.ID)
	p.tools = t.ToolCalls
	if _, ok := p.cfg.Durations.(ContextDurations); ok && p.cfg.TokenAudio <= 0 && allText(t) {
		p.whole = SpokenText(t)
	}
	if p.reuse && len(t.ToolCalls) == 0 {
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
		p.replayOnArrival(rest, at, cont, p.mode == modeRequest)
	}
	for ; j < len(log); j++ {
		p.replayChunk(&log[j], prev) // End's flush, at the last arrival
	}
	p.finish()
	return true
}

// replayOnArrival places the logged chunks released on arrival (times at)
// with the player running, at RTF <= 1: synthesize, play and schedule,
// inlined, with their state in locals (put back before anything else
// reads it). A stream synthesizer (queued false) gives each chunk's first
// audio lat after its release, or as the audio before it is done; one
// that takes a request per chunk, one after another (queued), starts each
// as its release and the request before allow, and pays lat then. Both
// are the one rule, start = max(release, min(synthDone, gate)) and ready
// = max(release+lat, synthDone+after), taken without a branch. Its inner
// loop calls nothing, so that its state stays in registers: a gap leaves
// it for the outer loop, which records the gap and goes on.
func (p *Playout) replayOnArrival(log []loggedChunk, at []time.Duration, lat time.Duration, queued bool) {
	gate, after := time.Duration(math.MinInt64), time.Duration(0)
	if queued {
		gate, after = math.MaxInt64, lat
	}
	synthDone, earliest, speech, playhead := p.synthDone, p.earliestStart, p.speech, p.playhead
	base := len(p.Chunks)
	all := slices.Grow(p.Chunks, len(log))[:base+len(log)]
	chunks := all[base:]
	for j := 0; j < len(log); {
		var ready time.Duration
		for ; j < len(log); j++ {
			l := &log[j]
			release := at[l.trigger]
			start := max(release, min(synthDone, gate))
			ready = max(release+lat, synthDone+after)
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
		playhead = ready // (no filler holds it: PlayTurn reuses no turn with tool calls)
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
