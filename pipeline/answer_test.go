package pipeline_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
)

// report plays turns through cfg into a closed report made with opts.
func report(t *testing.T, cfg pipeline.Config, opts pipeline.ReportOptions, turns ...*pipeline.Turn) *pipeline.Report {
	t.Helper()
	r := pipeline.NewReport(cfg, opts)
	for _, turn := range turns {
		if len(turn.Chunks) == 0 {
			r.Add(turn, nil)
			continue
		}
		p, err := pipeline.Play(cfg, turn)
		if err != nil {
			t.Fatal(err)
		}
		r.Add(turn, p)
	}
	r.Close()
	return r
}

// steady is a turn of text streamed a word per token at tpot, which the
// default voice never runs out of at 60 ms.
func steady(id string, tpot time.Duration) *pipeline.Turn {
	return testkit.WordTurn(id, "Sure, the next train to the airport leaves at nine, from platform four, and takes about twenty minutes.", 300*ms, tpot, nil)
}

// TestVerdictIsWhatTheListenerHears: the verdict fails on an interruption
// or a failed request, and on a TPOT or TTFT only past an SLO the user
// set. Three turns at TPOT 60 ms whose speech never starves pass, and the
// answer says that the buffer absorbed the TPOT; a cancelled request is
// not judged; a request that failed with no reply, or mid-reply, fails.
func TestVerdictIsWhatTheListenerHears(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	slow := []*pipeline.Turn{steady("a", 60*ms), steady("b", 60*ms), steady("c", 60*ms)}
	failed := &pipeline.Turn{ID: "f", Status: pipeline.StatusError, Error: "connection reset"}
	silent := &pipeline.Turn{ID: "g", Status: pipeline.StatusError} // no error text: the turn alone is named
	cut := steady("m", 40*ms)
	cut.Status, cut.Error = pipeline.StatusError, "HTTP 500"
	cancelled := steady("x", 40*ms)
	cancelled.Status = pipeline.StatusCancelled
	tests := []struct {
		name     string
		opts     pipeline.ReportOptions
		turns    []*pipeline.Turn
		result   string
		reasons  []string
		answer   string
		findings []string
	}{
		{"tpot 60 ms, nothing heard", pipeline.ReportOptions{}, slow, "pass", []string{},
			"listeners hear no gap in the 3 turns",
			[]string{"TPOT 60.0 ms > 50 ms in 3 of 3 turns, yet no listener hears a gap in them: the buffer absorbed it"}},
		{"tpot over an SLO set", pipeline.ReportOptions{TPOTSLO: 50 * ms}, slow, "fail",
			[]string{"3 of 3 turns have TPOT above the 50ms SLO (worst 60.0 ms)"},
			"listeners hear no gap in the 3 turns",
			[]string{"TPOT 60.0 ms > 50 ms in 3 of 3 turns, yet no listener hears a gap in them: the buffer absorbed it"}},
		{"ttft over an SLO set", pipeline.ReportOptions{TTFTSLO: 250 * ms}, slow[:1], "fail",
			[]string{"1 of 1 turn has TTFT above the 250ms SLO (worst 300.0 ms)"},
			"listeners hear no gap in the 1 turn",
			[]string{"TPOT 60.0 ms > 50 ms in 1 of 1 turns, yet no listener hears a gap in it: the buffer absorbed it"}},
		{"a failed request", pipeline.ReportOptions{}, []*pipeline.Turn{steady("ok", 40*ms), failed}, "fail",
			[]string{"1 of 2 turns got no reply: the request failed"},
			"listeners hear no gap in the 1 turn with speech (2 in all); 1 of 2 turns got no reply: the request failed (turn f: connection reset)", []string{}},
		{"a failed request without its error", pipeline.ReportOptions{}, []*pipeline.Turn{silent}, "fail",
			[]string{"1 of 1 turn got no reply: the request failed"},
			"listeners hear nothing: none of the 1 turn has speech; 1 of 1 turn got no reply: the request failed (turn g)", []string{}},
		{"a reply cut off", pipeline.ReportOptions{}, []*pipeline.Turn{cut}, "fail",
			[]string{"in 1 of 1 turn the reply stops: the request failed mid-reply"},
			"listeners hear no gap in the 1 turn; in 1 of 1 turn the reply stops: the request failed mid-reply (turn m: HTTP 500)", []string{}},
		{"a cancelled request", pipeline.ReportOptions{}, []*pipeline.Turn{cancelled}, "pass", []string{},
			"listeners hear no gap in the 1 turn",
			[]string{"1 request cancelled or cut off while streaming (not judged: the client ended it)"}},
	}
	for _, tt := range tests {
		r := report(t, cfg, tt.opts, tt.turns...)
		if r.Verdict.Result != tt.result || !slices.Equal(r.Verdict.Reasons, tt.reasons) {
			t.Errorf("%s: verdict %+v, want %s %q", tt.name, r.Verdict, tt.result, tt.reasons)
		}
		a := r.Answer
		if a.Verdict != tt.result || a.Text != tt.answer || !slices.Equal(a.Findings, tt.findings) || len(a.Remedies) != 0 {
			t.Errorf("%s: answer %q %q %q (%d remedies), want %q %q", tt.name, a.Verdict, a.Text, a.Findings, len(a.Remedies), tt.answer, tt.findings)
		}
	}
}

