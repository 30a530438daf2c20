package pipeline

import (
	"fmt"
	"sort"
	"time"
)

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
