package pipeline

import "time"

// Explain accounts silence heard at turn time at, d long, as the engine
// accounts the underruns it predicts: where the player waited for speech
// chunk chunk (inside is false: the silence lies before that chunk's
// audio) or ran dry inside it (inside: the synthesizer was late mid
// chunk), it returns the underrun with its class, cause, position, token,
// ITL and tolerance, as the engine would have recorded had it predicted
// it. The turn must have been played to its end (PlayTurn, or End); a
// chunk out of range gives the underrun with PositionUnknown, token -1
// and no cause.
func (p *Playout) Explain(chunk int, at, d time.Duration, inside bool) Underrun {
	if chunk < 0 || chunk >= len(p.Chunks) || len(p.at) == 0 {
		u := p.newUnderrun(chunk, at, d)
		u.Position, u.Token, u.Chunk = PositionUnknown, -1, -1
		return u
	}
	if inside || chunk == 0 {
		u := p.newUnderrun(chunk, at, d)
		u.Cause, u.Position = CauseSynthesizer, MidChunk
		u.Token = p.Chunks[chunk].First
		return u
	}
	u, kind := p.gapBefore(chunk, at, d)
	p.classifyKind(&u, kind, len(p.at))
	return u
}
