package monitor

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/valyala/fastjson"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts/player"
)

// Type names a message of the ingest protocol. A voice app sends the
// first ten; the monitor answers with hello and error.
type Type string

// The message types of the ingest protocol (cmd/underrun/docs/monitor.md).
const (
	// TypeTurnStart: the app sent an LLM request; chunk times count from now.
	TypeTurnStart Type = "turn_start"
	// TypeChunk: a streamed delta arrived (text, tokens, optional t_ms).
	TypeChunk Type = "chunk"
	// TypeTurnEnd: the stream ended (status ok, error or cancelled).
	TypeTurnEnd Type = "turn_end"
	// TypeBargeIn: the user interrupted: the turn ends, and the silence
	// after the cut is not an underrun.
	TypeBargeIn Type = "barge_in"
	// TypeTTS: a fact from the real synthesizer: this text took audio_ms
	// of audio. The session's voice model is rescaled to match.
	TypeTTS Type = "tts"
	// TypeSpeech: the app handed this text of the turn to its synthesizer
	// (a speech chunk released by its chunking).
	TypeSpeech Type = "speech"
	// TypeAudio: a piece of the turn's audio (audio_ms long) reached the
	// app's player.
	TypeAudio Type = "audio"
	// TypePlayout: the app's player has played the turn's audio to its
	// end; it may say what it counted (start_ms, gaps).
	TypePlayout Type = "playout"
	// TypeToolCall: the turn's LLM stream stopped for a tool call (name):
	// the chunking flushes, and the silence until the stream resumes is
	// the tool's, counted apart from underruns.
	TypeToolCall Type = "tool_call"
	// TypeToolResult: the tool call returned; the stream resumes (the next
	// chunk ends the call too, when no tool_result was sent).
	TypeToolResult Type = "tool_result"
	// TypeHello is the monitor's first message on a connection: the
	// session's name and the limits in force.
	TypeHello Type = "hello"
	// TypeError is the monitor's answer to a message it refused; the
	// connection stays usable.
	TypeError Type = "error"
)

// ingestTypes are the message types a voice app sends, in the order of
// the protocol.
var ingestTypes = [...]Type{TypeTurnStart, TypeChunk, TypeTurnEnd, TypeBargeIn, TypeTTS, TypeSpeech, TypeAudio, TypePlayout,
	TypeToolCall, TypeToolResult}

// MaxName is the longest turn or session name accepted, in bytes: the
// recordings' limit.
const MaxName = trace.MaxName

// ErrMessage reports an ingest message that cannot be used. Errors
// wrapping it name the field and what was expected.
var ErrMessage = errors.New("invalid message")

// Message is one message a voice app sends on /ingest, decoded.
type Message struct {
	// Type says what the message is.
	Type Type
	// Turn names the turn within the session (every type but tts may not
	// omit it; tts may).
	Turn string
	// Text is a chunk's content (HasText false: a token without text) or
	// the text a tts fact measured.
	Text    string
	HasText bool
	// Tokens is how many tokens a chunk carries (0: one).
	Tokens int
	// Reasoning marks a chunk that is not spoken.
	Reasoning bool
	// At is the client's own time since turn_start for a chunk, a
	// barge-in, a tool call or its result (HasAt false: the monitor's
	// arrival time is used).
	At    time.Duration
	HasAt bool
	// Name is a tool call's tool (tool_call; may be empty).
	Name string
	// Status and Error close a turn (turn_end; empty status means ok).
	Status pipeline.Status
	Error  string
	// OutputTokens is the usage count the server reported (turn_end).
	OutputTokens int
	// Audio is a tts fact's measured audio duration, or the length of an
	// audio message's piece.
	Audio time.Duration
	// Speech is the speech chunk (from 0, in the order of the turn's
	// speech messages) an audio piece belongs to (HasSpeech false: the
	// latest one).
	Speech    int
	HasSpeech bool
	// Filler marks an audio piece of the app's filler (field "filler"):
	// a phrase or sound it plays while a tool runs, heard but not the
	// LLM's speech (no speech message goes with it).
	Filler bool
	// Start is when the app's player played the turn's first audio, since
	// turn_start (playout; HasStart false: not said).
	Start    time.Duration
	HasStart bool
	// Gaps are the silences the app's player counted (playout), in order.
	Gaps []PlayerGap
	// Traceparent and Tracestate are the W3C trace context a turn_start
	// may carry (fields "traceparent", "tracestate"): the turn's span, when
	// the monitor exports to a tracing backend, joins that trace. They are
	// kept as sent, at most MaxTraceContext bytes each.
	Traceparent, Tracestate string
}

