package pipeline

import (
	"time"
)

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
			p.playhead = c.Ready + p.fillerHold()
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

// fillerHold is how long the filler (Config.Filler) holds back the speech
// after the gap just found, when that gap is a tool call's silence: what
// of a phrase is still to play when the speech is ready (Coverage.Late).
func (p *Playout) fillerHold() time.Duration {
	if !p.cfg.Filler.Plays() {
		return 0
	}
	n := len(p.Underruns) - 1
	u := &p.Underruns[n]
	if p.gapKinds[n] == gapSynth {
		return 0 // (classifyKind: the synthesizer's, never the tool's)
	}
	if _, ok := p.toolBefore(u); !ok {
		return 0
	}
	return p.cfg.Filler.Cover(u.Duration, p.cfg).Late
}
