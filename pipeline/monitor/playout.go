package monitor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts/player"
)

// Limits on what a session keeps of its turns' speech and audio.
const (
	// MaxSpeechChunks is the most speech messages one turn may have.
	MaxSpeechChunks = 4096
	// MaxAudioPieces is the most audio messages one turn may have (at
	// LiveKit's 100 ms frames, three and a half hours of speech).
	MaxAudioPieces = 1 << 17
	// maxAudioTurns is how many turns' speech a session keeps at once:
	// open turns, and ended ones whose playout has not come yet.
	maxAudioTurns = 2 * MaxTurns
)

// turnAudio is what the app reported of one turn's speech: the texts it
// gave its synthesizer and the audio that reached its player, kept until
// both the turn has ended and its playout came (session.mu guards it).
type turnAudio struct {
	id      string
	begin   time.Time
	speech  []speechPiece
	pieces  []audioPiece
	fillers []audioPiece   // the app's filler audio (speech -1)
	record  *pipeline.Turn // the turn as the guard ended it
	played  bool
	start   time.Duration // the app's player's first audio
	hasSt   bool
	gaps    []PlayerGap
}

// speechPiece is a text handed to the synthesizer, at At since the turn began.
type speechPiece struct {
	text string
	at   time.Duration
}

// audioPiece is a piece of audio that reached the player.
type audioPiece struct {
	at, audio time.Duration
	speech    int
}

// audioAt is the time of a speech or audio message of turn ta: the
// client's t_ms, else its arrival, else now. These times feed only the
// comparison made once the turn is played out, not the live guard, so a
// t_ms ahead of the monitor's clock is taken as it is.
func (sess *session) audioAt(ta *turnAudio, m Message, arrived time.Time) time.Duration {
	now := sess.srv.clock.Now().Sub(ta.begin)
	switch {
	case m.HasAt:
		return m.At
	case !arrived.IsZero():
		return max(min(arrived.Sub(ta.begin), now), 0)
	}
	return max(now, 0)
}

// beginAudio starts keeping turn id's speech (turn_start): a turn of the
// same name still waiting for its playout is dropped, and so is the
// oldest one when the session keeps too many (sess.mu held).
func (sess *session) beginAudio(id string, begin time.Time) {
	if sess.audio == nil {
		sess.audio = map[string]*turnAudio{}
	}
	if _, ok := sess.audio[id]; ok {
		sess.dropAudio(id)
	}
	for len(sess.audioOrder) >= maxAudioTurns {
		sess.dropAudio(sess.audioOrder[0])
	}
	sess.audio[id] = &turnAudio{id: id, begin: begin}
	sess.audioOrder = append(sess.audioOrder, id)
}

// dropAudio forgets turn id's speech (sess.mu held).
func (sess *session) dropAudio(id string) {
	delete(sess.audio, id)
	if i := slices.Index(sess.audioOrder, id); i >= 0 {
		sess.audioOrder = slices.Delete(sess.audioOrder, i, i+1)
	}
}

// speechMessage handles speech, audio and playout messages.
func (sess *session) speechMessage(m Message, arrived time.Time) error {
	sess.mu.Lock()
	ta, ok := sess.audio[m.Turn]
	if !ok {
		sess.mu.Unlock()
		return fmt.Errorf("%w: turn %q: no turn of that name is streaming or waiting for its playout (send turn_start first)", ErrRejected, m.Turn)
	}
	if ta.played {
		sess.mu.Unlock()
		return fmt.Errorf("%w: turn %q: its playout has come already", ErrRejected, m.Turn)
	}
	at := sess.audioAt(ta, m, arrived)
	switch m.Type {
	case TypeSpeech:
		if len(ta.speech) >= MaxSpeechChunks {
			sess.mu.Unlock()
			return fmt.Errorf("%w: turn %q: more than %d speech messages", ErrRejected, m.Turn, MaxSpeechChunks)
		}
		if n := len(ta.speech); n > 0 && at < ta.speech[n-1].at {
			at = ta.speech[n-1].at
		}
		ta.speech = append(ta.speech, speechPiece{text: m.Text, at: at})
	case TypeAudio:
		if err := ta.addAudio(m, at); err != nil {
			sess.mu.Unlock()
			return fmt.Errorf("%w: turn %q: %w", ErrRejected, m.Turn, err)
		}
	case TypePlayout:
		ta.played = true
		ta.start, ta.hasSt, ta.gaps = m.Start, m.HasStart, m.Gaps
	}
	ready := ta.played && ta.record != nil
	if ready {
		sess.dropAudio(ta.id)
	}
	sess.mu.Unlock()
	if ready {
		sess.reportHeard(ta)
	}
	return nil
}