// MaxTraceContext is the longest traceparent or tracestate accepted, in
// bytes (W3C Trace Context lets tracestate reach 512).
const MaxTraceContext = 512

// PlayerGap is a silence an app's player played inside a turn's speech:
// from Start (since turn_start) for Duration.
type PlayerGap = player.Span

// MaxPlayerGaps is the most gaps a playout message may list.
const MaxPlayerGaps = 1024

// Parse decodes one ingest message with p (a Parser is not safe for
// concurrent use; keep one per connection). Unknown fields are ignored.
func Parse(p *fastjson.Parser, data []byte) (Message, error) {
	return parse(p, data, "")
}

// parse is Parse, with the turn name known (the previous message's, on
// a connection) given as that very string when the message names it: a
// session's messages mostly name one turn, and then cost no copy of it.
func parse(p *fastjson.Parser, data []byte, known string) (Message, error) {
	var m Message
	v, err := p.ParseBytes(data)
	if err != nil {
		return m, fmt.Errorf("%w: not JSON: %w", ErrMessage, err)
	}
	if v.Type() != fastjson.TypeObject {
		return m, fmt.Errorf("%w: want a JSON object, got %s", ErrMessage, v.Type())
	}
	typ, err := strBytes(v, "type", true)
	if err != nil {
		return m, err
	}
	for _, t := range ingestTypes {
		if string(typ) == string(t) {
			m.Type = t // the constant, not a copy of the bytes
			break
		}
	}
	if m.Type == "" {
		return m, fmt.Errorf("%w: field \"type\": want turn_start, chunk, turn_end, barge_in, tts, speech, audio, playout, tool_call or tool_result, got %q", ErrMessage, typ)
	}
	turn, err := strBytes(v, "turn", m.Type != TypeTTS)
	if err != nil {
		return m, err
	}
	if string(turn) == known {
		m.Turn = known
	} else {
		m.Turn = string(turn)
	}
	if len(m.Turn) > MaxName {
		return m, fmt.Errorf("%w: field \"turn\": want at most %d bytes, got %d", ErrMessage, MaxName, len(m.Turn))
	}
	switch m.Type {
	case TypeTurnStart:
		for _, f := range []struct {
			name string
			to   *string
		}{{"traceparent", &m.Traceparent}, {"tracestate", &m.Tracestate}} {
			if *f.to, err = str(v, f.name, false); err != nil {
				return m, err
			}
			if len(*f.to) > MaxTraceContext {
				return m, fmt.Errorf("%w: field %q: want at most %d bytes, got %d", ErrMessage, f.name, MaxTraceContext, len(*f.to))
			}
		}
	case TypeChunk:
		if t := v.Get("text"); t != nil && t.Type() != fastjson.TypeNull {
			b, err := t.StringBytes()
			if err != nil {
				return m, fmt.Errorf("%w: field \"text\": want a string, got %s", ErrMessage, t.Type())
			}
			if len(b) > trace.MaxChunkText {
				return m, fmt.Errorf("%w: field \"text\": want at most %d bytes in one chunk, got %d", ErrMessage, trace.MaxChunkText, len(b))
			}
			m.Text, m.HasText = string(b), true
		}
		if m.Tokens, err = tokenCount(v, "tokens"); err != nil {
			return m, err
		}
		if m.Reasoning, err = flag(v, "reasoning"); err != nil {
			return m, err
		}
		if m.At, m.HasAt, err = millis(v, "t_ms", false); err != nil {
			return m, err
		}
	case TypeBargeIn, TypeToolResult:
		if m.At, m.HasAt, err = millis(v, "t_ms", false); err != nil {
			return m, err
		}
	case TypeToolCall:
		if m.Name, err = str(v, "name", false); err != nil {
			return m, err
		}
		if len(m.Name) > MaxName {
			return m, fmt.Errorf("%w: field \"name\": want at most %d bytes, got %d", ErrMessage, MaxName, len(m.Name))
		}
		if m.At, m.HasAt, err = millis(v, "t_ms", false); err != nil {
			return m, err
		}
	case TypeTurnEnd:
		s, err := str(v, "status", false)
		if err != nil {
			return m, err
		}
		m.Status = pipeline.Status(s)
		switch m.Status {
		case "":
			m.Status = pipeline.StatusOK
		case pipeline.StatusOK, pipeline.StatusError, pipeline.StatusCancelled:
		default:
			return m, fmt.Errorf("%w: field \"status\": want ok, error or cancelled, got %q", ErrMessage, s)
		}
		if m.Error, err = str(v, "error", false); err != nil {
			return m, err
		}
		if len(m.Error) > trace.MaxErrorText {
			return m, fmt.Errorf("%w: field \"error\": want at most %d bytes, got %d", ErrMessage, trace.MaxErrorText, len(m.Error))
		}
		if m.OutputTokens, err = tokenCount(v, "output_tokens"); err != nil {
			return m, err
		}
	case TypeTTS:
		if m.Text, err = str(v, "text", true); err != nil {
			return m, err
		}
		m.HasText = true
		var ok bool
		if m.Audio, ok, err = millis(v, "audio_ms", true); err != nil {
			return m, err
		}
		if !ok || m.Audio <= 0 {
			return m, fmt.Errorf("%w: field \"audio_ms\": want a positive duration in milliseconds", ErrMessage)
		}
	case TypeSpeech:
		if m.Text, err = str(v, "text", true); err != nil {
			return m, err
		}
		m.HasText = true
		if m.At, m.HasAt, err = millis(v, "t_ms", false); err != nil {
			return m, err
		}
	case TypeAudio:
		var ok bool
		if m.Audio, ok, err = millis(v, "audio_ms", true); err != nil {
			return m, err
		}
		if !ok || m.Audio <= 0 {
			return m, fmt.Errorf("%w: field \"audio_ms\": want a positive duration in milliseconds", ErrMessage)
		}
		if m.At, m.HasAt, err = millis(v, "t_ms", false); err != nil {
			return m, err
		}
		if f := v.Get("speech"); f != nil && f.Type() != fastjson.TypeNull {
			if m.Speech, err = count(v, "speech"); err != nil {
				return m, err
			}
			m.HasSpeech = true
		}
		if m.Filler, err = flag(v, "filler"); err != nil {
			return m, err
		}
		if m.Filler && m.HasSpeech {
			return m, fmt.Errorf("%w: field \"speech\": a filler's audio belongs to no speech message; want one of \"speech\" and \"filler\"", ErrMessage)
		}
	case TypePlayout:
		if m.Start, m.HasStart, err = millis(v, "start_ms", false); err != nil {
			return m, err
		}
		if m.Gaps, err = playerGaps(v); err != nil {
			return m, err
		}
	}
	return m, nil
}

