package stream

import (
	"context"
	"io"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// timedSynth answers with a voice model's audio, stamped as a server
// with the given latencies would deliver it: the first request of every
// three after first, the others after later, the audio arriving at rtf.
type timedSynth struct {
	voice        tts.Voice
	first, later time.Duration
	rtf          float64
	calls        atomic.Int64
}

func (s *timedSynth) Name() string { return "timed" }

func (s *timedSynth) Synthesize(ctx context.Context, text string) (Utterance, error) {
	n := s.calls.Add(1) - 1
	lat := s.later
	if n%3 == 0 {
		lat = s.first
	}
	audio := s.voice.Duration(text)
	const rate = 24000
	samples := int(audio.Seconds() * rate)
	at := time.Now().Add(lat)
	// two pieces: the first at the latency, the second when the rest is made
	half := samples / 2
	return &pieces{list: []Piece{
		{Samples: make([]float32, half), Rate: rate, At: at},
		{Samples: make([]float32, samples-half), Rate: rate, At: at.Add(time.Duration(float64(audio) * s.rtf))},
	}}, nil
}

type pieces struct{ list []Piece }

func (p *pieces) Next() (Piece, error) {
	if len(p.list) == 0 {
		return Piece{}, io.EOF
	}
	x := p.list[0]
	p.list = p.list[1:]
	return x, nil
}

func (p *pieces) Close() error { return nil }

func TestCalibrate(t *testing.T) {
	t.Parallel()
	v := tts.DefaultVoice()
	v.WPM = 180
	s := &timedSynth{voice: v, first: 300 * time.Millisecond, later: 80 * time.Millisecond, rtf: 0.25}
	cal, measures, err := Calibrate(context.Background(), s, tts.CalibrationTexts, CalibrateOptions{Pause: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(measures) != len(tts.CalibrationTexts) || !measures[0].First || measures[1].First || !measures[3].First {
		t.Fatalf("measures %+v: want each text, every third one a turn's first", measures)
	}
	p := cal.Profile
	near := func(got, want time.Duration) bool { return got >= want && got < want+50*time.Millisecond }
	if !near(p.Synth.TTFA, s.first) || !near(p.Synth.Continuation, s.later) || p.Synth.Mode != tts.ModeRequest {
		t.Errorf("synth %+v, want first audio %v, continuation %v, request mode", p.Synth, s.first, s.later)
	}
	// the second half arrives 0.25 x the audio after the first: half the
	// audio's time at 0.25 over the whole is... the whole audio's 0.25
	if math.Abs(p.Synth.RTF-0.25) > 0.02 {
		t.Errorf("RTF %v, want 0.25 (the rest of the audio at a quarter of its length)", p.Synth.RTF)
	}
	if math.Abs(p.Voice.WPM-180) > 2 || p.Fit.MaxError > 0.01 {
		t.Errorf("voice %+v fit %+v, want the 180 wpm voice back", p.Voice, p.Fit)
	}
}