// TestAnswerDefaultTurn: the default turn's report opens with the answer
// in the listener's terms, before any table, in text and JSON: the gap,
// its cause and the words before it, whose timing it is, and the
// remedies ranked by what they cost the listener.
func TestAnswerDefaultTurn(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	r := report(t, cfg, pipeline.ReportOptions{MaxTPOT: true}, scenarios.DefaultTurn())
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	want := []string{
		`FAIL: listeners hear 1 gap of 242 ms in 1 of 1 turns: a 737 ms token stall after "Sure,"`,
		"timing: the voice model's (184 wpm articulation, 177 wpm with its pauses on this text), no real synthesizer",
		"what removes it in turn default, cheapest for the listener first (each played again in the engine):",
		"  - no token stall over 644.5 ms (a stall timeout: hedge the request, or fall back to another replica): no interruption; costs the listener nothing",
		"  - a steady TPOT of 258.8 ms or less, no stalls (the largest constant TPOT): no interruption; costs the listener nothing",
		"  - a keep-alive sound after 149 ms of a dry player: no silence of 150 ms or more; the listener hears 93.5 ms of sound in 242.5 ms of gaps",
		"  - --chunking timer:500ms: no interruption; first audio 424 -> 850 ms (+426 ms)",
		"  - --preroll 445ms (the smallest with no underrun): no interruption; first audio 424 -> 1111 ms (+687 ms)",
		"  not: a send-ahead lead (Pipecat PR #4855, audio_out_send_lead_secs): the audio after the 242.5 ms gap (cause stall) did not exist until it ended; a lead sends only audio that is ready",
		"",
		"underrun report: 1 turn (1 ok, 0 failed, 0 without speech)",
	}
	if !slices.Equal(lines[:len(want)], want) {
		t.Errorf("the report opens with\n%s\nwant\n%s", strings.Join(lines[:len(want)], "\n"), strings.Join(want, "\n"))
	}
	var j struct {
		Answer pipeline.Answer `json:"answer"`
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "{\n  \"answer\": {") {
		t.Errorf("the JSON report does not open with its answer:\n%.200s", b.String())
	}
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	w := j.Answer.Worst
	if j.Answer.Text != strings.TrimPrefix(want[0], "FAIL: ") || w == nil || w.Turn != "default" || w.Cause != pipeline.CauseStall ||
		w.Token != 3 || w.ITLMs != 737 || w.Before != "Sure," || j.Answer.Timing.Source != pipeline.TimingModel ||
		len(j.Answer.Remedies) != 6 || j.Answer.RemediesFor != "default" {
		t.Errorf("JSON answer %+v (worst %+v)", j.Answer, w)
	}
}

