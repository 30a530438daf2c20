package pipeline

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"time"
)

// Status says how a turn's stream ended.
type Status string

// The statuses of a turn. StatusIncomplete marks a turn whose end was never
// recorded (the trace was cut while it streamed).
const (
	StatusOK         Status = "ok"
	StatusError      Status = "error"
	StatusCancelled  Status = "cancelled"
	StatusIncomplete Status = "incomplete"
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusOK, StatusError, StatusCancelled, StatusIncomplete:
		return true
	}
	return false
}

// Operation is the kind of LLM call a turn's request made, named as the
// OpenTelemetry GenAI semantic conventions name it (gen_ai.operation.name).
type Operation string

// The operations a turn's request may be.
const (
	// OperationChat is a chat completion (/v1/chat/completions).
	OperationChat Operation = "chat"
	// OperationTextCompletion is a text completion (/v1/completions).
	OperationTextCompletion Operation = "text_completion"
)

// Valid reports whether o is one of the known operations.
func (o Operation) Valid() bool {
	return o == OperationChat || o == OperationTextCompletion
}

// Chunk is one streamed delta of a turn: what arrived, and when.
type Chunk struct {
	// At is the arrival time since the turn's request was sent.
	At time.Duration
	// Text is the content the chunk carries; see Textless.
	Text string
	// Tokens is how many tokens the chunk carries (at least 1).
	Tokens int
	// Textless marks a chunk whose text was not recorded (benchmark files
	// often keep only timings): it is spoken at the voice's token duration.
	Textless bool
	// Reasoning marks a chunk that is thought, not said.
	Reasoning bool
}

// TokenCount returns Tokens, or 1 when it is not set.
func (c Chunk) TokenCount() int {
	if c.Tokens > 0 {
		return c.Tokens
	}
	return 1
}

// Turn is one LLM response as it streamed.
type Turn struct {
	// ID names the turn within its trace.
	ID string
	// Session groups the turns of one conversation (optional).
	Session string
	// Start is the wall-clock time the request was sent (zero if unknown).
	Start time.Time
	// Chunks are the deltas in arrival order.
	Chunks []Chunk
	// Status says how the stream ended; Error carries the error text.
	Status Status
	Error  string
	// OutputTokens is the output token count the server reported (usage);
	// zero means it is the sum of the chunks' tokens.
	OutputTokens int
	// ToolCalls are the pauses in which the LLM stream stopped for a tool
	// call, in time order; the chunks after one arrive after it ended.
	ToolCalls []ToolCall
	// Model is the model the turn's request named, where the one who
	// recorded it saw the request (a client, a proxy, a benchmark's result
	// file); empty when unknown.
	Model string
	// Operation is the kind of call the turn's request made (chat or text
	// completion), where the one who recorded it saw the request or the
	// endpoint; empty when unknown.
	Operation Operation
}

// ToolCall is one tool call a turn paused for: at At since the request
// the stream stopped, and the tool ran for Duration.
type ToolCall struct {
	At       time.Duration
	Duration time.Duration
	Name     string
}

// ToolPlaces returns, for each tool call, how many of the turn's chunks
// had arrived by its start: the chunks before it (a chunk at the very
// moment it starts comes before it).
func (t *Turn) ToolPlaces() []int { return toolPlaces(t, nil) }

// End is when the tool call returned.
func (c ToolCall) End() time.Duration { return c.At + c.Duration }

// TurnStep is one moment of a turn as it streamed: chunk Chunk arrived
// (Tool -1), or tool call Tool started (Chunk -1; Return false) or
// returned (Return true), at At since the request.
type TurnStep struct {
	At     time.Duration
	Chunk  int
	Tool   int
	Return bool
}

// Steps yields the turn's chunks and tool calls in the order a live feed
// sends them: a tool call after the chunk that arrives at its very moment
// (Playout.flushTools), its return at its end but no later than the next
// chunk, the calls after the last chunk at the end.
func (t *Turn) Steps() iter.Seq[TurnStep] {
	return func(yield func(TurnStep) bool) {
		tools := 0
		tool := func(until time.Duration) bool {
			tc := t.ToolCalls[tools]
			tools++
			return yield(TurnStep{At: tc.At, Chunk: -1, Tool: tools - 1}) &&
				yield(TurnStep{At: min(tc.End(), until), Chunk: -1, Tool: tools - 1, Return: true})
		}
		for k, c := range t.Chunks {
			for tools < len(t.ToolCalls) && t.ToolCalls[tools].At < c.At {
				if !tool(c.At) {
					return
				}
			}
			if !yield(TurnStep{At: c.At, Chunk: k, Tool: -1}) {
				return
			}
		}
		for tools < len(t.ToolCalls) {
			if !tool(Unbounded) {
				return
			}
		}
	}
}

// ErrTurn reports a turn whose timings cannot be real.
var ErrTurn = errors.New("invalid turn")

