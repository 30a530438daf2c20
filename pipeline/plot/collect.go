package plot

import (
	"slices"
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
	scores    []pipeline.Severity
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
	s := c.Fleet.Turns[len(c.Fleet.Turns)-1].Severity
	if len(c.timelines) < c.keep {
		c.timelines = append(c.timelines, NewTimeline(t, p))
		c.scores = append(c.scores, s)
		return
	}
	// replace the least bad kept turn (the last of equals: the one that
	// came latest) if this one ranks before it
	least := 0
	for i := range c.scores {
		if !c.scores[i].Worse(c.scores[least]) {
			least = i
		}
	}
	if s.Worse(c.scores[least]) {
		copy(c.timelines[least:], c.timelines[least+1:])
		copy(c.scores[least:], c.scores[least+1:])
		c.timelines[len(c.timelines)-1] = NewTimeline(t, p)
		c.scores[len(c.scores)-1] = s
	}
}

// Timelines returns the kept timelines, worst first
// (pipeline.CompareSeverity; equals in the order the turns came).
func (c *Collector) Timelines() []Timeline {
	idx := make([]int, len(c.timelines))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return pipeline.CompareSeverity(c.scores[a], c.scores[b]) })
	out := make([]Timeline, len(idx))
	for i, k := range idx {
		out[i] = c.timelines[k]
	}
	return out
}