// playerGaps reads a playout message's gaps: an array of objects with
// start_ms and duration_ms, in time order, not overlapping.
func playerGaps(v *fastjson.Value) ([]PlayerGap, error) {
	f := v.Get("gaps")
	if f == nil || f.Type() == fastjson.TypeNull {
		return nil, nil
	}
	arr, err := f.Array()
	if err != nil {
		return nil, fmt.Errorf("%w: field \"gaps\": want an array, got %s", ErrMessage, f.Type())
	}
	if len(arr) > MaxPlayerGaps {
		return nil, fmt.Errorf("%w: field \"gaps\": want at most %d gaps, got %d", ErrMessage, MaxPlayerGaps, len(arr))
	}
	out := make([]PlayerGap, 0, len(arr))
	var end time.Duration
	for i, g := range arr {
		if g.Type() != fastjson.TypeObject {
			return nil, fmt.Errorf("%w: field \"gaps\" [%d]: want an object, got %s", ErrMessage, i, g.Type())
		}
		start, _, err := millis(g, "start_ms", true)
		if err != nil {
			return nil, fmt.Errorf("gaps[%d]: %w", i, err)
		}
		d, _, err := millis(g, "duration_ms", true)
		if err != nil {
			return nil, fmt.Errorf("gaps[%d]: %w", i, err)
		}
		if start < end {
			return nil, fmt.Errorf("%w: field \"gaps\" [%d]: starts at %.3f ms, before the gap before it ended (%.3f ms)",
				ErrMessage, i, pipeline.Millis(start), pipeline.Millis(end))
		}
		end = start + d
		out = append(out, PlayerGap{Start: start, Duration: d})
	}
	return out, nil
}

