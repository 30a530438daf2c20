package stream

import (
	"context"
	"fmt"
	"time"
)

// ProbeText is what Probe speaks.
const ProbeText = "Ready."

// Probe speaks ProbeText once, not played: it tells the synthesizer's
// sample rate and how long its first audio took, and warms it up (its
// data cached, its connection open) before a run is timed.
func Probe(ctx context.Context, s Synthesizer) (rate int, first time.Duration, err error) {
	start := time.Now()
	u, err := s.Synthesize(ctx, ProbeText)
	if err != nil {
		return 0, 0, err
	}
	defer u.Close()
	err = Each(u, func(p Piece) {
		if rate == 0 {
			rate, first = p.Rate, p.At.Sub(start)
		}
	})
	if err != nil {
		return 0, 0, err
	}
	if rate == 0 {
		return 0, 0, fmt.Errorf("%w: %s gave no audio for %q", ErrSynthesis, s.Name(), ProbeText)
	}
	return rate, first, nil
}
