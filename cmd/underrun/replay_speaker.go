//go:build speaker

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/gopxl/beep/v2"
	"github.com/gopxl/beep/v2/speaker"
)

// The speaker build plays --play audio through the sound card with beep's
// speaker (cgo and ALSA on Linux); the default build needs neither.
func init() { openSpeaker, soundCard = playThroughSpeaker, probeSoundCard }

// speakerStartup bounds the sound card's start: without a card, the audio
// library can wait for it forever.
const speakerStartup = 5 * time.Second

func playThroughSpeaker(rate int, buffer time.Duration, s beep.Streamer) (func(), error) {
	// without a card the audio library prints ALSA's errors and plays
	// into nothing: find out first
	if err := probeSoundCard(); err != nil {
		return nil, err
	}
	sr := beep.SampleRate(rate)
	done := make(chan error, 1)
	go func() {
		// a short buffer, to hear gaps where they fall
		done <- speaker.Init(sr, sr.N(buffer))
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("sound card: %w", err)
		}
	case <-time.After(speakerStartup):
		return nil, errors.New("sound card: not ready after 5s (is there an audio device?)")
	}
	speaker.Play(s)
	return speaker.Close, nil
}
