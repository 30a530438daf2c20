package heard

import (
	"math"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of the Detector.
const (
	// DefaultFrame is the window over which the detector measures the
	// level: short enough to place a gap's edges within a few ms.
	DefaultFrame = 4 * time.Millisecond
	// DefaultMinSilence is the shortest silence the detector reports.
	// Shorter stretches of near silence are consonants (the closure of a
	// p, t or k) rather than pauses.
	DefaultMinSilence = 30 * time.Millisecond
	// DefaultAboveFloor is how far above the recording's noise floor, in
	// dB, a frame still counts as silence.
	DefaultAboveFloor = 5.0
	// DefaultBelowSpeech is how far below the speech's level, in dB, a
	// frame counts as silence whatever the noise floor.
	DefaultBelowSpeech = 45.0
)

// Detector finds the silences of a recording by its level, frame by
// frame: a frame is silent when its level is within AboveFloor dB of the
// recording's noise floor (its quiet frames' level) or BelowSpeech dB
// under its speech (its loud frames'), whichever is higher. Both are
// measured on the recording itself, so background noise and the
// recording's gain move the threshold with them. The zero Detector uses
// the defaults.
type Detector struct {
	// Frame is the analysis window (0: DefaultFrame).
	Frame time.Duration
	// MinSilence is the shortest silence reported (0: DefaultMinSilence).
	MinSilence time.Duration
	// AboveFloor and BelowSpeech set the threshold in dB (0: the
	// defaults).
	AboveFloor, BelowSpeech float64
}

// Silence is a stretch of a recording with no speech in it.
type Silence struct {
	// Start and End are where it lies in the recording, from its first
	// sample.
	Start, End time.Duration
	// Depth is how far under the detector's threshold, in dB, the
	// stretch's level lies on average: how sure the detector is it
	// holds no speech.
	Depth float64
}

// Length is how long the silence lasts.
func (s Silence) Length() time.Duration { return s.End - s.Start }

// Levels is what a Detector measured of a recording.
type Levels struct {
	// Floor and Speech are the noise floor and the speech level in dBFS;
	// Threshold is the level under which a frame is silent.
	Floor, Speech, Threshold float64
	// FirstSound and LastSound are where the first and last frame above
	// the threshold lie (both 0 for a recording with no sound).
	FirstSound, LastSound time.Duration
}

func (d Detector) withDefaults() Detector {
	if d.Frame <= 0 {
		d.Frame = DefaultFrame
	}
	d.MinSilence = d.minSilence()
	if d.AboveFloor <= 0 {
		d.AboveFloor = DefaultAboveFloor
	}
	if d.BelowSpeech <= 0 {
		d.BelowSpeech = DefaultBelowSpeech
	}
	return d
}

// floorDB is the level given to a frame of digital silence.
const floorDB = -120.0

// frameLevels returns the level of each frame of a, in dBFS, and the
// frame's length in samples. A last frame shorter than the others is
// left out (unless it is the only one): the level of a few samples of
// noise is as likely as not over the threshold, which would make the
// noise after the last word a silence inside the speech.
func (d Detector) frameLevels(a tts.Audio) ([]float64, int) {
	n := max(1, int(math.Round(d.Frame.Seconds()*float64(a.Rate))))
	levels := make([]float64, 0, len(a.Samples)/n+1)
	for i := 0; i < len(a.Samples); i += n {
		end := min(len(a.Samples), i+n)
		if end-i < n && i > 0 {
			break
		}
		var sum float64
		for _, v := range a.Samples[i:end] {
			sum += float64(v) * float64(v)
		}
		ms := sum / float64(end-i)
		db := floorDB
		if ms > 1e-12 {
			db = max(floorDB, 10*math.Log10(ms))
		}
		levels = append(levels, db)
	}
	return levels, n
}

// Detect returns the recording's silences of at least MinSilence, in
// order, with the levels it measured. The silence before the first sound
// and after the last are left out: they are not pauses in speech.
func (d Detector) Detect(a tts.Audio) ([]Silence, Levels) {
	d = d.withDefaults()
	if a.Rate <= 0 || len(a.Samples) == 0 {
		return nil, Levels{Floor: floorDB, Speech: floorDB, Threshold: floorDB}
	}
	levels, n := d.frameLevels(a)
	sorted := slices.Clone(levels)
	slices.Sort(sorted)
	q := func(p float64) float64 { return sorted[int(p*float64(len(sorted)-1))] }
	lv := Levels{Floor: q(0.05), Speech: q(0.95)}
	lv.Threshold = max(lv.Floor+d.AboveFloor, lv.Speech-d.BelowSpeech)
	at := func(frame int) time.Duration {
		s := min(len(a.Samples), frame*n)
		return time.Duration(math.Round(float64(s) * float64(time.Second) / float64(a.Rate)))
	}
	first, last := -1, -1
	for i, l := range levels {
		if l > lv.Threshold {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil, lv
	}
	lv.FirstSound, lv.LastSound = at(first), at(last+1)
	minFrames := int(math.Ceil(float64(d.MinSilence) / float64(at(1))))
	var out []Silence
	for i := first; i <= last; {
		if levels[i] > lv.Threshold {
			i++
			continue
		}
		j := i
		var depth float64
		for j <= last && levels[j] <= lv.Threshold {
			depth += lv.Threshold - levels[j]
			j++
		}
		if j-i >= minFrames {
			out = append(out, Silence{Start: at(i), End: at(j), Depth: depth / float64(j-i)})
		}
		i = j
	}
	return out, lv
}

// minSilence is the shortest silence the detector reports.
func (d Detector) minSilence() time.Duration {
	if d.MinSilence <= 0 {
		return DefaultMinSilence
	}
	return d.MinSilence
}
