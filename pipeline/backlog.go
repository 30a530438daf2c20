package pipeline

import (
	"sort"
	"time"
)

// Backlog is a turn's audio not yet played at one moment, measured two
// ways. Every view of a turn (the monitor's table and live chart,
// /api/sessions, the timeline plot) shows these two under these names, and
// no other "buffered audio".
type Backlog struct {
	// Buffered is the audio of the text released to the synthesizer and
	// not yet played: what the listener will hear with no more text.
	// A chunk counts from its release, before the synthesizer has made
	// its audio.
	Buffered time.Duration
	// Ready is the part of Buffered the synthesizer has made: the audio
	// waiting at the player.
	Ready time.Duration
}

// ReadyAudio returns how much of chunk c's audio a synthesizer at
// real-time factor rtf has made by t: nothing before c.Ready, its first
// frame then, and 1/rtf seconds of audio a second after (all of it at
// once when rtf is 0), up to c.Audio.
func ReadyAudio(c SpeechChunk, t time.Duration, rtf float64, frame time.Duration) time.Duration {
	if t < c.Ready {
		return 0
	}
	if rtf <= 0 {
		return c.Audio
	}
	return min(c.Audio, frame+time.Duration(float64(t-c.Ready)/rtf))
}

// PlayedAudio returns how much of chunk c's audio has played by t, for a
// chunk the player has scheduled: from PlayStart to PlayEnd, less the gaps
// inside it (those of gaps whose Chunk is index and that start inside it).
func PlayedAudio(c SpeechChunk, index int, gaps []Underrun, t time.Duration) time.Duration {
	if t <= c.PlayStart {
		return 0
	}
	if t >= c.PlayEnd {
		return c.Audio
	}
	d := t - c.PlayStart
	for _, u := range gaps {
		if u.Chunk != index || u.Start < c.PlayStart || u.Start >= c.PlayEnd || u.Start >= t {
			continue
		}
		d -= min(u.Duration, t-u.Start)
	}
	return min(max(0, d), c.Audio)
}

// BacklogAt returns the backlog at t of a turn's speech chunks as a
// Playout holds them: chunks in release order, the first scheduled of them
// handed to the player (with play times), gaps the turn's underruns, rtf
// and frame the synthesizer's real-time factor and frame. Chunks released
// after t do not count.
func BacklogAt(chunks []SpeechChunk, scheduled int, gaps []Underrun, rtf float64, frame, t time.Duration) Backlog {
	var b Backlog
	// the scheduled chunks play in order: those played out by t add
	// nothing, and a live turn's backlog costs only the chunks ahead
	first := sort.Search(scheduled, func(i int) bool { return chunks[i].PlayEnd > t })
	for i := first; i < len(chunks); i++ {
		c := &chunks[i] // not a copy: a long backlog reads many
		if c.Release > t {
			break
		}
		var played time.Duration
		if i < scheduled && t > c.PlayStart {
			played = PlayedAudio(*c, i, gaps, t)
		}
		b.Buffered += c.Audio - played
		b.Ready += max(0, ReadyAudio(*c, t, rtf, frame)-played)
	}
	return b
}

// Backlog returns the turn's backlog at t (Backlog): on a live turn, at
// the time so far; on a finished one, at any time of the turn.
func (p *Playout) Backlog(t time.Duration) Backlog {
	return BacklogAt(p.Chunks, p.scheduled, p.Underruns, p.cfg.Synth.RTF, p.frame, t)
}

// Backlog returns an open turn's backlog now on the Guard's clock; ok is
// false for a turn that is not open.
func (g *Guard) Backlog(turnID string) (b Backlog, ok bool) {
	t, err := g.lookup(turnID)
	if err != nil {
		return Backlog{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.p == nil {
		return Backlog{}, false
	}
	return t.p.Backlog(g.clock.Now().Sub(t.begin)), true
}

// BacklogStep is the step a chunk makes in a turn's backlog: the backlog
// just before the Guard took the chunk and just after, both at the moment
// it did (At, on the Guard's clock).
type BacklogStep struct {
	Before, After Backlog
	At            time.Time
}

// ChunkStep feeds the next chunk of a turn, as Chunk does, and returns the
// step it made in the turn's backlog: what Backlog would return just
// before and just after, in one look at the turn.
func (g *Guard) ChunkStep(turnID string, c Chunk) (BacklogStep, error) {
	var step BacklogStep
	err := g.chunk(turnID, c, &step)
	return step, err
}