// TestReportExpect: a caller's expectations decide the one verdict; what
// the listener heard stays in the reasons when they hold despite it.
func TestReportExpect(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	r := report(t, cfg, pipeline.ReportOptions{}, scenarios.DefaultTurn())
	r.Expect([]pipeline.Expectation{{Text: "interruptions <= 1, got 1", Held: true}})
	want := []string{"the one expectation held", "heard, and within the expectations: 1 interruption (242 ms of silence) in 1 turn; worst turn default"}
	if !r.Verdict.Pass() || !slices.Equal(r.Verdict.Reasons, want) || r.Answer.Verdict != "pass" || r.Answer.DecidedBy != pipeline.DecidedByExpectations {
		t.Errorf("verdict %+v, answer %q by %q", r.Verdict, r.Answer.Verdict, r.Answer.DecidedBy)
	}
	r = report(t, cfg, pipeline.ReportOptions{}, steady("a", 40*ms))
	r.Expect([]pipeline.Expectation{{Text: "a", Held: true}, {Text: "interruptions >= 1, got 0", Held: false}})
	if r.Verdict.Pass() || !slices.Equal(r.Verdict.Reasons, []string{"expectation failed: interruptions >= 1, got 0"}) || r.Answer.Verdict != "fail" {
		t.Errorf("verdict %+v, answer %q", r.Verdict, r.Answer.Verdict)
	}
	r = report(t, cfg, pipeline.ReportOptions{}, scenarios.DefaultTurn())
	r.Expect(nil)
	if r.Verdict.Pass() || r.Answer.DecidedBy != "" {
		t.Errorf("no expectations changed the verdict: %+v", r.Verdict)
	}
}

// TestWordsBefore: the words the listener heard last before a gap, for a
// word turn; none for tokens without text. Word chunking releases a word
// when the next one starts, so a stall before "opens" holds "museum" back
// too: the listener's last word is "The".
func TestWordsBefore(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	turn := testkit.WordTurn("w", "Well, let me see. The museum opens at ten.", 300*ms, 30*ms, map[int]time.Duration{6: 2 * time.Second})
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) != 1 || p.Underruns[0].Token != 6 {
		t.Fatalf("gaps %+v, want one before token 6", p.Underruns)
	}
	for n, want := range map[int]string{1: "The", 3: "me see. The", 20: "Well, let me see. The"} {
		if got := p.WordsBefore(p.Underruns[0], n); got != want {
			t.Errorf("WordsBefore(%d) = %q, want %q", n, got, want)
		}
	}
	tl := &pipeline.Turn{ID: "t", Chunks: []pipeline.Chunk{{At: 0, Textless: true, Tokens: 1}, {At: 3 * time.Second, Textless: true, Tokens: 1}}}
	cfg.Policy, _ = tts.ParsePolicy("token")
	if p, err = pipeline.Play(cfg, tl); err != nil || len(p.Underruns) != 1 {
		t.Fatalf("text-less turn: %v %+v", err, p.Underruns)
	}
	if got := p.WordsBefore(p.Underruns[0], 4); got != "" {
		t.Errorf("text-less turn: words %q", got)
	}
}

// TestRecordingAnswer: gaps found in a recording with no trace.
func TestRecordingAnswer(t *testing.T) {
	t.Parallel()
	us := []pipeline.Underrun{
		{Duration: 400 * ms, Class: pipeline.Interruption}, {Duration: 200 * ms, Class: pipeline.Interruption},
		{Duration: 40 * ms, Class: pipeline.Glitch},
	}
	a := pipeline.RecordingAnswer("call.wav", us)
	want := "listeners hear 2 gaps (600 ms in all, the longest 400 ms) in call.wav; and 1 glitch (40 ms); their causes and remedies need the trace of the turns"
	if a.Verdict != "fail" || a.Text != want || a.Timing.Source != pipeline.TimingRecording {
		t.Errorf("answer %q %q, want %q", a.Verdict, a.Text, want)
	}
	if a := pipeline.RecordingAnswer("call.wav", us[2:]); a.Verdict != "pass" || a.Text != "listeners hear no gap in call.wav; and 1 glitch (40 ms)" {
		t.Errorf("answer %q %q", a.Verdict, a.Text)
	}
}
