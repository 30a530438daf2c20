package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrModel reports generator parameters that cannot describe a deployment.
var ErrModel = errors.New("invalid generator")

// The shapes a Dist can take.
const (
	// ShapeConstant always gives the mean.
	ShapeConstant = "constant"
	// ShapeLognormal is the lognormal with the given mean and coefficient
	// of variation: the usual shape of measured inter-token latencies.
	ShapeLognormal = "lognormal"
	// ShapeGamma is the gamma with the given mean and coefficient of
	// variation (shape 1/cv², scale mean·cv²); cv 1 is the exponential.
	ShapeGamma = "gamma"
)

// MinCV is the smallest coefficient of variation a Dist takes other than
// 0: below it the gamma's shape 1/cv² leaves the range of a float64, and
// the variation is none a clock could see.
const MinCV = 1e-6

// Dist is a distribution of positive values described by its mean and its
// coefficient of variation (standard deviation over mean). The zero CV is
// the constant Mean whatever the shape.
type Dist struct {
	// Shape is ShapeConstant, ShapeLognormal or ShapeGamma ("" is
	// lognormal when CV > 0).
	Shape string
	// Mean is the distribution's mean.
	Mean float64
	// CV is the coefficient of variation.
	CV float64

	// derived parameters, set by prepare
	mu, sigma float64 // lognormal
	k, theta  float64 // gamma
	d, c      float64 // Marsaglia-Tsang constants
	boost     bool    // gamma with k < 1
	prepared  bool
}

// Validate reports the first parameter out of range.
func (d Dist) Validate() error {
	switch d.Shape {
	case "", ShapeConstant, ShapeLognormal, ShapeGamma:
	default:
		return fmt.Errorf("%w: unknown distribution %q: want %s, %s or %s", ErrModel, d.Shape, ShapeConstant, ShapeLognormal, ShapeGamma)
	}
	switch {
	case !(d.Mean >= 0) || math.IsInf(d.Mean, 0):
		return fmt.Errorf("%w: mean must be a number >= 0, got %v", ErrModel, d.Mean)
	case !(d.CV >= 0) || d.CV > 100 || (d.CV > 0 && d.CV < MinCV):
		return fmt.Errorf("%w: cv must be 0 (no variation) or from %v to 100, got %v", ErrModel, MinCV, d.CV)
	case d.Shape == ShapeConstant && d.CV != 0:
		return fmt.Errorf("%w: a constant distribution has cv 0, got %v", ErrModel, d.CV)
	}
	return nil
}

// prepare computes the derived parameters; Draw needs them.
func (d *Dist) prepare() {
	d.prepared = true
	if d.CV == 0 || d.Shape == ShapeConstant || d.Mean == 0 {
		return
	}
	switch d.Shape {
	case ShapeGamma:
		d.k = 1 / (d.CV * d.CV)
		d.theta = d.Mean / d.k
		k := d.k
		if k < 1 {
			d.boost = true
			k++
		}
		d.d = k - 1.0/3
		d.c = 1 / math.Sqrt(9*d.d)
	default:
		s2 := math.Log1p(d.CV * d.CV)
		d.sigma = math.Sqrt(s2)
		d.mu = math.Log(d.Mean) - s2/2
	}
}

// Draw returns one value. The first call derives the shape's parameters
// from Mean and CV; change them only on a fresh copy.
func (d *Dist) Draw(rng *rand.Rand) float64 {
	if d.CV == 0 || d.Shape == ShapeConstant || d.Mean == 0 {
		return d.Mean
	}
	if !d.prepared {
		d.prepare()
	}
	if d.Shape == ShapeGamma {
		return d.gamma(rng)
	}
	return math.Exp(d.mu + d.sigma*rng.NormFloat64())
}

// gamma draws by Marsaglia and Tsang's method (2000), with the U^(1/k)
// boost for shapes below 1.
func (d *Dist) gamma(rng *rand.Rand) float64 {
	for {
		x := rng.NormFloat64()
		v := 1 + d.c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d.d*(1-v+math.Log(v)) {
			g := d.d * v
			if d.boost {
				g *= math.Pow(rng.Float64(), 1/d.k)
			}
			return g * d.theta
		}
	}
}

// String describes the distribution in one phrase.
func (d Dist) String() string {
	if d.CV == 0 || d.Shape == ShapeConstant {
		return fmt.Sprintf("constant %g", d.Mean)
	}
	shape := d.Shape
	if shape == "" {
		shape = ShapeLognormal
	}
	return fmt.Sprintf("%s mean %g cv %g", shape, d.Mean, d.CV)
}

// Lengths is a distribution of token counts: Dist, rounded to whole tokens
// and kept within [Min, Max] (Max 0: no upper bound). Clamping moves the
// mean a little when the bounds cut the tails.
type Lengths struct {
	Dist
	Min, Max int
}

// Validate reports the first parameter out of range.
func (l Lengths) Validate() error {
	if err := l.Dist.Validate(); err != nil {
		return err
	}
	switch {
	case l.Min < 0:
		return fmt.Errorf("%w: min must not be negative, got %d", ErrModel, l.Min)
	case l.Max != 0 && l.Max < l.Min:
		return fmt.Errorf("%w: max %d is below min %d", ErrModel, l.Max, l.Min)
	}
	return nil
}

// Draw returns one length.
func (l *Lengths) Draw(rng *rand.Rand) int {
	n := int(math.Round(l.Dist.Draw(rng)))
	if n < l.Min {
		n = l.Min
	}
	if l.Max > 0 && n > l.Max {
		n = l.Max
	}
	return n
}

// Durations draws a time.Duration from a Dist in seconds.
func drawDuration(d *Dist, rng *rand.Rand) time.Duration {
	// cut at MaxDelay: a far tail would leave the range of a Duration
	return time.Duration(min(d.Draw(rng), maxDelaySeconds) * float64(time.Second))
}

// splitmix64 scrambles a turn index into a well-spread stream seed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
