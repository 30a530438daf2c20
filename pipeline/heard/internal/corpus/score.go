package corpus

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Scoring rules.
const (
	// MinScored is the shortest gap of the truth that is scored: a
	// shorter one (the stream's own, a few ms) is neither to be found nor
	// a false find where it lies.
	MinScored = MinStall
	// Tolerance is how far apart a found gap and a true one may lie and
	// still be the same gap; a start within it is on time.
	Tolerance = 20 * time.Millisecond
)

// Found is a gap a detector reported.
type Found struct {
	Start, Length time.Duration
}

// Score is how the gaps found in recordings compare with their truth; it
// adds up over recordings.
type Score struct {
	// Truth is how many true gaps were scored, Found how many gaps were
	// reported (less those on a true gap shorter than MinScored), and
	// Matched how many of each were paired.
	Truth, Found, Matched int
	// OnTime is how many of the matched started within Tolerance of the
	// truth; StartErrors and LengthErrors are every match's absolute
	// error.
	OnTime                    int
	StartErrors, LengthErrors []time.Duration
	// ByPlace and ByLength count the true gaps scored and found by place
	// and by length bucket (LengthBuckets).
	ByPlace  map[Place][2]int
	ByLength map[string][2]int
}

// LengthBuckets are the gap lengths Score counts apart: from each bound
// to the next.
var LengthBuckets = []time.Duration{MinScored, 80 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond}

func lengthBucket(d time.Duration) string {
	i := sort.Search(len(LengthBuckets), func(i int) bool { return LengthBuckets[i] > d }) - 1
	if i < 0 {
		return fmt.Sprintf("< %d ms", LengthBuckets[0].Milliseconds())
	}
	if i == len(LengthBuckets)-1 {
		return fmt.Sprintf(">= %d ms", LengthBuckets[i].Milliseconds())
	}
	return fmt.Sprintf("%d-%d ms", LengthBuckets[i].Milliseconds(), LengthBuckets[i+1].Milliseconds())
}

// Match scores found against truth. A found gap and a true one are the
// same gap when they overlap or lie within Tolerance of each other; each
// is paired at most once, the pairs with the nearest starts first. A true
// gap shorter than MinScored is not scored, and a found gap paired with
// one (or on one) is no false find. Unpaired found gaps are false finds,
// unpaired true gaps misses: a true gap found as two pieces is one match
// and one false find.
func Match(truth []Gap, found []Found) Score {
	s := Score{ByPlace: map[Place][2]int{}, ByLength: map[string][2]int{}}
	type pair struct {
		t, f int
		d    time.Duration
	}
	var pairs []pair
	for i, g := range truth {
		for j, f := range found {
			if f.Start <= g.End()+Tolerance && g.Start <= f.Start+f.Length+Tolerance {
				pairs = append(pairs, pair{i, j, abs(f.Start - g.Start)})
			}
		}
	}
	sort.SliceStable(pairs, func(a, b int) bool { return pairs[a].d < pairs[b].d })
	tUsed, fUsed := make([]bool, len(truth)), make([]bool, len(found))
	shortFound := make([]bool, len(found))
	for _, p := range pairs {
		if tUsed[p.t] || fUsed[p.f] {
			continue
		}
		tUsed[p.t], fUsed[p.f] = true, true
		g, f := truth[p.t], found[p.f]
		if g.Length < MinScored {
			shortFound[p.f] = true
			continue
		}
		s.Matched++
		if p.d <= Tolerance {
			s.OnTime++
		}
		s.StartErrors = append(s.StartErrors, p.d)
		s.LengthErrors = append(s.LengthErrors, abs(f.Length-g.Length))
	}
	// a found gap left over on a short true gap is not false either
	for _, p := range pairs {
		if !fUsed[p.f] && truth[p.t].Length < MinScored {
			shortFound[p.f] = true
		}
	}
	for i, g := range truth {
		if g.Length < MinScored {
			continue
		}
		s.Truth++
		found := 0
		if tUsed[i] {
			found = 1
		}
		b := lengthBucket(g.Length)
		s.ByPlace[g.Place] = [2]int{s.ByPlace[g.Place][0] + 1, s.ByPlace[g.Place][1] + found}
		s.ByLength[b] = [2]int{s.ByLength[b][0] + 1, s.ByLength[b][1] + found}
	}
	for j := range found {
		if !shortFound[j] {
			s.Found++
		}
	}
	return s
}

// Add adds o to s.
func (s *Score) Add(o Score) {
	s.Truth += o.Truth
	s.Found += o.Found
	s.Matched += o.Matched
	s.OnTime += o.OnTime
	s.StartErrors = append(s.StartErrors, o.StartErrors...)
	s.LengthErrors = append(s.LengthErrors, o.LengthErrors...)
	if s.ByPlace == nil {
		s.ByPlace, s.ByLength = map[Place][2]int{}, map[string][2]int{}
	}
	for k, v := range o.ByPlace {
		s.ByPlace[k] = [2]int{s.ByPlace[k][0] + v[0], s.ByPlace[k][1] + v[1]}
	}
	for k, v := range o.ByLength {
		s.ByLength[k] = [2]int{s.ByLength[k][0] + v[0], s.ByLength[k][1] + v[1]}
	}
}

// Precision is the share of the gaps found that are true (1 when none
// were found).
func (s Score) Precision() float64 { return ratio(s.Matched, s.Found) }

// Recall is the share of the true gaps that were found (1 when there
// were none).
func (s Score) Recall() float64 { return ratio(s.Matched, s.Truth) }

// OnTimeShare is the share of the matched gaps whose start is within
// Tolerance (1 when none matched).
func (s Score) OnTimeShare() float64 { return ratio(s.OnTime, s.Matched) }

// StartError returns the q-quantile (0.5 the median) of the matches'
// absolute start errors, by linear interpolation; 0 with none.
func (s Score) StartError(q float64) time.Duration { return quantile(s.StartErrors, q) }

// LengthError returns the q-quantile of the matches' absolute length
// errors, as StartError.
func (s Score) LengthError(q float64) time.Duration { return quantile(s.LengthErrors, q) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + time.Duration((h-float64(lo))*float64(s[lo+1]-s[lo]))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
