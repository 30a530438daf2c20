package pipeline

import "time"

// Retime returns a copy of t whose tokens arrive at a constant pace: the
// first at ttft, every later token tpot after the one before. A chunk of
// several tokens arrives with its last token.
func Retime(t *Turn, ttft, tpot time.Duration) *Turn {
	out := *t
	out.Chunks = append([]Chunk(nil), t.Chunks...)
	retime(out.Chunks, ttft, tpot)
	return &out
}

// retime sets the arrival of every chunk for a constant pace, in place.
func retime(chunks []Chunk, ttft, tpot time.Duration) {
	n := 0
	for i := range chunks {
		n += chunks[i].TokenCount()
		chunks[i].At = ttft + time.Duration(n-1)*tpot
	}
}

// MaxTPOTLimit is the largest TPOT the MaxTPOT search considers.
const MaxTPOTLimit = 10 * time.Second

// MaxTPOT answers "is this TPOT enough?" for one turn's text and TTS: the
// largest constant TPOT (to 10 µs) at which the turn, with its own TTFT,
// plays with no interruption. ok is false when even instant tokens
// interrupt (the synthesizer or policy alone causes them) or the turn has no
// chunks. A scratch Playout built from the same Config may be passed to
// save allocations; nil makes one. Config.Measured is left out: measured
// timings are those of the token timing that was measured, and the
// question is about others, which the models answer.
func MaxTPOT(cfg Config, t *Turn, scratch *Playout) (tpot time.Duration, ok bool, err error) {
	if len(t.Chunks) == 0 {
		return 0, false, nil
	}
	if cfg.Measured != nil {
		cfg.Measured, scratch = nil, nil
	}
	p := scratch
	if p == nil {
		if p, err = NewPlayout(cfg, t.ID); err != nil {
			return 0, false, err
		}
	}
	ttft := t.Chunks[0].At
	retimed := Retime(t, ttft, 0)
	clean := func(tpot time.Duration) bool {
		retime(retimed.Chunks, ttft, tpot)
		if err := p.PlayTurn(retimed); err != nil {
			return false
		}
		for _, u := range p.Underruns {
			if u.Class == Interruption {
				return false
			}
		}
		return true
	}
	if !clean(0) {
		return 0, false, nil
	}
	lo, hi := time.Duration(0), 50*time.Millisecond
	for clean(hi) {
		lo = hi
		if hi >= MaxTPOTLimit {
			return MaxTPOTLimit, true, nil
		}
		hi = min(2*hi, MaxTPOTLimit)
	}
	for hi-lo > 10*time.Microsecond {
		mid := lo + (hi-lo)/2
		if clean(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true, nil
}
