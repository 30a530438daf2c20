package pipeline

import (
	"github.com/rs/zerolog"
)

// LogUnderrun writes one underrun as a zerolog event: message "underrun",
// with turn, start_ms, duration_ms, class, cause, position, token, chunk,
// itl_ms and tolerance_ms. Interruptions log at warn level, glitches at
// info.
func LogUnderrun(log zerolog.Logger, u Underrun) {
	ev := log.Info()
	if u.Class == Interruption {
		ev = log.Warn()
	}
	ev.Str("event", "underrun").
		Str("turn", u.Turn).
		Float64("start_ms", Millis(u.Start)).
		Float64("duration_ms", Millis(u.Duration)).
		Int64("start_sample", u.StartSample).
		Int64("samples", u.Samples).
		Str("class", string(u.Class)).
		Str("cause", string(u.Cause)).
		Str("position", string(u.Position)).
		Int("token", u.Token).
		Int("chunk", u.Chunk).
		Float64("itl_ms", Millis(u.ITL)).
		Float64("tolerance_ms", Millis(u.Tolerance)).
		Msg("underrun")
}

// LogChunk writes one speech chunk as a zerolog event at debug level:
// message "chunk", with the fields of ChunkReport.
func LogChunk(log zerolog.Logger, c ChunkReport) {
	ev := log.Debug().Str("event", "chunk").Str("turn", c.Turn)
	if c.Session != "" {
		ev = ev.Str("session", c.Session)
	}
	if c.Textless {
		ev = ev.Bool("textless", true)
	}
	ev.Int("index", c.Index).
		Str("text", c.Text).
		Float64("release_ms", c.ReleaseMs).
		Str("released_by", c.ReleasedBy).
		Int("token", c.Token).
		Float64("synth_start_ms", c.SynthStartMs).
		Float64("first_audio_ms", c.FirstAudioMs).
		Float64("play_start_ms", c.PlayStartMs).
		Float64("play_end_ms", c.PlayEndMs).
		Float64("audio_ms", c.AudioMs).
		Msg("chunk")
}

// LogTurn writes a turn summary event: message "turn".
func LogTurn(log zerolog.Logger, t *Turn, p *Playout) {
	ev := log.Info().Str("event", "turn").Str("turn", t.ID).Str("status", string(t.Status)).Int("tokens", t.Tokens())
	if t.Session != "" {
		ev = ev.Str("session", t.Session)
	}
	if tm, ok := t.Timing(); ok {
		ev = ev.Float64("ttft_ms", Millis(tm.TTFT)).Float64("e2el_ms", Millis(tm.E2E))
		if s, ok := t.TPOTSeconds(); ok {
			ev = ev.Float64("tpot_ms", s*1000)
		}
	}
	if p != nil {
		tally := TallyUnderruns(p.Underruns)
		if at, ok := p.Started(); ok {
			ev = ev.Float64("ttfa_ms", Millis(at))
		}
		ev = ev.Float64("speech_ms", Millis(p.Speech())).
			Int("glitches", tally.Glitches).Int("interruptions", tally.Interruptions).
			Float64("underrun_ms", Millis(tally.Silence)).Float64("min_preroll_ms", Millis(p.MinPreroll))
	}
	ev.Msg("turn")
}
