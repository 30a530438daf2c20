package plot

import (
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// DefaultTimelines is how many of the worst turns a Collector keeps a full
// timeline for.
const DefaultTimelines = 3

// Collector accumulates played turns for every plot of a report: the
// fleet view, the ITL tail and the timelines of the worst turns. Add copies
// what it keeps, so the playout may be reused.
type Collector struct {
	// Tail and Fleet accumulate every turn.
	Tail  *Tail
	Fleet Fleet

	keep      int
	timelines []Timeline
	scores    []score
}

type score struct{ interrupted, silence time.Duration }

func (a score) worse(b score) bool {
	if a.interrupted != b.interrupted {
		return a.interrupted > b.interrupted
	}
	return a.silence > b.silence
}

// NewCollector returns a Collector keeping the timelines of the keep worst
// turns (0: DefaultTimelines) and splitting tolerances at window after the
// player starts (0: DefaultStartWindow).
func NewCollector(keep int, window time.Duration) *Collector {
	if keep <= 0 {
		keep = DefaultTimelines
	}
	return &Collector{Tail: NewTail(window), keep: keep}
}

// Add accounts one turn and its finished playout.
func (c *Collector) Add(t *pipeline.Turn, p *pipeline.Playout) {
	c.Tail.Add(t, p)
	c.Fleet.Add(t, p)
	if p == nil {
		return
	}
	ft := &c.Fleet.Turns[len(c.Fleet.Turns)-1]
	s := score{ft.Interrupted, ft.Silence}
	if len(c.timelines) < c.keep {
		c.timelines = append(c.timelines, NewTimeline(t, p))
		c.scores = append(c.scores, s)
		return
	}
	least := 0
	for i := range c.scores {
		if c.scores[least].worse(c.scores[i]) || (!c.scores[i].worse(c.scores[least]) && i > least) {
			least = i
		}
	}
	if s.worse(c.scores[least]) {
		copy(c.timelines[least:], c.timelines[least+1:])
		copy(c.scores[least:], c.scores[least+1:])
		c.timelines[len(c.timelines)-1] = NewTimeline(t, p)
		c.scores[len(c.scores)-1] = s
	}
}

// Timelines returns the kept timelines, worst first (ties in the order
// the turns came).
func (c *Collector) Timelines() []Timeline {
	idx := make([]int, len(c.timelines))
	for i := range idx {
		idx[i] = i
	}
	// insertion sort: at most a handful
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && c.scores[idx[j]].worse(c.scores[idx[j-1]]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	out := make([]Timeline, len(idx))
	for i, k := range idx {
		out[i] = c.timelines[k]
	}
	return out
}