// Validate checks that chunk times are finite, not negative and in order.
func (t *Turn) Validate() error {
	var prev time.Duration
	for i, c := range t.Chunks {
		switch {
		case c.At < 0:
			return fmt.Errorf("%w %q: chunk %d arrives at %v, before the request was sent", ErrTurn, t.ID, i, c.At)
		case c.At < prev:
			return fmt.Errorf("%w %q: chunk %d arrives at %v, before chunk %d at %v", ErrTurn, t.ID, i, c.At, i-1, prev)
		case c.Tokens < 0:
			return fmt.Errorf("%w %q: chunk %d has %d tokens", ErrTurn, t.ID, i, c.Tokens)
		}
		prev = c.At
	}
	return nil
}

// Tokens returns the turn's output token count: the reported count when
// there is one, else the sum over chunks.
func (t *Turn) Tokens() int {
	if t.OutputTokens > 0 {
		return t.OutputTokens
	}
	n := 0
	for _, c := range t.Chunks {
		n += c.TokenCount()
	}
	return n
}

// Text returns the spoken text of the turn (reasoning left out).
func (t *Turn) Text() string {
	n := 0
	for _, c := range t.Chunks {
		if !c.Reasoning {
			n += len(c.Text)
		}
	}
	b := make([]byte, 0, n)
	for _, c := range t.Chunks {
		if !c.Reasoning {
			b = append(b, c.Text...)
		}
	}
	return string(b)
}

// Timing holds the latency metrics of one turn, as DESIGN.md defines them.
type Timing struct {
	// TTFT is the arrival of the first chunk (reasoning included, as the
	// benchmark tools count it).
	TTFT time.Duration
	// TTFST is the arrival of the first spoken chunk; HasSpeech is false
	// when the turn never produced spoken text.
	TTFST     time.Duration
	HasSpeech bool
	// E2E is the arrival of the last chunk.
	E2E time.Duration
	// TPOT is (E2E - TTFT - the tool calls' time between them) / (tokens
	// - 1); HasTPOT is false below 2 tokens.
	TPOT    time.Duration
	HasTPOT bool
	// Tokens is the output token count used for TPOT.
	Tokens int
}

// Timing computes the turn's latency metrics. ok is false for a turn with
// no chunks.
func (t *Turn) Timing() (tm Timing, ok bool) {
	if len(t.Chunks) == 0 {
		return tm, false
	}
	tm.TTFT = t.Chunks[0].At
	tm.E2E = t.Chunks[len(t.Chunks)-1].At
	for _, c := range t.Chunks {
		if !c.Reasoning {
			tm.TTFST, tm.HasSpeech = c.At, true
			break
		}
	}
	tm.Tokens = t.Tokens()
	if tm.Tokens >= 2 {
		tools := t.ToolPauses()
		tm.TPOT = time.Duration(math.Round(float64(tm.E2E-tm.TTFT-tools.Within(tm.TTFT, tm.E2E)) / float64(tm.Tokens-1)))
		tm.HasTPOT = true
	}
	return tm, true
}

// TPOTSeconds returns the exact TPOT in seconds, without the rounding to a
// nanosecond that Timing.TPOT carries.
func (t *Turn) TPOTSeconds() (float64, bool) {
	return t.TPOTOver(t.Tokens())
}

// TPOTOver is TPOTSeconds for a turn of n tokens, counted by the caller.
func (t *Turn) TPOTOver(n int) (float64, bool) {
	if len(t.Chunks) == 0 || n < 2 {
		return 0, false
	}
	first, last := t.Chunks[0].At, t.Chunks[len(t.Chunks)-1].At
	tools := t.ToolPauses()
	return (last - first - tools.Within(first, last)).Seconds() / float64(n-1), true
}

// ITLs yields the turn's inter-token latencies in order, each less the
// time of the tool calls that started in it (ToolPauses).
func (t *Turn) ITLs() iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		if len(t.ToolCalls) == 0 { // most turns: no tool's time to take out
			for i := 1; i < len(t.Chunks); i++ {
				if !yield(t.Chunks[i].At - t.Chunks[i-1].At) {
					return
				}
			}
			return
		}
		tools := t.ToolPauses()
		for i := 1; i < len(t.Chunks); i++ {
			from, to := t.Chunks[i-1].At, t.Chunks[i].At
			if !yield(to - from - tools.Within(from, to)) {
				return
			}
		}
	}
}

// ToolPauses walks the turn's tool calls in time order (ToolPauses.Within).
func (t *Turn) ToolPauses() ToolPauses { return ToolPauses{tools: t.ToolCalls} }

// ToolPauses takes the tool calls' time out of the intervals between
// tokens: the stream waits for the tool there, not for the model, so the
// TPOT and the ITLs leave it out (the benchmark tools see two requests,
// each with its own TPOT).
type ToolPauses struct {
	tools []ToolCall
	next  int
}

// Within returns the time of the tool calls that start in [from, to),
// the windows asked for in time order.
func (w *ToolPauses) Within(from, to time.Duration) time.Duration {
	var d time.Duration
	for ; w.next < len(w.tools) && w.tools[w.next].At < to; w.next++ {
		if w.tools[w.next].At >= from {
			d += w.tools[w.next].Duration
		}
	}
	return min(d, to-from)
}