// str reads a string field.
func str(v *fastjson.Value, name string, required bool) (string, error) {
	b, err := strBytes(v, name, required)
	return string(b), err
}

// strBytes reads a string field as the parser's bytes (valid until its
// next parse).
func strBytes(v *fastjson.Value, name string, required bool) ([]byte, error) {
	f := v.Get(name)
	if f == nil || f.Type() == fastjson.TypeNull {
		if required {
			return nil, fmt.Errorf("%w: field %q is missing", ErrMessage, name)
		}
		return nil, nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return nil, fmt.Errorf("%w: field %q: want a string, got %s", ErrMessage, name, f.Type())
	}
	if required && len(b) == 0 {
		return nil, fmt.Errorf("%w: field %q must not be empty", ErrMessage, name)
	}
	return b, nil
}

// flag reads an optional true or false field (absent: false).
func flag(v *fastjson.Value, name string) (bool, error) {
	f := v.Get(name)
	if f == nil {
		return false, nil
	}
	b, err := f.Bool()
	if err != nil {
		return false, fmt.Errorf("%w: field %q: want true or false, got %s", ErrMessage, name, f.Type())
	}
	return b, nil
}

// count reads a non-negative integer field (absent: 0).
func count(v *fastjson.Value, name string) (int, error) {
	f := v.Get(name)
	if f == nil || f.Type() == fastjson.TypeNull {
		return 0, nil
	}
	n, err := f.Int()
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: field %q: want a non-negative integer, got %s", ErrMessage, name, f)
	}
	return n, nil
}

// tokenCount reads a count of tokens (absent: 0): from 0 to the
// recordings' limit, trace.MaxTurnTokens, so that what the monitor takes
// in, its recording holds and every reader reads.
func tokenCount(v *fastjson.Value, name string) (int, error) {
	n, err := count(v, name)
	if err == nil && n > trace.MaxTurnTokens {
		return 0, fmt.Errorf("%w: field %q: want a count from 0 to %d tokens, got %d", ErrMessage, name, trace.MaxTurnTokens, n)
	}
	return n, err
}

// maxMillis bounds durations in messages (a day).
const maxMillis = 24 * 3600 * 1000

// millis reads a non-negative finite number of milliseconds.
func millis(v *fastjson.Value, name string, required bool) (time.Duration, bool, error) {
	f := v.Get(name)
	if f == nil || f.Type() == fastjson.TypeNull {
		if required {
			return 0, false, fmt.Errorf("%w: field %q is missing", ErrMessage, name)
		}
		return 0, false, nil
	}
	x, err := f.Float64()
	if err != nil || math.IsNaN(x) || x < 0 || x > maxMillis {
		return 0, false, fmt.Errorf("%w: field %q: want milliseconds between 0 and %d, got %s", ErrMessage, name, maxMillis, f)
	}
	return time.Duration(math.Round(x * float64(time.Millisecond))), true, nil
}
