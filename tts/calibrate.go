package tts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// CalibrationTexts is the built-in text set Calibrate measures: assistant
// answers of every length, with and without commas, questions and several
// sentences, so that the rate, the word-length effect and both pauses can
// be told apart.
var CalibrationTexts = []string{
	"Yes.",
	"Sure, I can help with that.",
	"The meeting starts at noon.",
	"Your package arrived this morning, and it is waiting at the front desk.",
	"I checked three stores: two are closed today, one opens at ten.",
	"That depends. Do you want the cheapest option, or the fastest one?",
	"Turn left at the second traffic light, then continue straight for about two kilometres.",
	"Absolutely! Here are the results.",
	"It will be sunny tomorrow. Temperatures reach twenty four degrees in the afternoon.",
	"Unfortunately, the restaurant has no tables available before eight o'clock tonight.",
	"Good question. Photosynthesis converts light, water and carbon dioxide into sugar and oxygen.",
	"Okay.",
	"Let me think about that for a moment, because the answer is not obvious.",
	"Your flight is delayed. The new departure time is nineteen forty, from gate fourteen.",
	"Remember to bring your passport, your ticket, and a reusable water bottle.",
	"Is there anything else I can do for you today?",
	"The recipe needs flour, butter, sugar, two eggs, and a pinch of salt. Bake it for forty minutes.",
	"International telecommunications infrastructure requires extraordinary coordination.",
	"No, that is not possible. However, I can suggest an alternative.",
	"First, open the settings. Second, choose privacy. Third, disable location sharing.",
	"Hi there!",
	"A short walk along the river takes about twenty minutes, and the view is lovely in the evening.",
}

// Calibration is what Calibrate measured.
type Calibration struct {
	// Profile is the fitted voice and the measured synthesizer.
	Profile Profile
	// Durations are the engine's durations of the texts, in order.
	Durations []time.Duration
}

// Calibrate speaks every text with engine and fits a Voice to the
// durations (least squares over the voice model's four parameters: word
// onset, time per letter, comma pause and sentence pause, none negative),
// and a Synth to the time each synthesis took: time to first audio (the
// fixed cost of a synthesis) and real-time factor (the cost per second of
// audio), in request mode (each text was its own synthesis). runs repeats
// each synthesis and keeps the fastest, to lessen
// the noise of a busy machine. The returned error wraps ErrEngine when the
// engine fails.
func Calibrate(ctx context.Context, engine Engine, texts []string, runs int) (Calibration, error) {
	if len(texts) < 4 {
		return Calibration{}, fmt.Errorf("calibrate: need at least 4 texts, got %d", len(texts))
	}
	if !engine.Speech() {
		return Calibration{}, fmt.Errorf("calibrate: %s does not speak: measure a real engine", engine.Name())
	}
	runs = max(1, runs)
	var cal Calibration
	audio := make([]float64, len(texts)) // seconds
	wall := make([]float64, len(texts))  // seconds, fastest run
	for i, text := range texts {
		wall[i] = math.Inf(1)
		for range runs {
			start := time.Now()
			a, err := engine.Synthesize(ctx, text)
			took := time.Since(start)
			if err != nil {
				return Calibration{}, fmt.Errorf("calibrate: text %d: %w", i+1, err)
			}
			audio[i] = a.Duration().Seconds()
			wall[i] = math.Min(wall[i], took.Seconds())
		}
		cal.Durations = append(cal.Durations, time.Duration(audio[i]*float64(time.Second)))
	}
	ttfa, rtf := fitLine(audio, wall)
	// the engine was driven a synthesis per text, one after another: a
	// request per chunk
	synth := Synth{Mode: ModeRequest, TTFA: time.Duration(ttfa * float64(time.Second)).Round(time.Microsecond), RTF: math.Round(rtf*1e4) / 1e4}
	var err error
	if cal.Profile, err = FitProfile(engine.Name(), texts, cal.Durations, synth); err != nil {
		return Calibration{}, err
	}
	return cal, nil
}

// FitProfile fits a Voice to an engine's durations of texts (FitVoice)
// and returns the profile of engine with it and synth, with the quality
// of the fit.
func FitProfile(engine string, texts []string, durations []time.Duration, synth Synth) (Profile, error) {
	v, err := FitVoice(texts, durations)
	if err != nil {
		return Profile{}, err
	}
	v.Name = engine
	q := &FitQuality{Texts: len(texts)}
	for i, text := range texts {
		est, got := v.Duration(text).Seconds(), durations[i].Seconds()
		e := math.Abs(est-got) / got
		q.MeanError += e / float64(len(texts))
		q.MaxError = math.Max(q.MaxError, e)
		q.Seconds += got
	}
	q.MeanError = math.Round(q.MeanError*1e4) / 1e4
	q.MaxError = math.Round(q.MaxError*1e4) / 1e4
	q.Seconds = math.Round(q.Seconds*1e3) / 1e3
	return Profile{Format: ProfileFormat, Version: ProfileVersion, Engine: engine, Voice: v, Synth: &synth, Fit: q}, nil
}

