package heard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of the Detector.
const (
	// DefaultFrame is the step at which the detector decides between
	// sound and silence: short enough to place a gap's edges within a
	// few ms.
	DefaultFrame = 5 * time.Millisecond
	// DefaultMinSilence is the shortest silence the detector reports.
	// Shorter stretches of near silence are consonants (the closure of a
	// p, t or k) rather than pauses.
	DefaultMinSilence = 30 * time.Millisecond
	// DefaultAboveFloor is how far above a band's noise floor, in dB, the
	// band's level must rise for a frame to hold sound (at the least: a
	// floor that wavers more raises it).
	DefaultAboveFloor = 6.0
	// DefaultBelowSpeech is how far below the speech's level, in dB, a
	// frame is silent whatever the noise floor: the near silence engines
	// pad their audio with (-55 to -90 dBFS under speech at -10 to -20)
	// is no sound.
	DefaultBelowSpeech = 38.0
	// DefaultWindow is how much of the recording on each side of a
	// moment the noise floor and the speech level are measured over:
	// long enough to hold pauses, short enough to follow a change of
	// level.
	DefaultWindow = 4 * time.Second
)

// analysisRate is the rate the detector analyzes at: speech's pauses and
// edges show below 4 kHz, and one rate makes every recording's bands the
// same (telephony's 8 kHz included).
const analysisRate = 8000

// The detector's bands: speech's lowest harmonics and first formant, its
// second formant, and its upper formants and fricatives, each with a noise
// floor of its own, so that coloured noise (pink and brown put their power
// low, white high) hides speech in one band at most.
var bandEdges = [][2]float64{{200, 700}, {700, 1700}, {1700, 3800}}

// Detector finds the silences of a recording, frame by frame, in three
// bands at once: a frame holds sound when its level stands above its
// band's noise floor in some band and is no more than BelowSpeech under
// the speech's level. The floors and the speech level are measured on the
// recording itself, over Window on each side of the moment, so background
// noise of any colour and a change of gain move the threshold with them.
// The zero Detector uses the defaults.
type Detector struct {
	// Frame is the decision step (0: DefaultFrame).
	Frame time.Duration
	// MinSilence is the shortest silence reported (0: DefaultMinSilence).
	MinSilence time.Duration
	// AboveFloor and BelowSpeech set the thresholds in dB (0: the
	// defaults).
	AboveFloor, BelowSpeech float64
	// Window is the span on each side over which the levels are measured
	// (0: DefaultWindow).
	Window time.Duration
}

// Silence is a stretch of a recording with no speech in it.
type Silence struct {
	// Start and End are where it lies in the recording, from its first
	// sample.
	Start, End time.Duration
	// Depth is how far under the speech's level, in dB, the stretch's
	// level lies on average: how sure the detector is it holds no speech.
	Depth float64
	// CoreStart and CoreEnd bound the part of the silence at the noise
	// floor: the rest, at its edges, is near silence above the floor (an
	// engine's padding, a word's fading end) where the recording shows
	// it apart from the floor (the whole silence where it does not; an
	// empty core at its middle where no frame is at the floor).
	CoreStart, CoreEnd time.Duration
}

// Length is how long the silence lasts.
func (s Silence) Length() time.Duration { return s.End - s.Start }

// Levels is what a Detector measured of a recording.
type Levels struct {
	// Floor and Speech are the noise floor and the speech level in dBFS
	// (the median over the recording of what the detector measured
	// around each moment); Threshold is the level under which a frame
	// was silent, likewise.
	Floor, Speech, Threshold float64
	// FirstSound and LastSound are where the first and last frame of
	// sound lie (both 0 for a recording with no sound).
	FirstSound, LastSound time.Duration
	// Duration is the recording's length.
	Duration time.Duration
}

// Scan is what a Detector found in a recording.
type Scan struct {
	// Silences are the recording's silences of at least MinSilence
	// between its first and last sound, in order.
	Silences []Silence
	// Levels are the detector's measures.
	Levels Levels
	// Rate is the recording's sample rate.
	Rate int
	// Envelope is the recording's waveform at a coarse step, for plots.
	Envelope Envelope
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
	if d.Window <= 0 {
		d.Window = DefaultWindow
	}
	return d
}

