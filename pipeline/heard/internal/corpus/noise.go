package corpus

import (
	"math"
	"math/cmplx"
	"math/rand/v2"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Colour is a noise's spectrum: its power falls as 1/f^Exponent.
type Colour struct {
	Name     string
	Exponent float64
}

// The colours of noise: white (flat, 0 dB an octave), pink (1/f, -3 dB an
// octave), brown (1/f², -6 dB an octave; red, as of Brownian motion).
var (
	White = Colour{"white", 0}
	Pink  = Colour{"pink", 1}
	Brown = Colour{"brown", 2}
)

// noiseFloorHz is the frequency under which coloured noise's spectrum is
// flat: its power would otherwise grow without bound towards 0 Hz, as a
// drift no microphone passes.
const noiseFloorHz = 20.0

// Noise returns n samples of Gaussian noise of colour c at rate with an RMS
// level of db dBFS (20·log10 of the RMS, full scale 1), from rng. It is
// made in the frequency domain: each bin's complex Gaussian amplitude
// scaled by f^(-Exponent/2) (flat under 20 Hz, none at 0 Hz), transformed
// back over a power-of-two length and cut to n.
func Noise(rng *rand.Rand, c Colour, n, rate int, db float64) []float32 {
	if n <= 0 {
		return nil
	}
	size := 1
	for size < n {
		size *= 2
	}
	size = max(size, 2)
	coeff := make([]complex128, size/2+1)
	for k := 1; k < len(coeff); k++ {
		f := max(noiseFloorHz, float64(k)*float64(rate)/float64(size))
		g := math.Pow(f, -c.Exponent/2)
		coeff[k] = complex(g*rng.NormFloat64(), g*rng.NormFloat64())
	}
	coeff[len(coeff)-1] = complex(real(coeff[len(coeff)-1]), 0) // Nyquist
	x := fourier.NewFFT(size).Sequence(nil, coeff)
	var sum float64
	for _, v := range x[:n] {
		sum += v * v
	}
	scale := 0.0
	if sum > 0 {
		scale = math.Pow(10, db/20) / math.Sqrt(sum/float64(n))
	}
	out := make([]float32, n)
	for i, v := range x[:n] {
		out[i] = float32(v * scale)
	}
	return out
}

// SpectrumSlope returns the slope of s's power spectrum (at rate) in dB
// an octave between from and to Hz: Welch's estimate (Hann windows of
// 4096 samples, half overlapping), fitted by least squares on log2 of the
// frequency.
func SpectrumSlope(s []float32, rate int, from, to float64) float64 {
	const size = 4096
	fft := fourier.NewFFT(size)
	win := make([]float64, size)
	for i := range win {
		win[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(size-1))
	}
	psd := make([]float64, size/2+1)
	buf := make([]float64, size)
	var coeff []complex128
	for off := 0; off+size <= len(s); off += size / 2 {
		for i := range buf {
			buf[i] = float64(s[off+i]) * win[i]
		}
		coeff = fft.Coefficients(coeff, buf)
		for k, v := range coeff {
			a := cmplx.Abs(v)
			psd[k] += a * a
		}
	}
	var n, sx, sy, sxx, sxy float64
	for k := 1; k < len(psd); k++ {
		f := float64(k) * float64(rate) / size
		if f < from || f > to || psd[k] <= 0 {
			continue
		}
		x, y := math.Log2(f), 10*math.Log10(psd[k])
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// Level returns the RMS level of s in dBFS; -inf for silence.
func Level(s []float32) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return 10 * math.Log10(sum/float64(max(1, len(s))))
}

// SpeechLevel returns the active speech level of s in dBFS: the RMS of the
// 10 ms frames within 30 dB of its loudest frame (a simplified ITU-T P.56
// active level, which leaves the pauses out).
func SpeechLevel(s []float32, rate int) float64 {
	n := max(1, rate/100)
	var frames []float64
	top := 0.0
	for i := 0; i+n <= len(s); i += n {
		var sum float64
		for _, v := range s[i : i+n] {
			sum += float64(v) * float64(v)
		}
		frames = append(frames, sum/float64(n))
		top = max(top, sum/float64(n))
	}
	var sum float64
	var k int
	for _, p := range frames {
		if p >= top/1000 {
			sum += p
			k++
		}
	}
	if k == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(sum/float64(k))
}
