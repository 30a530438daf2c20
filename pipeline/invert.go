package pipeline

import (
	"encoding/binary"
	"reflect"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Retime returns a copy of t whose tokens arrive at a constant pace: the
// first at ttft, every later token tpot after the one before. A chunk of
// several tokens arrives with its last token. A tool call keeps its place
// (after the same chunk) and its length, the tokens after it that much
// later: the pause is the tool's, not the model's pace.
func Retime(t *Turn, ttft, tpot time.Duration) *Turn {
	out := *t
	out.Chunks = append([]Chunk(nil), t.Chunks...)
	out.ToolCalls = append([]ToolCall(nil), t.ToolCalls...)
	retime(out.Chunks, out.ToolCalls, toolPlaces(t, nil), ttft, tpot)
	return &out
}

// toolPlaces appends to places, for each of t's tool calls, how many of
// its chunks arrived by the call's start.
func toolPlaces(t *Turn, places []int) []int {
	places = places[:0]
	k := 0
	for _, tc := range t.ToolCalls {
		for k < len(t.Chunks) && t.Chunks[k].At <= tc.At {
			k++
		}
		places = append(places, k)
	}
	return places
}

// retime sets the arrival of every chunk for a constant pace, in place,
// and starts each tool call (at its place, toolPlaces) as the chunk before
// it arrives. A tool call before the first chunk keeps its time: the TTFT
// holds it.
func retime(chunks []Chunk, tools []ToolCall, places []int, ttft, tpot time.Duration) {
	n, j := 0, 0
	var pause time.Duration
	for i := range chunks {
		for ; j < len(tools) && places[j] <= i; j++ {
			if places[j] > 0 {
				tools[j].At = chunks[places[j]-1].At
				pause += tools[j].Duration
			}
		}
		n += chunks[i].TokenCount()
		chunks[i].At = ttft + time.Duration(n-1)*tpot + pause
	}
}

// MaxTPOTLimit is the largest TPOT the MaxTPOT search considers.
const MaxTPOTLimit = 10 * time.Second

// maxTPOTResolution is where the MaxTPOT search stops halving.
const maxTPOTResolution = 10 * time.Microsecond

// MaxTPOT answers "is this TPOT enough?" for one turn's text and TTS: the
// largest constant TPOT (to 10 µs) at which the turn, with its own TTFT,
// plays with no interruption. ok is false when even instant tokens
// interrupt (the synthesizer or policy alone causes them) or the turn has no
// chunks. A scratch Playout built from the same Config may be passed to
// save allocations; nil makes one. Config.Measured is left out: measured
// timings are those of the token timing that was measured, and the
// question is about others, which the models answer.
//
// The search doubles the TPOT from 50 ms while the turn plays clean, then
// halves the interval between the last clean TPOT and the first that
// interrupts until it is 10 µs wide. Its plays are of one text: where the
// policy releases by the text alone PlayTurn replays all but the first,
// else a play stops at its first interruption, since that settles it.
func MaxTPOT(cfg Config, t *Turn, scratch *Playout) (tpot time.Duration, ok bool, err error) {
	if len(t.Chunks) == 0 {
		return 0, false, nil
	}
	if cfg.Measured != nil {
		cfg.Measured, scratch = nil, nil
	}
	p := scratch
	if p == nil {
		if p, err = NewPlayout(cfg, t.ID); err != nil {
			return 0, false, err
		}
	}
	tpot, ok = searchMaxTPOT(p, t, nil)
	return tpot, ok, nil
}

// searchMaxTPOT runs MaxTPOT's search for t on p (a Playout without
// Config.Measured). retimed, when it has room for t's chunks, is used as
// the scratch copy of them.
func searchMaxTPOT(p *Playout, t *Turn, retimed []Chunk) (time.Duration, bool) {
	ttft := t.Chunks[0].At
	retimed = append(retimed[:0], t.Chunks...)
	turn := *t
	turn.Chunks = retimed
	var places []int
	if len(t.ToolCalls) > 0 {
		turn.ToolCalls = slices.Clone(t.ToolCalls)
		places = toolPlaces(t, nil)
	}
	_, inContext := p.cfg.Durations.(ContextDurations)
	// the search asks only whether a timing interrupts: the glitches of a
	// long turn need not be kept, where nothing else reads them
	p.interruptionsOnly = len(places) == 0 && p.cfg.Transport.None() && !p.cfg.Filler.Plays()
	defer func() {
		p.interruptionsOnly = false
		p.Trim() // a long turn's search leaves no long buffers behind
	}()
	clean := func(tpot time.Duration) bool {
		retime(retimed, turn.ToolCalls, places, ttft, tpot)
		if inContext || p.reuse || len(places) > 0 {
			// with a tool call, a gap's cause (a tool-call silence is
			// no interruption) is known at the end of the turn only
			// measured in the context of the whole turn, or a policy whose
			// releases depend on the text alone, whose plays after the
			// first PlayTurn replays (the same text: timing work only)
			if err := p.PlayTurn(&turn); err != nil {
				return false
			}
			return !interrupts(p.Underruns)
		}
		p.Reset(turn.ID)
		seen := 0
		for i := range retimed {
			if p.push(&retimed[i]) != nil {
				return false
			}
			// a gap's length is known once it is found, and never changes
			if interrupts(p.Underruns[seen:]) {
				return false
			}
			seen = len(p.Underruns)
		}
		p.End()
		return p.err == nil && !interrupts(p.Underruns[seen:])
	}
	if !clean(0) {
		return 0, false
	}
	lo, hi := time.Duration(0), 50*time.Millisecond
	for clean(hi) {
		lo = hi
		if hi >= MaxTPOTLimit {
			return MaxTPOTLimit, true
		}
		hi = min(2*hi, MaxTPOTLimit)
	}
	return largest(lo, hi, maxTPOTResolution, clean), true
}

// interrupts reports whether any of the underruns is an interruption (a
// tool-call silence is none).
func interrupts(us []Underrun) bool {
	for i := range us {
		if us[i].Class == Interruption && us[i].Cause != CauseTool {
			return true
		}
	}
	return false
}

// maxTPOTMemo answers MaxTPOT for the turns of one report, remembering the
// answers for turns that share everything the answer depends on: the
// configuration (one per report), and each chunk's tokens, text and
// whether it is text-less or reasoning. The TTFT counts too, unless the
// chunking policy is one of package tts's: those release text by the text
// alone or by timers that run from an arrival, so the whole playout of a
// turn moves with its TTFT, gaps unchanged, and so does the answer (the
// retimed arrivals are the TTFT plus multiples of the TPOT). Benchmark
// files hold many text-less turns of the same length: each length is
// searched once. The memory is bounded (maxTPOTMemoBytes).
type maxTPOTMemo struct {
	p       *Playout
	moves   bool // the answer depends on nothing but the chunks: TTFT left out
	answers map[string]memoAnswer
	bytes   int
	key     []byte
	places  []int
	scratch []Chunk
}

type memoAnswer struct {
	tpot time.Duration
	ok   bool
}

// maxTPOTMemoBytes bounds the keys a maxTPOTMemo keeps; past it, it
// starts again empty.
const maxTPOTMemoBytes = 1 << 20

// ttsPackage is the import path of the tts package, whose chunkers
// maxTPOTMemo knows.
var ttsPackage = reflect.TypeFor[tts.Voice]().PkgPath()

func newMaxTPOTMemo(cfg Config) (*maxTPOTMemo, error) {
	m := &maxTPOTMemo{answers: map[string]memoAnswer{}}
	cfg.Measured = nil
	p, err := NewPlayout(cfg, "")
	if err != nil {
		return nil, err
	}
	m.p = p
	if ty := reflect.TypeOf(p.chunker); ty != nil {
		if ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		m.moves = ty.PkgPath() == ttsPackage
	}
	return m, nil
}

// MaxTPOT is MaxTPOT(cfg, t, nil) for the memo's configuration.
func (m *maxTPOTMemo) MaxTPOT(t *Turn) (time.Duration, bool) {
	if len(t.Chunks) == 0 {
		return 0, false
	}
	m.key = m.appendKey(m.key[:0], t)
	if a, ok := m.answers[string(m.key)]; ok {
		return a.tpot, a.ok
	}
	if len(m.scratch) < len(t.Chunks) {
		m.scratch = make([]Chunk, 0, len(t.Chunks))
	}
	tpot, ok := searchMaxTPOT(m.p, t, m.scratch)
	if m.bytes+len(m.key) > maxTPOTMemoBytes {
		clear(m.answers)
		m.bytes = 0
	}
	m.answers[string(m.key)] = memoAnswer{tpot, ok}
	m.bytes += len(m.key) + 64
	return tpot, ok
}

// appendKey writes what the answer for t depends on: runs of equal chunks
// (tokens, kind, text), the TTFT unless the answer moves with it, and the
// tool calls' places and lengths.
func (m *maxTPOTMemo) appendKey(key []byte, t *Turn) []byte {
	if !m.moves {
		key = binary.AppendVarint(key, int64(t.Chunks[0].At))
	}
	for i := 0; i < len(t.Chunks); {
		c := &t.Chunks[i]
		j := i + 1
		for j < len(t.Chunks) && sameSpeech(c, &t.Chunks[j]) {
			j++
		}
		kind := byte(0)
		if c.Textless {
			kind |= 1
		}
		if c.Reasoning {
			kind |= 2
		}
		key = binary.AppendUvarint(key, uint64(j-i))
		key = binary.AppendUvarint(key, uint64(c.TokenCount()))
		key = append(key, kind)
		key = binary.AppendUvarint(key, uint64(len(c.Text)))
		key = append(key, c.Text...)
		i = j
	}
	// the tool calls: their places and lengths
	m.places = toolPlaces(t, m.places)
	for j, tc := range t.ToolCalls {
		key = binary.AppendUvarint(key, uint64(m.places[j]))
		key = binary.AppendVarint(key, int64(tc.Duration))
	}
	return key
}

// sameSpeech reports whether two chunks say the same: the same tokens,
// text and kind, whenever they arrive.
func sameSpeech(a, b *Chunk) bool {
	return a.TokenCount() == b.TokenCount() && a.Textless == b.Textless && a.Reasoning == b.Reasoning && a.Text == b.Text
}