// minSilence is the shortest silence the detector reports.
func (d Detector) minSilence() time.Duration {
	if d.MinSilence <= 0 {
		return DefaultMinSilence
	}
	return d.MinSilence
}

// SampleReader is a recording read as it is decoded: Read fills p with
// up to len(p) samples in [-1, 1] and returns how many, and io.EOF (with
// no samples) at the end. tts.RecordingReader is one.
type SampleReader interface {
	Read(p []float32) (int, error)
}

// sliceReader reads samples held in memory.
type sliceReader struct{ s []float32 }

func (r *sliceReader) Read(p []float32) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// Detect scans audio held in memory (as Scan does).
func (d Detector) Detect(a tts.Audio) ([]Silence, Levels) {
	s, err := d.Scan(context.Background(), &sliceReader{a.Samples}, a.Rate)
	if err != nil {
		return nil, Levels{Floor: floorDB, Speech: floorDB, Threshold: floorDB}
	}
	return s.Silences, s.Levels
}

// Scan reads the recording r, at rate samples a second, to its end and
// returns its silences. Its memory is bounded by the detector's window
// and the silences found, whatever the recording's length; it checks ctx
// as it reads. An error of r's (other than io.EOF) ends it.
func (d Detector) Scan(ctx context.Context, r SampleReader, rate int) (*Scan, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrRecording, rate)
	}
	d = d.withDefaults()
	st := newScanner(d, rate)
	rr, withRef := r.(ReferenceReader)
	withRef = withRef && rr.HasReference()
	if withRef {
		m := newBandMeter(st.ir)
		st.other = &m
	}
	// two stages, one goroutine each: decoding and bringing the samples
	// to the analysis rate, and the analysis; blocks go round between them
	type block struct{ x, ref []float64 }
	const blocks = 4
	full, free := make(chan block, blocks), make(chan block, blocks)
	for range blocks {
		free <- block{make([]float64, 0, 8<<10), make([]float64, 0, 8<<10)}
	}
	var readErr error
	go func() {
		defer close(full)
		buf := make([]float32, 32<<10)
		var ref []float32
		if withRef {
			ref = make([]float32, len(buf))
		}
		for {
			if err := ctx.Err(); err != nil {
				readErr = err
				return
			}
			var n int
			var err error
			if withRef {
				n, err = rr.ReadWithReference(buf, ref)
			} else {
				n, err = r.Read(buf)
			}
			if n > 0 {
				b := <-free
				st.samples += int64(n)
				b.x = st.dec.decimate(buf[:n], b.x[:0])
				if withRef {
					b.ref = st.refDec.decimate(ref[:n], b.ref[:0])
				}
				full <- b
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	for b := range full {
		if withRef {
			st.analyze(b.x, b.ref)
		} else {
			st.analyze(b.x, nil)
		}
		free <- b
	}
	if readErr != nil {
		return nil, readErr
	}
	return st.close(), nil
}

// ReferenceReader is a SampleReader that also reads, sample for sample,
// the recording's other channels (tts.RecordingReader is one): a voice
// there may bleed into the channel read (crosstalk, a shared room, an
// echo), and the detector takes it out before it listens.
type ReferenceReader interface {
	SampleReader
	HasReference() bool
	ReadWithReference(p, ref []float32) (int, error)
}

// floorDB is the level given to a frame of digital silence.
const floorDB = -120.0

// The levels' histograms: 0.5 dB bins from floorDB to +10 dBFS.
const (
	histStep = 0.5
	histBins = int((10-floorDB)/histStep) + 1
)

func binOf(db float64) int { return max(0, min(histBins-1, int((db-floorDB)/histStep))) }

func dbOfBin(b int) float64 { return floorDB + (float64(b)+0.5)*histStep }

// nBands is the broadband level and the three bands.
const nBands = 1 + 3

// biquad is a second-order IIR filter section (direct form I).
type biquad struct {
	b0, b1, b2, a1, a2 float64
	x1, x2, y1, y2     float64
}

func (f *biquad) step(x float64) float64 {
	y := f.b0*x + f.b1*f.x1 + f.b2*f.x2 - f.a1*f.y1 - f.a2*f.y2
	f.x2, f.x1, f.y2, f.y1 = f.x1, x, f.y1, y
	return y
}

// The three shapes of section the detector uses (the Audio EQ Cookbook's:
// R. Bristow-Johnson's formulas).
func newBiquad(kind string, f0, q float64, rate int) biquad {
	w := 2 * math.Pi * f0 / float64(rate)
	cw, alpha := math.Cos(w), math.Sin(w)/(2*q)
	var b0, b1, b2 float64
	switch kind {
	case "lowpass":
		b0, b1, b2 = (1-cw)/2, 1-cw, (1-cw)/2
	case "highpass":
		b0, b1, b2 = (1+cw)/2, -(1 + cw), (1+cw)/2
	default: // band-pass, 0 dB at f0
		b0, b1, b2 = alpha, 0, -alpha
	}
	a0 := 1 + alpha
	return biquad{b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: -2 * cw / a0, a2: (1 - alpha) / a0}
}

// scanner is the detector's state while it reads.
type scanner struct {
	d        Detector
	rate, ir int        // the recording's rate and the analysis rate
	dec      decimator  // the recording to the analysis rate
	refDec   decimator  // the other channels likewise
	own      bandMeter  // the channel read, by band
	other    *bandMeter // the other channels (nil: none read)
	bleed    bleedEstimate
	frameLen int                // analysis samples per frame
	fill     int                // analysis samples in the frame so far
	frames   int                // frames measured
	samples  int64              // the recording's samples read
	last     [2][nBands]float64 // the energies of the two frames before

	// the window: each frame's smoothed levels (as histogram bins) in a
	// ring of 2·half+1 frames, and each band's histogram over it
	half   int
	ring   [][nBands]uint16
	raw    [][nBands]uint16 // the frames' own levels, unsmoothed, for the edges
	hist   [nBands][]int32
	pushed int // frames in the window so far (smoothed)
	// the window's measures, refreshed every statEvery frames
	floor, speech, above [nBands]float64
	statAt               int

	decided int // frames decided
	// the silence being built: from silStart; pending frames of sound
	// (fewer than minSound) may still be a blip inside it
	inSilence             bool
	silStart, pending     int
	depthSum              float64
	coreFirst, coreLast   int
	firstSound, lastSound int
	silences              []Silence
	// the recording's measures over every frame decided, for Levels
	lvHist [3][]int32
	env    envelopeBuilder
}

// statEvery is how often, in frames, the window's measures are
// refreshed; minSound is the fewest frames of sound that end a silence.
const (
	statEvery = 20
	minSound  = 4
)

func newScanner(d Detector, rate int) *scanner {
	ir := min(rate, analysisRate)
	// the recording opens in silence: a blip of sound at its start (a
	// filter's first samples, a click) does not begin its speech
	s := &scanner{d: d, rate: rate, ir: ir, firstSound: -1, lastSound: -1, statAt: -1, inSilence: true}
	s.own = newBandMeter(ir)
	s.dec, s.refDec = decimator{rate: rate, ir: ir}, decimator{rate: rate, ir: ir}
	s.frameLen = max(1, int(math.Round(d.Frame.Seconds()*float64(ir))))
	s.half = max(1, int(d.Window/d.Frame))
	s.ring = make([][nBands]uint16, 2*s.half+1)
	s.raw = make([][nBands]uint16, 2*s.half+1)
	for b := range s.hist {
		s.hist[b] = make([]int32, histBins)
	}
	for i := range s.lvHist {
		s.lvHist[i] = make([]int32, histBins)
	}
	s.env = newEnvelopeBuilder(ir)
	return s
}

// decimator brings samples at rate to the analysis rate ir: each
// analysis sample the mean of the input samples in its span (a box
// filter: enough against aliasing for levels).
type decimator struct {
	rate, ir int
	phase    int     // where the input is, in 1/(rate·ir) s
	acc      float64 // the sum of the input samples of the analysis sample
	accN     int
}

// decimate appends to out the analysis samples that p completes.
func (d *decimator) decimate(p []float32, out []float64) []float64 {
	if d.ir == d.rate {
		for _, v := range p {
			out = append(out, float64(v))
		}
		return out
	}
	if k := d.rate / d.ir; d.rate%d.ir == 0 {
		i := 0
		for ; d.accN > 0 && i < len(p); i++ {
			d.acc += float64(p[i])
			if d.accN++; d.accN == k {
				out = append(out, d.acc/float64(k))
				d.acc, d.accN = 0, 0
			}
		}
		inv := 1 / float64(k)
		for ; i+k <= len(p); i += k {
			var sum float64
			for _, v := range p[i : i+k] {
				sum += float64(v)
			}
			out = append(out, sum*inv)
		}
		for ; i < len(p); i++ {
			d.acc += float64(p[i])
			d.accN++
		}
		return out
	}
	for _, v := range p {
		d.acc += float64(v)
		d.accN++
		d.phase += d.ir
		if d.phase >= d.rate {
			d.phase -= d.rate
			out = append(out, d.acc/float64(d.accN))
			d.acc, d.accN = 0, 0
		}
	}
	return out
}

// bandMeter measures a signal's energy over all of it (its variance: no
// filter, which would ring on past a word's abrupt end, and no DC) and in
// each band, frame by frame.
type bandMeter struct {
	hp     biquad    // the bands' high-pass
	bands  [3]biquad // the bands
	lowHP  biquad    // the lowest band's second (high-pass) section
	energy [nBands]float64
	sum    float64 // the frame's samples' sum
}

func newBandMeter(ir int) bandMeter {
	var m bandMeter
	m.hp = newBiquad("highpass", 100, 0.707, ir)
	nyq := float64(ir) / 2
	for i, e := range bandEdges {
		lo, hi := min(e[0], 0.6*nyq), min(e[1], 0.9*nyq)
		switch i {
		case 0:
			m.bands[i] = newBiquad("lowpass", hi, 0.707, ir)
			m.lowHP = newBiquad("highpass", lo, 0.707, ir)
		case len(bandEdges) - 1:
			m.bands[i] = newBiquad("highpass", lo, 0.707, ir)
		default:
			f0 := math.Sqrt(lo * hi)
			m.bands[i] = newBiquad("bandpass", f0, f0/(hi-lo), ir)
		}
	}
	return m
}

// measure adds samples xs to the frame being measured (the filters
// copied to locals for the loop: the hot path of a scan).
func (m *bandMeter) measure(xs []float64) {
	hp, low, lowHP, mid, high := m.hp, m.bands[0], m.lowHP, m.bands[1], m.bands[2]
	sum, e0, e1, e2, e3 := m.sum, m.energy[0], m.energy[1], m.energy[2], m.energy[3]
	for _, x := range xs {
		sum += x
		e0 += x * x
		y := hp.step(x)
		l := lowHP.step(low.step(y))
		e1 += l * l
		v := mid.step(y)
		e2 += v * v
		v = high.step(y)
		e3 += v * v
	}
	m.hp, m.bands[0], m.lowHP, m.bands[1], m.bands[2] = hp, low, lowHP, mid, high
	m.sum, m.energy[0], m.energy[1], m.energy[2], m.energy[3] = sum, e0, e1, e2, e3
}

// take returns the mean energies of the frame of n samples just measured
// and starts the next.
func (m *bandMeter) take(n int) [nBands]float64 {
	var e [nBands]float64
	for b := range e {
		e[b] = m.energy[b] / float64(n)
		m.energy[b] = 0
	}
	mean := m.sum / float64(n)
	e[0] = max(0, e[0]-mean*mean)
	m.sum = 0
	return e
}

// bleedEstimate learns how much of the other channels bleeds into the one
// read, band by band: the share of their energy this channel holds in
// the frames where they hold sound and it the least (its own pauses,
// where the bleed is all it holds): the lowest tenth of that share over
// the recording so far.
type bleedEstimate struct {
	hist  [nBands][]int32
	n     int
	share [nBands]float64
}

// bleedMinFrames is how many frames of the other side's sound the
// estimate needs before it takes anything out.
const bleedMinFrames = 100

// unbleed takes the other channels' bleed out of frame energies e (of
// the channel read) given theirs, er: twice the share learned, so that
// what is left of a pause is silence.
func (b *bleedEstimate) unbleed(e, er [nBands]float64) [nBands]float64 {
	if b.hist[0] == nil {
		for i := range b.hist {
			b.hist[i] = make([]int32, histBins)
		}
	}
	if toDB(er[0]) > bleedActive {
		for i := range e {
			b.hist[i][binOf(toDB(e[i])-toDB(er[i])+bleedOffset)]++
		}
		b.n++
		if b.n >= bleedMinFrames && b.n%statEvery == 0 {
			for i := range b.share {
				b.share[i] = math.Pow(10, (quantile(b.hist[i], 0.1)-bleedOffset)/10)
			}
		}
	}
	if b.n < bleedMinFrames {
		return e
	}
	for i := range e {
		e[i] = max(e[i]*1e-4, e[i]-2*b.share[i]*er[i])
	}
	return e
}

// bleedActive is the level (dBFS) over which the other channels hold
// sound; bleedOffset moves a share's level (dB, -70 to +60) into the
// histograms' range.
const (
	bleedActive = -50.0
	bleedOffset = -50.0
)

// analyze takes samples of the channel read, xs, and of the others, rs
// (as many, or nil where there are none), at the analysis rate.
func (s *scanner) analyze(xs, rs []float64) {
	for len(xs) > 0 {
		n := min(len(xs), s.frameLen-s.fill)
		for _, x := range xs[:n] {
			s.env.addOne(float32(x))
		}
		s.own.measure(xs[:n])
		if s.other != nil {
			s.other.measure(rs[:n])
			rs = rs[n:]
		}
		xs = xs[n:]
		if s.fill += n; s.fill == s.frameLen {
			s.endFrame()
		}
	}
}

// endFrame takes the energies of the frame just filled: the frame before
// it, its levels smoothed over it and its two neighbours (a 5 ms frame of
// narrow-band noise wavers by several dB), goes into the window.
func (s *scanner) endFrame() {
	e := s.own.take(s.fill)
	if s.other != nil {
		e = s.bleed.unbleed(e, s.other.take(s.fill))
	}
	s.fill = 0
	if s.frames >= 1 {
		var lv [nBands]float64
		for b := range lv {
			sum, n := s.last[0][b]+e[b], 2.0
			if s.frames >= 2 {
				sum, n = sum+s.last[1][b], 3
			}
			lv[b] = toDB(sum / n)
		}
		s.push(lv, s.last[0])
	}
	s.last[1], s.last[0] = s.last[0], e
	s.frames++
}

// push puts the next frame's levels into the window and decides the frame
// at the window's centre.
func (s *scanner) push(lv, raw [nBands]float64) {
	k := s.pushed
	slot := k % len(s.ring)
	if k >= len(s.ring) {
		s.drop(slot)
	}
	for b := range lv {
		bin := binOf(lv[b])
		s.ring[slot][b] = uint16(bin)
		s.raw[slot][b] = uint16(binOf(toDB(raw[b])))
		s.hist[b][bin]++
	}
	s.pushed++
	if c := k - s.half; c >= 0 {
		s.decide(c)
	}
}

// drop takes the frame in slot out of the histograms.
func (s *scanner) drop(slot int) {
	for b := range s.hist {
		s.hist[b][s.ring[slot][b]]--
	}
}

// close ends the recording: the last frame goes into the window, the
// frames after the last centre are decided, and the scan is returned.
func (s *scanner) close() *Scan {
	if s.fill > 0 && s.frames == 0 {
		s.endFrame()
	}
	if s.frames >= 1 {
		var lv [nBands]float64
		for b := range lv {
			sum, n := s.last[0][b], 1.0
			if s.frames >= 2 {
				sum, n = sum+s.last[1][b], 2
			}
			lv[b] = toDB(sum / n)
		}
		s.push(lv, s.last[0])
	}
	for c := max(0, s.pushed-s.half); c < s.pushed; c++ {
		if old := c - s.half - 1; old >= 0 && old+len(s.ring) >= s.pushed {
			s.drop(old % len(s.ring))
		}
		s.decide(c)
	}
	s.endSilence(s.decided) // an open silence runs past the last sound: left out below
	frame := s.d.Frame
	at := func(f int) time.Duration { return time.Duration(f) * frame }
	lv := Levels{Floor: floorDB, Speech: floorDB, Threshold: floorDB, Duration: time.Duration(float64(s.samples) * float64(time.Second) / float64(s.rate))}
	if s.frames > 0 {
		lv.Floor, lv.Speech, lv.Threshold = median(s.lvHist[0]), median(s.lvHist[1]), median(s.lvHist[2])
	}
	var out []Silence
	if s.firstSound >= 0 {
		lv.FirstSound, lv.LastSound = at(s.firstSound), at(s.lastSound+1)
		for _, sl := range s.silences {
			if sl.Start >= lv.FirstSound && sl.End <= lv.LastSound {
				out = append(out, sl)
			}
		}
	}
	return &Scan{Silences: out, Levels: lv, Rate: s.rate, Envelope: s.env.envelope()}
}

// quantile returns the level under which share q of a histogram's frames
// lie.
func quantile(h []int32, q float64) float64 {
	var n int64
	for _, c := range h {
		n += int64(c)
	}
	if n == 0 {
		return floorDB
	}
	want := int64(q * float64(n-1))
	var acc int64
	for b, c := range h {
		acc += int64(c)
		if acc > want {
			return dbOfBin(b)
		}
	}
	return dbOfBin(len(h) - 1)
}

func median(h []int32) float64 { return quantile(h, 0.5) }

// refresh measures the window: each band's noise floor (its quietest
// frames' level), how far above it a frame must rise to hold sound (more
// where the floor wavers), and the speech's level (its loud frames').
func (s *scanner) refresh() {
	for b := range s.hist {
		lo, mid := quantile(s.hist[b], 0.05), quantile(s.hist[b], 0.15)
		s.floor[b] = lo
		s.above[b] = max(s.d.AboveFloor, min(12, 2.5*(mid-lo)))
		s.speech[b] = quantile(s.hist[b], 0.9)
	}
}

// decide says whether frame c holds sound and builds the silences.
func (s *scanner) decide(c int) {
	if s.statAt < 0 || c-s.statAt >= statEvery {
		s.refresh()
		s.statAt = c
	}
	slot := c % len(s.ring)
	bins := s.ring[slot]
	speechCut := s.speech[0] - s.d.BelowSpeech
	level := dbOfBin(int(bins[0]))
	sound := s.holdsSound(bins)
	threshold := max(speechCut, s.floor[0]+s.above[0]) // the broadband's, for Levels
	s.lvHist[0][binOf(s.floor[0])]++
	s.lvHist[1][binOf(s.speech[0])]++
	s.lvHist[2][binOf(threshold)]++
	s.decided = c + 1
	if sound {
		start := c
		if s.inSilence {
			// a blip of sound shorter than minSound stays inside the
			// silence
			s.pending++
			if s.pending < minSound {
				return
			}
			start = c - s.pending + 1
			s.endSilence(start)
			s.pending = 0
		}
		if s.firstSound < 0 {
			s.firstSound = start
		}
		s.lastSound = c
		return
	}
	if !s.inSilence {
		s.inSilence, s.silStart, s.depthSum = true, c, 0
		s.coreFirst, s.coreLast = -1, -1
	}
	// the frames of a blip too short to end the silence belong to it
	for i := s.pending; i > 0; i-- {
		s.addSilent(c-i, level)
	}
	s.pending = 0
	s.addSilent(c, level)
}

// holdsSound says whether a frame of levels bins holds sound by the
// window's measures.
func (s *scanner) holdsSound(bins [nBands]uint16) bool {
	if dbOfBin(int(bins[0])) <= s.speech[0]-s.d.BelowSpeech {
		return false
	}
	for b := range bins {
		if dbOfBin(int(bins[b])) > s.floor[b]+s.above[b] {
			return true
		}
	}
	return false
}

// rawSilent says whether frame c, in the window still, is silent by its
// own levels (unsmoothed).
func (s *scanner) rawSilent(c int) bool {
	if c < 0 || c >= s.pushed || c < s.pushed-len(s.ring) {
		return false
	}
	return !s.holdsSound(s.raw[c%len(s.ring)])
}

// edgeFrames is how far a silence's edges move, in frames, to where the
// frames' own levels put them: smoothing over three frames lets sound
// spill one frame into the silence on each side, and filters ring.
const edgeFrames = 2

// coreAbove is how near the noise floor, in dB, a silent frame's level
// must be to count in the silence's core.
const coreAbove = 4.0

func (s *scanner) addSilent(c int, level float64) {
	s.depthSum += s.speech[0] - level
	if level <= s.floor[0]+coreAbove {
		if s.coreFirst < 0 {
			s.coreFirst = c
		}
		s.coreLast = c
	}
}

// endSilence ends the silence being built at frame end (its first frame
// of sound), keeping it if it is long enough.
func (s *scanner) endSilence(end int) {
	if !s.inSilence {
		return
	}
	s.inSilence = false
	// the edges where the frames' own levels put them
	for i := 0; i < edgeFrames && s.rawSilent(s.silStart-1) && s.silStart-1 > s.lastSound-minSound; i++ {
		s.silStart--
	}
	for i := 0; i < edgeFrames && s.rawSilent(end); i++ {
		end++
	}
	n := end - s.silStart
	frame := s.d.Frame
	if n <= 0 || time.Duration(n)*frame < s.d.MinSilence {
		return
	}
	sl := Silence{Start: time.Duration(s.silStart) * frame, End: time.Duration(end) * frame, Depth: s.depthSum / float64(n)}
	// no frame at the floor: the core is empty, at the middle
	sl.CoreStart = sl.Start + sl.Length()/2
	sl.CoreEnd = sl.CoreStart
	if s.coreFirst >= 0 {
		sl.CoreStart, sl.CoreEnd = time.Duration(max(s.coreFirst, s.silStart))*frame, time.Duration(min(s.coreLast+1, end))*frame
	}
	s.silences = append(s.silences, sl)
}

// Envelope is a recording's waveform at a coarse step: the lowest and
// highest sample of each span of Step (as the detector analyzes it: at 8
// kHz, each sample the mean of the recording's in its span), for drawing
// it.
type Envelope struct {
	Step     time.Duration
	Min, Max []float32
}

// maxEnvelope is the most spans an Envelope keeps: past it, neighbours
// merge and the step doubles.
const maxEnvelope = 1 << 13

// envelopeBuilder builds an Envelope in constant memory.
type envelopeBuilder struct {
	rate, per, n int // samples a span, samples in the open span
	lo, hi       float32
	env          Envelope
}

func newEnvelopeBuilder(rate int) envelopeBuilder {
	per := max(1, rate/1000)
	return envelopeBuilder{rate: rate, per: per, env: Envelope{Step: time.Duration(per) * time.Second / time.Duration(rate)}}
}

func (e *envelopeBuilder) addOne(v float32) {
	if e.n == 0 {
		e.lo, e.hi = v, v
	}
	e.lo, e.hi = min(e.lo, v), max(e.hi, v)
	if e.n++; e.n == e.per {
		e.flush()
	}
}

func (e *envelopeBuilder) flush() {
	e.env.Min = append(e.env.Min, e.lo)
	e.env.Max = append(e.env.Max, e.hi)
	e.n = 0
	if len(e.env.Min) == maxEnvelope {
		for i := range maxEnvelope / 2 {
			e.env.Min[i] = min(e.env.Min[2*i], e.env.Min[2*i+1])
			e.env.Max[i] = max(e.env.Max[2*i], e.env.Max[2*i+1])
		}
		e.env.Min, e.env.Max = e.env.Min[:maxEnvelope/2], e.env.Max[:maxEnvelope/2]
		e.per *= 2
		e.env.Step *= 2
	}
}

func (e *envelopeBuilder) envelope() Envelope {
	if e.n > 0 {
		e.flush()
	}
	return e.env
}

// toDB is a mean square's level in dB.
func toDB(e float64) float64 {
	if e <= 1e-12 {
		return floorDB
	}
	return max(floorDB, 10*math.Log10(e))
}