// addAudio keeps audio message m, at at: a piece of the speech chunk it
// names (the latest, when it names none), or of the app's filler.
func (ta *turnAudio) addAudio(m Message, at time.Duration) error {
	switch {
	case len(ta.pieces)+len(ta.fillers) >= MaxAudioPieces:
		return fmt.Errorf("more than %d audio messages", MaxAudioPieces)
	case m.Filler:
		if n := len(ta.fillers); n > 0 {
			at = max(at, ta.fillers[n-1].at)
		}
		ta.fillers = append(ta.fillers, audioPiece{at: at, audio: m.Audio, speech: -1})
		return nil
	case len(ta.speech) == 0:
		return errors.New("audio before any speech message")
	}
	chunk := len(ta.speech) - 1
	if m.HasSpeech {
		if m.Speech >= len(ta.speech) {
			return fmt.Errorf("field \"speech\": %d, but %d speech messages came", m.Speech, len(ta.speech))
		}
		chunk = m.Speech
	}
	if n := len(ta.pieces); n > 0 {
		if chunk < ta.pieces[n-1].speech {
			return fmt.Errorf("audio of speech chunk %d after audio of chunk %d", chunk, ta.pieces[n-1].speech)
		}
		at = max(at, ta.pieces[n-1].at)
	}
	ta.pieces = append(ta.pieces, audioPiece{at: at, audio: m.Audio, speech: chunk})
	return nil
}

// endAudio gives turn id's speech the turn as the guard ended it (the
// guard's turn event; sess.mu held) and returns it when its playout has
// come too, for reportHeard.
func (sess *session) endAudio(id string, rec *pipeline.Turn) *turnAudio {
	ta, ok := sess.audio[id]
	if !ok || rec == nil || ta.record != nil || (!rec.Start.IsZero() && !rec.Start.Equal(ta.begin)) {
		return nil // (a turn of a name used again: not this one's end)
	}
	r := *rec
	r.Chunks = slices.Clone(rec.Chunks)
	ta.record = &r
	if !ta.played {
		return nil
	}
	sess.dropAudio(id)
	return ta
}

// heardGaps plays ta's audio as a player that plays the pieces, speech
// and filler, back to back in the order they arrived, each from its
// arrival: the silences it has to play between the first speech and the
// last are the gaps a listener heard. Filler audio before the first
// speech fills the start-up delay; the speech waits for what of it is
// still to play, as the pieces after it do.
func heardGaps(ta *turnAudio, rate int) player.Heard {
	h := player.Heard{Turn: ta.id, Begin: ta.begin}
	samples := func(d time.Duration) int64 { return int64(math.Round(d.Seconds() * float64(rate))) }
	var end, played, lastSpeech time.Duration
	var gaps []int // of h.Gaps, those not yet ended by a speech piece
	for i, j := 0, 0; i < len(ta.pieces) || j < len(ta.fillers); {
		var p audioPiece
		if j == len(ta.fillers) || (i < len(ta.pieces) && ta.pieces[i].at <= ta.fillers[j].at) {
			p, i = ta.pieces[i], i+1
		} else {
			p, j = ta.fillers[j], j+1
		}
		if h.Started && p.at > end {
			g := player.Gap{Start: end, Duration: p.at - end, Played: samples(played)}
			g.StartSample = samples(g.Start)
			g.Samples = samples(p.at) - g.StartSample
			h.Gaps = append(h.Gaps, g)
			gaps = append(gaps, len(h.Gaps)-1)
		}
		at := max(p.at, end)
		end = at + p.audio
		played += p.audio
		if p.speech < 0 {
			if n := len(h.Fillers); n > 0 && h.Fillers[n-1].End() == at {
				h.Fillers[n-1].Duration += p.audio
			} else {
				h.Fillers = append(h.Fillers, player.Span{Start: at, Duration: p.audio})
			}
			continue
		}
		if !h.Started {
			h.Started, h.Start = true, at
		}
		for _, k := range gaps {
			h.Gaps[k].Chunk = p.speech // the speech that came late
		}
		gaps = gaps[:0]
		h.Speech += p.audio
		lastSpeech = end
	}
	// (silences before filler audio after the last speech are no gaps)
	h.Gaps = h.Gaps[:len(h.Gaps)-len(gaps)]
	h.End, h.Samples = lastSpeech, samples(h.Speech)
	return h
}

// measuredChunks gives the engine's speech chunks of model the timings the
// app measured for the same text (white space aside; chunks are matched
// in order): the engine predicts with those of its chunks whose text the
// app's chunking released alike. It returns them and how many matched.
func measuredChunks(ta *turnAudio, model *pipeline.Playout) []speak.Timing {
	norm := func(s string) string { return strings.Join(strings.Fields(s), "") }
	var out []speak.Timing
	j := 0
	for i, c := range model.Chunks {
		text := model.Text(c)
		want := norm(text)
		for k := j; k < len(ta.speech); k++ {
			if norm(ta.speech[k].text) != want {
				continue
			}
			t := speak.Timing{Index: i, From: c.From, To: c.To, Text: text, Release: ta.speech[k].at, Sent: ta.speech[k].at}
			for _, p := range ta.pieces {
				if p.speech != k {
					continue
				}
				if !t.HasAudio {
					t.HasAudio, t.First, t.Ready = true, p.at, p.at
				}
				t.Done = p.at
				t.Audio += p.audio
				t.Arrivals = append(t.Arrivals, pipeline.Arrival{At: p.at, Audio: p.audio})
			}
			out = append(out, t)
			j = k + 1
			break
		}
	}
	return out
}

