package pipeline

import (
	"time"
)

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

// latency is how long speech chunk i waits after its release for its
// first audio with the synthesizer otherwise idle: in stream mode the
// continuation latency, except for the turn's first chunk and the first
// after a tool call, which open a stream.
func (p *Playout) latency(i int) time.Duration {
	if i > 0 && p.mode == modeStream && !p.opensStream(i) {
		return p.cfg.Synth.Continuation
	}
	return p.cfg.Synth.TTFA
}

// opensStream reports whether speech chunk i (> 0) opens a synthesis
// stream of its own: the first after a tool call. The frameworks end the
// reply at a tool call and synthesize the reply after it on a new stream,
// which waits the time to first audio again: LiveKit Agents 1.7.0 a new
// TTS stream per generation (an ElevenLabs or Cartesia context of its
// own), Pipecat (acead0507d7d, services/tts_service.py) a new turn
// context from the reply's LLMFullResponseStartFrame.
func (p *Playout) opensStream(i int) bool {
	for _, s := range p.streams {
		if s == i {
			return true
		}
	}
	return false
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

// frameOffset is when frame k of a chunk is ready, after its first frame.
func (p *Playout) frameOffset(k time.Duration) time.Duration {
	if k <= 0 || p.cfg.Synth.RTF == 0 {
		return 0
	}
	// in floating point: k*frame of a long chunk must not wrap around
	return time.Duration(float64(k) * float64(p.frame) * p.cfg.Synth.RTF)
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
