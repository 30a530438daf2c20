package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrLoad reports a Load that cannot run as configured.
var ErrLoad = errors.New("invalid load")

// Load says how hard to drive a server: at most Concurrency requests in
// flight, started back to back (closed loop) or, with Rate, at Poisson
// arrivals of Rate requests per second (open loop); until Requests have
// been started or Duration has passed, whichever comes first.
type Load struct {
	// Concurrency caps the requests in flight (0: 1 without Rate,
	// unbounded with it).
	Concurrency int
	// Rate, when positive, starts requests at Poisson arrivals of this
	// many per second.
	Rate float64
	// Requests stops after this many requests (0: no limit).
	Requests int
	// Duration stops starting requests after this long (0: no limit).
	Duration time.Duration
	// Seed seeds the arrival times (Rate).
	Seed uint64
}

// Validate checks the load is bounded and sensible.
func (l Load) Validate() error {
	switch {
	case l.Concurrency < 0:
		return fmt.Errorf("%w: concurrency %d; want 0 or more", ErrLoad, l.Concurrency)
	case l.Rate < 0 || l.Rate != l.Rate:
		return fmt.Errorf("%w: rate %v; want requests per second > 0 (or 0 for back to back)", ErrLoad, l.Rate)
	case l.Requests < 0:
		return fmt.Errorf("%w: requests %d; want 0 or more", ErrLoad, l.Requests)
	case l.Duration < 0:
		return fmt.Errorf("%w: duration %v; want 0 or more", ErrLoad, l.Duration)
	case l.Requests == 0 && l.Duration == 0:
		return fmt.Errorf("%w: neither a request count nor a duration: the load would never end", ErrLoad)
	}
	return nil
}

// Run calls do for request 0, 1, 2, ... as the load says, each in its own
// goroutine, and returns when every call has returned. Cancelling ctx
// stops new requests at once and is passed to the running ones. It
// returns ctx's error if ctx was cancelled, else nil.
func (l Load) Run(ctx context.Context, do func(ctx context.Context, i int)) error {
	if err := l.Validate(); err != nil {
		return err
	}
	stop := ctx
	if l.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithTimeout(ctx, l.Duration)
		defer cancel()
	}
	slots := l.Concurrency
	if slots == 0 && l.Rate == 0 {
		slots = 1
	}
	var sem chan struct{}
	if slots > 0 {
		sem = make(chan struct{}, slots)
	}
	rng := rand.New(rand.NewPCG(l.Seed, 0x756e64657272756e))
	var wg sync.WaitGroup
	next := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; l.Requests == 0 || i < l.Requests; i++ {
		if l.Rate > 0 {
			next = next.Add(time.Duration(rng.ExpFloat64() / l.Rate * float64(time.Second)))
			timer.Reset(time.Until(next))
			select {
			case <-timer.C:
			case <-stop.Done():
			}
		}
		if stop.Err() != nil {
			break
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-stop.Done():
			}
			if stop.Err() != nil {
				break
			}
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			do(ctx, i)
			if sem != nil {
				<-sem
			}
		}(i)
	}
	wg.Wait()
	return ctx.Err()
}

// DefaultPrompts are asked when no prompts are given: short requests of
// the kind a voice assistant answers, some short, some long.
var DefaultPrompts = []Prompt{
	{Text: "What's a good way to start the morning? Answer in two sentences."},
	{Text: "Explain in a short paragraph why the sky is blue, for a ten-year-old."},
	{Text: "Give me three ideas for a quick vegetarian dinner, with one line on each."},
	{Text: "Tell me a short story about a lighthouse keeper and a storm."},
	{Text: "How do I reset a home Wi-Fi router? Walk me through the steps."},
	{Text: "Summarize the plot of Romeo and Juliet in about a hundred words."},
	{Text: "What should I pack for a weekend hiking trip in the mountains?"},
	{Text: "Describe how a bill becomes a law, briefly."},
}

// maxPromptLine is the longest prompt line ReadPrompts takes.
const maxPromptLine = 4 << 20

// ReadPrompts reads prompts, one per line: a JSON object with "prompt"
// (or "text") or "messages", or a plain line of text. Blank lines and
// lines starting with '#' are skipped. name labels errors.
func ReadPrompts(r io.Reader, name string) ([]Prompt, error) {
	var out []Prompt
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxPromptLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		if b[0] != '{' {
			out = append(out, Prompt{Text: string(b)})
			continue
		}
		var p struct {
			Prompt   *string   `json:"prompt"`
			Text     *string   `json:"text"`
			Messages []Message `json:"messages"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v; want {\"prompt\": \"...\"}, {\"messages\": [...]} or a plain line", ErrRequest, name, line, err)
		}
		switch {
		case len(p.Messages) > 0:
			out = append(out, Prompt{Messages: p.Messages})
		case p.Prompt != nil:
			out = append(out, Prompt{Text: *p.Prompt})
		case p.Text != nil:
			out = append(out, Prompt{Text: *p.Text})
		default:
			return nil, fmt.Errorf("%w: %s:%d: JSON line without \"prompt\", \"text\" or \"messages\"", ErrRequest, name, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no prompts", ErrRequest, name)
	}
	return out, nil
}