// reportHeard compares what the app's player heard of turn ta (the gaps
// of its audio pieces, and the gaps the app counted) with what the engine
// predicts for the same token arrivals and the measured timings, and
// publishes the result as a heard event.
func (sess *session) reportHeard(ta *turnAudio) {
	cfg := sess.srv.opts.Config
	cfg.Durations = nil
	msg := eventMessage{Type: "heard", Session: sess.id, Turn: ta.id, UnixNs: ta.begin.UnixNano()}
	heard := heardGaps(ta, cfg.SampleRate)
	model, err := pipeline.Play(cfg, ta.record)
	if err != nil {
		sess.log.Warn().Str("event", "heard").Str("turn", ta.id).Err(err).Msg("the engine cannot play the turn")
		return
	}
	timings := measuredChunks(ta, model)
	cmp, err := speak.Compare(cfg, &speak.Result{Record: ta.record, Chunks: timings, Heard: heard}, 0)
	if err != nil {
		sess.log.Warn().Str("event", "heard").Str("turn", ta.id).Err(err).Msg("the engine cannot play the turn")
		return
	}
	if heard.Started {
		msg.TTFAMs = ptr(pipeline.Millis(heard.Start))
	}
	msg.Heard = make([]gapMessage, 0, len(cmp.Heard.Underruns))
	for _, u := range cmp.Heard.Underruns {
		msg.Heard = append(msg.Heard, underrunGap(u))
	}
	for _, f := range heard.Fillers {
		msg.Fillers = append(msg.Fillers, gapMessage{AtMs: pipeline.Millis(f.Start), DurationMs: pipeline.Millis(f.Duration)})
	}
	msg.Predicted = make([]gapMessage, 0, len(cmp.Model.Underruns))
	for _, u := range cmp.Model.Underruns {
		msg.Predicted = append(msg.Predicted, underrunGap(u))
	}
	if ta.played && (ta.hasSt || ta.gaps != nil) {
		p := &playerMessage{Gaps: make([]gapMessage, 0, len(ta.gaps))}
		if ta.hasSt {
			p.TTFAMs = ptr(pipeline.Millis(ta.start))
		}
		for _, g := range ta.gaps {
			p.Gaps = append(p.Gaps, gapMessage{AtMs: pipeline.Millis(g.Start), DurationMs: pipeline.Millis(g.Duration)})
		}
		msg.Player = p
	}
	msg.Agrees = ptr(cmp.Agrees())
	msg.SpeechChunks = ptr(len(model.Chunks))
	msg.MeasuredChunks = ptr(len(timings))
	for _, d := range cmp.Differences() {
		msg.Differences = append(msg.Differences, differenceMessage(d))
	}
	sess.log.Info().Str("event", "heard").Str("turn", ta.id).Int("heard_gaps", len(msg.Heard)).
		Int("predicted_gaps", len(msg.Predicted)).Bool("agrees", cmp.Agrees()).
		Int("measured_chunks", len(timings)).Int("speech_chunks", len(model.Chunks)).Msg("heard")
	sess.publish(msg)
}

// gapMessage is one gap of a heard event.
type gapMessage struct {
	AtMs       float64 `json:"at_ms"`
	DurationMs float64 `json:"duration_ms"`
	Class      string  `json:"class,omitempty"`
	Cause      string  `json:"cause,omitempty"`
	Token      *int    `json:"token,omitempty"`
	ITLMs      float64 `json:"itl_ms,omitempty"`
}

func underrunGap(u pipeline.Underrun) gapMessage {
	g := gapMessage{AtMs: pipeline.Millis(u.Start), DurationMs: pipeline.Millis(u.Duration), Class: string(u.Class),
		Cause: string(u.Cause), ITLMs: pipeline.Millis(u.ITL)}
	if u.Token >= 0 {
		g.Token = ptr(u.Token)
	}
	return g
}

// playerMessage is what the app's own player counted (heard event).
type playerMessage struct {
	TTFAMs *float64     `json:"ttfa_ms,omitempty"`
	Gaps   []gapMessage `json:"gaps"`
}

// diffMessage is a heard and a predicted gap that differ (heard event).
type diffMessage struct {
	Kind      string      `json:"kind"`
	Heard     *gapMessage `json:"heard,omitempty"`
	Predicted *gapMessage `json:"predicted,omitempty"`
}

func differenceMessage(p speak.Pair) diffMessage {
	d := diffMessage{Kind: string(p.Kind)}
	if p.Heard != nil {
		d.Heard = ptr(underrunGap(*p.Heard))
	}
	if p.Predicted != nil {
		d.Predicted = ptr(underrunGap(*p.Predicted))
	}
	return d
}