// ErrFit reports durations a voice cannot be fitted to.
var ErrFit = errors.New("cannot fit a voice")

// FitVoice fits the voice model to the measured durations of texts: the
// least-squares word onset, time per letter, comma and sentence pauses,
// none negative.
func FitVoice(texts []string, durations []time.Duration) (Voice, error) {
	if len(texts) != len(durations) {
		return Voice{}, fmt.Errorf("%w: %d texts but %d durations", ErrFit, len(texts), len(durations))
	}
	// The model is linear in its four parameters: a meter with one
	// nanosecond for one parameter and zero for the others counts it.
	basis := []Meter{{onset: 1}, {letter: 1}, {comma: 1}, {sentence: 1}}
	X := make([][]float64, len(texts))
	y := make([]float64, len(texts))
	for i, text := range texts {
		X[i] = make([]float64, len(basis))
		for j, m := range basis {
			X[i][j] = float64(m.Add(text))
		}
		y[i] = durations[i].Seconds()
	}
	beta, err := nonNegativeLeastSquares(X, y)
	if err != nil {
		return Voice{}, err
	}
	onset, letter := beta[0], beta[1]
	word := onset + averageWordLetters*letter
	if !(word > 0) {
		return Voice{}, fmt.Errorf("%w: the texts give words no duration", ErrFit)
	}
	v := Voice{
		WPM:           math.Round(60/word*100) / 100,
		WordOnset:     math.Round(onset/word*1e4) / 1e4,
		CommaPause:    time.Duration(beta[2] * float64(time.Second)).Round(time.Millisecond),
		SentencePause: time.Duration(beta[3] * float64(time.Second)).Round(time.Millisecond),
	}
	if err := v.Validate(); err != nil {
		return Voice{}, fmt.Errorf("%w: %w", ErrFit, err)
	}
	return v, nil
}

// nonNegativeLeastSquares minimizes |X b - y| with b >= 0 by an active
// set: solve, drop the most negative coefficient, solve again.
func nonNegativeLeastSquares(X [][]float64, y []float64) ([]float64, error) {
	k := len(X[0])
	active := make([]bool, k)
	for i := range active {
		active[i] = true
	}
	for range k {
		var idx []int
		for j, a := range active {
			if a {
				idx = append(idx, j)
			}
		}
		if len(idx) == 0 {
			break
		}
		b, err := leastSquares(X, y, idx)
		if err != nil {
			return nil, err
		}
		worst, at := 0.0, -1
		for n, j := range idx {
			if b[n] < worst {
				worst, at = b[n], j
			}
		}
		if at < 0 {
			out := make([]float64, k)
			for n, j := range idx {
				out[j] = b[n]
			}
			return out, nil
		}
		active[at] = false
	}
	return nil, fmt.Errorf("%w: no non-negative solution", ErrFit)
}

// leastSquares solves the normal equations over the columns idx.
func leastSquares(X [][]float64, y []float64, idx []int) ([]float64, error) {
	n := len(idx)
	A := make([][]float64, n)
	for a := range A {
		A[a] = make([]float64, n+1)
		for b := range n {
			for i := range X {
				A[a][b] += X[i][idx[a]] * X[i][idx[b]]
			}
		}
		for i := range X {
			A[a][n] += X[i][idx[a]] * y[i]
		}
	}
	// Gauss-Jordan elimination with partial pivoting
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(A[r][c]) > math.Abs(A[p][c]) {
				p = r
			}
		}
		if math.Abs(A[p][c]) < 1e-12 {
			return nil, fmt.Errorf("%w: the texts do not tell the parameters apart (parameter %d)", ErrFit, idx[c])
		}
		A[c], A[p] = A[p], A[c]
		for r := range n {
			if r == c {
				continue
			}
			f := A[r][c] / A[c][c]
			for j := c; j <= n; j++ {
				A[r][j] -= f * A[c][j]
			}
		}
	}
	b := make([]float64, n)
	for c := range n {
		b[c] = A[c][n] / A[c][c]
	}
	return b, nil
}

// fitLine fits y = a + b x by least squares, with a and b at least 0.
func fitLine(x, y []float64) (a, b float64) {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(x))
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx > 0 {
		b = math.Max(0, sxy/sxx)
	}
	a = math.Max(0, my-b*mx)
	return a, b
}
