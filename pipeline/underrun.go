package pipeline

import "time"

// Class grades an underrun by its length.
type Class string

// The classes of underrun. An interruption is at least Config.Interruption
// long (150 ms by default, the length at which libwebrtc counts a
// concealment event and listeners notice a pause inside an utterance).
const (
	Glitch       Class = "glitch"
	Interruption Class = "interruption"
)

// Cause says why the chunk after a gap came late.
type Cause string

// The causes of an underrun.
const (
	// CauseStall: an inter-token latency far above the turn's usual one
	// (StallFactor times the median of the others) held the text back.
	CauseStall Cause = "stall"
	// CausePace: tokens came at their usual pace, but that pace carries
	// less speech per second than the voice speaks: a slow stream.
	CausePace Cause = "pace"
	// CauseStartup: tokens came at their usual pace, fast enough on
	// average, but the player started on a buffer too thin to bridge it;
	// a pre-roll would have hidden the gap.
	CauseStartup Cause = "startup"
	// CauseHeld: the text had arrived in time but the chunking policy held
	// it back (waiting for a sentence end, a character count or a timer).
	CauseHeld Cause = "held"
	// CauseSynthesizer: the text was released in time but the synthesizer
	// was still busy with earlier chunks, or produces audio slower than
	// real time (RTF > 1) and starved the player inside a chunk.
	CauseSynthesizer Cause = "synthesizer"
	// CauseTransport: the player had the audio in time, but the output
	// transport held it back (a partial frame waiting for the next
	// chunk's audio, the listener's clock, or a sender falling behind).
	CauseTransport Cause = "transport"
	// CauseTool: the chunk after the gap came after a tool call that
	// started before the gap ended (Turn.ToolCalls). A tool-call silence
	// is not an underrun: reports count it apart (Report.ToolSilences).
	CauseTool Cause = "tool_call"
)

// Causes lists every cause, in the order reports and legends give them.
var Causes = []Cause{CauseStall, CausePace, CauseStartup, CauseHeld, CauseSynthesizer, CauseTransport}

// Position says where in the text a gap fell.
type Position string

// The positions of a gap in the text.
const (
	AtSentenceBoundary Position = "sentence_boundary"
	AtClauseBoundary   Position = "clause_boundary"
	MidSentence        Position = "mid_sentence"
	MidWord            Position = "mid_word"
	MidChunk           Position = "mid_chunk"
	PositionUnknown    Position = "unknown"
)

// Underrun is one interval in which the player had nothing to play while
// the turn's speech was not finished. Times count from the turn's request.
type Underrun struct {
	// Turn is the ID of the turn.
	Turn string `json:"turn"`
	// Start is when the player ran dry; Duration how long it stayed dry.
	Start    time.Duration `json:"-"`
	Duration time.Duration `json:"-"`
	// StartSample and Samples are Start and Duration at the engine's
	// sample rate.
	StartSample int64 `json:"start_sample"`
	Samples     int64 `json:"samples"`
	// Class grades the length; Cause and Position explain it.
	Class    Class    `json:"class"`
	Cause    Cause    `json:"cause"`
	Position Position `json:"position"`
	// Token is the index, from 0, of the streamed chunk that came late, in
	// the turn's chunks as they streamed (Turn.Chunks: a trace's chunk
	// records of the turn, a monitor session's chunk messages of the turn,
	// reasoning ones included; a chunk of several tokens counts once). For
	// a stall it is the chunk after the long inter-token latency: ITL is
	// the gap before it.
	Token int `json:"token"`
	// ITL is the inter-token latency before that chunk.
	ITL time.Duration `json:"-"`
	// Tolerance is the longest that ITL could have been with no gap at this
	// point: ITL minus the gap, for causes that come from the stream.
	Tolerance time.Duration `json:"-"`
	// Chunk is the index, from 0, of the speech chunk (the text the
	// chunking policy released) that came late.
	Chunk int `json:"chunk"`
	// Stopped says that the output transport ended the synthesis segment
	// during this gap and signalled that the bot stopped speaking
	// (Transport.Idle), in the middle of the reply.
	Stopped bool `json:"stopped,omitempty"`
}

// Unbounded is a stall tolerance with no limit: no later audio depends on
// the tokens that would be delayed, or delaying them only delays the start.
const Unbounded = time.Duration(1<<63 - 1)

// SpeechChunk is one piece of text the chunking policy handed to the
// synthesizer, with its life through synthesizer and player.
type SpeechChunk struct {
	// From and To are byte offsets in the turn's spoken text (each token
	// without text counts as tts.TextlessToken).
	From, To int
	// First and Last are the indices of the first and last streamed chunk
	// whose text it holds.
	First, Last int
	// Trigger is the streamed chunk whose arrival released it (for a
	// timer release, the one that started the timer).
	Trigger int
	// Timer is true when the policy's timer released it; End when the end
	// of the turn did (the policy let go of what it still held).
	Timer, End bool
	// Audio is its length of speech.
	Audio time.Duration
	// Release is when the policy handed it over; Start when synthesis
	// began; Ready when its first audio was ready; Done when synthesis
	// ended.
	Release, Start, Ready, Done time.Duration
	// PlayStart and PlayEnd are when the player played it (gaps inside
	// the chunk included).
	PlayStart, PlayEnd time.Duration
}

// Tally counts underruns by class, with the silence they add up to, and
// the tool-call silences apart (they are no underruns).
type Tally struct {
	Glitches, Interruptions int
	Silence                 time.Duration
	// Interrupted is the part of Silence in interruptions.
	Interrupted time.Duration
	// ToolSilences are the gaps of CauseTool, ToolSilence their length.
	ToolSilences int
	ToolSilence  time.Duration
}

// TallyUnderruns tallies us.
func TallyUnderruns(us []Underrun) Tally {
	var t Tally
	for _, u := range us {
		t.Add(u)
	}
	return t
}

// Add counts one more underrun.
func (t *Tally) Add(u Underrun) {
	if u.Cause == CauseTool {
		t.ToolSilences++
		t.ToolSilence += u.Duration
		return
	}
	t.Silence += u.Duration
	if u.Class == Interruption {
		t.Interruptions++
		t.Interrupted += u.Duration
	} else {
		t.Glitches++
	}
}
