package pipeline

import (
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// hear replaces the player's underruns with the gaps a listener hears
// through Config.Transport, once the turn has played out: the turn's audio
// is cut into the transport's frames, each frame leaves when its last
// audio is ready (and, for a drifting sender, no sooner than its sleep
// allows), and the listener plays frames back to back on the transport's
// clock. A heard gap keeps the cause of the player's underrun in the same
// speech chunks; one the player did not have is the transport's own.
// The player's start becomes the listener's.
func (p *Playout) hear() {
	tr := &p.cfg.Transport
	if tr.None() || len(p.Chunks) == 0 {
		return
	}
	h := hearing{p: p, tr: tr, own: p.Underruns, out: p.heard[:0], lastOwn: -1}
	s := tr.NewSender(h.frame)
	perChunk := p.mode != modeStream // a request per chunk: each is a segment
	for i := range p.Chunks {
		c := &p.Chunks[i]
		if c.Audio <= 0 {
			continue
		}
		h.chunk = i
		if i > 0 && p.toolBetween(i) {
			// the LLM's reply ended in a tool call: the framework flushes
			// the synthesis, and the transport sends what it held
			s.End(p.Chunks[i-1].Done)
		}
		if s.Silent(c.Ready) {
			// what the sender held goes out at the idle deadline, before
			// the bot counts as stopped (Add would send it too, but with
			// the stop already noted)
			s.Expire()
			h.stopped = true // the bot has stopped speaking until this chunk's audio
		}
		p.readyFrames(c, i, s)
		if perChunk {
			s.End(c.Done)
		}
	}
	s.End(p.Chunks[len(p.Chunks)-1].Done)
	p.heard, p.Underruns = p.Underruns, h.out
	if h.started {
		p.startAt = h.start
	}
}

// toolBetween reports whether a tool call began between the last token
// of speech chunk i-1 and the first of chunk i.
func (p *Playout) toolBetween(i int) bool {
	last, first := p.Chunks[i-1].Last, p.Chunks[i].First
	if len(p.tools) == 0 || last < 0 || first >= len(p.at) {
		return false
	}
	from, to := p.at[last], p.at[first]
	for _, tc := range p.tools {
		if tc.At >= from && tc.At <= to {
			return true
		}
	}
	return false
}

// hearing is the listener's side of one turn through a transport.
type hearing struct {
	p   *Playout
	tr  *tts.Transport
	own []Underrun // the player's underruns, in time order
	out []Underrun

	chunk          int  // the speech chunk whose audio goes to the sender
	next           int  // the first of own not yet looked at
	lastOwn        int  // the last of own a heard gap took its cause from (-1: none)
	started        bool // the listener has heard audio
	stopped        bool // the next gap is one in which the bot stopped speaking
	start, playEnd time.Duration
	pad            time.Duration // the silence that fills the last frame played after playEnd
}

// frame plays one frame as the transport sent it: back to back with the
// one before, or, when it comes later than that one's end (and padding),
// at the next tick of the listener's clock.
func (h *hearing) frame(f tts.Sent) {
	if !h.started {
		t := max(f.At, h.p.startAt)
		h.started, h.start, h.playEnd = true, t, t
	} else if free := h.playEnd + h.pad; f.At > free || h.pad > 0 {
		t := free
		if f.At > free {
			t = h.onTick(free, f.At)
		}
		last := f.Chunk
		if f.Stopped {
			last = h.chunk // the framework sent what it held because this chunk was late
		}
		h.gap(f.From, last, h.playEnd, t-h.playEnd)
		h.playEnd = t
	}
	h.playEnd += f.Audio
	h.pad = f.Length - f.Audio
}

// onTick is the first tick of the listener's clock, which runs on from
// from, at or after t.
func (h *hearing) onTick(from, t time.Duration) time.Duration {
	if h.tr.Tick <= 0 || t <= from {
		return t
	}
	k := (t - from + h.tr.Tick - 1) / h.tr.Tick
	return from + k*h.tr.Tick
}

// gap records a heard gap before a frame of chunks first to last. It
// takes the cause of the first of the player's own underruns in those
// chunks not yet taken (those in earlier chunks the transport's lag
// absorbed); failing that, of the last one taken if this gap is still its
// wait (sameWait); failing that, the transport caused it.
func (h *hearing) gap(first, last int, at, d time.Duration) {
	p := h.p
	for h.next < len(h.own) && h.own[h.next].Chunk < first {
		h.next++
	}
	var u Underrun
	switch {
	case h.next < len(h.own) && h.own[h.next].Chunk <= last:
		u = h.own[h.next]
		h.lastOwn = h.next
		h.next++
	case h.sameWait(last):
		u = h.own[h.lastOwn]
	default:
		c := &p.Chunks[last]
		u = Underrun{Cause: CauseTransport, Position: p.position(c.From), Chunk: last, Token: c.First}
	}
	fresh := p.newUnderrun(u.Chunk, at, d)
	u.Turn = fresh.Turn // a gap of the transport's own names its turn too
	u.Start, u.Duration, u.StartSample, u.Samples, u.Class = fresh.Start, fresh.Duration, fresh.StartSample, fresh.Samples, fresh.Class
	switch u.Cause {
	case CauseStall, CausePace, CauseStartup:
		u.Tolerance = max(0, u.ITL-d)
	case CauseTransport:
		u.Tolerance = 0
	}
	u.Stopped, h.stopped = h.stopped, false
	h.out = append(h.out, u)
}

// sameWait reports whether this gap is still the wait of the last
// underrun of the player's that a heard gap took its cause from, in
// speech chunk c: a slow synthesizer keeps the listener waiting frame
// after frame, and a silence the framework cut in two (Transport.Idle)
// is one wait.
func (h *hearing) sameWait(c int) bool {
	if h.lastOwn < 0 || h.own[h.lastOwn].Chunk != c {
		return false
	}
	return h.own[h.lastOwn].Cause == CauseSynthesizer || h.stopped
}

// readyFrames hands the audio of speech chunk c (index i) to the sender
// as it became ready: its measured arrivals, or else in pieces that end
// where the sender's frames end, each ready with the synthesizer's frame
// that holds its last audio (all at once at the chunk's first audio when
// the synthesizer produces instantly); a frame leaves when its last audio
// is ready, so nothing between those ends changes what is heard.
func (p *Playout) readyFrames(c *SpeechChunk, i int, s *tts.Sender) {
	if i < len(p.arrivals) && len(p.arrivals[i]) > 0 {
		for _, a := range p.arrivals[i] {
			s.Add(a.Audio, a.At, i)
		}
		return
	}
	if p.cfg.Synth.RTF == 0 {
		s.Add(c.Audio, c.Ready, i)
		return
	}
	for pos := time.Duration(0); pos < c.Audio; {
		end := min(pos+s.Room(), c.Audio)
		s.Add(end-pos, c.Ready+p.frameOffset((end+p.frame-1)/p.frame-1), i)
		pos = end
	}
}
