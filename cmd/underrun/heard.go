package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/heard"
	"github.com/speech-pipeline/underrun/pipeline/plot"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts"
)

func init() { commands = append(commands, newHeardCommand) }

const heardLong = `Find the gaps in a recording of what a voice agent said, tell the voice's own
pauses from underruns, and, given the trace of the LLM stream behind it, name
the token and ITL behind each underrun with the same classes and causes as
analyze.

The recording is a WAV file (PCM 8, 16, 24 or 32 bits, 32 or 64-bit float, G.711
mu-law or A-law), FLAC or MP3, told by its content; any sample rate; mono, or
several channels with --channel. It is read as it is decoded: memory stays
bounded whatever its length. Silence is found in three bands (low, middle,
high), each against its own noise floor measured over the 4 s around, and
below the speech's level there, so noise of any colour, a change of gain and
an engine's near-silent padding move the threshold with them.

With TRACE (any format analyze reads; a recording of underrun speak --record
also gives the synthesizer's measured timings), each turn's spoken text is
aligned to the recording's speech, so each silence falls at a sentence end, a
clause end, a word boundary or inside a word, and where a speech chunk begins
(the only place a stalled stream leaves a gap) or inside one. The voice's own
pause at each kind of place is learned where no gap can be: inside chunks, and
where a chunk's audio was there long before it played. A silence where a chunk
begins is an underrun when its sound resumed as soon as the chunk's audio can
have been ready and it is longer than that pause, or when it is far longer;
with measured timings, where the engine predicts the gap. Each is accounted
by the engine as analyze accounts the gaps it predicts.

Without TRACE a silence far longer than the recording's own long pauses is an
underrun, measured as it lies (no pause assumed before it), with a confidence.

Exit codes: 0 pass; 1 an interruption was heard (or TPOT over --tpot-slo, where given);
2 bad usage or bad input.`

const heardExample = `  underrun heard call.wav                          # the gaps alone, graded
  underrun heard call.wav trace.jsonl              # each gap's token, ITL and cause
  underrun heard --channel right --offset 1.2s call.wav trace.jsonl
  underrun speak --scenario prefill-unchunked --wav heard.wav --record run.jsonl
  underrun heard --plot heard.svg heard.wav run.jsonl`

type heardCommand struct {
	env     *env
	cmd     *cobra.Command
	engine  engineFlags
	out     reportFlags
	format  string
	channel string
	offset  time.Duration
	minGap  time.Duration
	plot    string
	// recorded is the trace's speak recording, when it is one
	recorded *speak.Recording
}

func newHeardCommand(e *env) *cobra.Command {
	c := &heardCommand{env: e}
	c.cmd = &cobra.Command{
		Use:     "heard RECORDING.wav [TRACE]",
		Short:   "Find the gaps in a recording and the token delay behind each",
		Long:    heardLong,
		Example: heardExample,
		Args:    positional(1, 2, "a recording (WAV, FLAC or MP3) and, optionally, the trace of the LLM stream behind it"),
		RunE:    func(cmd *cobra.Command, args []string) error { return c.run(cmd.Context(), args) },
	}
	fs := c.cmd.Flags()
	bindFormat(fs, &c.format, "TRACE's")
	fs.StringVar(&c.channel, "channel", "mix", "`CHANNEL` of a recording with several: mix, left, right, or its number from 1")
	fs.DurationVar(&c.offset, "offset", 0, "where the trace's first request lies in the recording (default: at its first sound)")
	fs.DurationVar(&c.minGap, "min-silence", heard.DefaultMinSilence, "shortest silence looked at")
	fs.StringVar(&c.plot, "plot", "", "draw the recording's waveform, its gaps marked, beside the model's timeline into `FILE` (.svg, .png)")
	c.engine.bind(fs)
	// the model's own outputs (--wav, --plot) are not what was heard
	c.out.bindWithout(fs, append(wavFlagNames, "plot", "plot-kind", "events", "chunks")...)
	renamed(e, fs, "output", "o", "report")
	showFlags(c.cmd, "channel", "offset", "min-silence", "voice", "stack", "chunking", "report", "plot")
	return c.cmd
}

// parseChannel turns --channel into tts.DecodeRecording's channel.
func parseChannel(s string) (int, error) {
	switch s {
	case "mix":
		return tts.MixChannels, nil
	case "left":
		return 1, nil
	case "right":
		return 2, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 || fmt.Sprint(n) != s {
		return 0, usagef("--channel: want mix, left, right or a channel number from 1, got %q", s)
	}
	return n, nil
}

func (c *heardCommand) run(ctx context.Context, args []string) error {
	// the silences of a long recording are most of what heard keeps: a
	// soft limit makes the collector keep the heap near them while it
	// analyzes and reports (10 hours of speech, 73,000 silences, in under
	// 64 MB)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(heardMemoryLimit))
	if ctx == nil {
		ctx = context.Background()
	}
	channel, err := parseChannel(c.channel)
	if err != nil {
		return err
	}
	if c.minGap <= 0 {
		return usagef("--min-silence must be positive, got %v", c.minGap)
	}
	if c.plot != "" {
		if f, err := plotFormat(c.plot); err != nil || f == "html" {
			return usagef("--plot: want a file ending in .svg or .png, got %q", c.plot)
		}
	}
	cfg, err := c.engine.config()
	if err != nil {
		return err
	}
	var turns []*pipeline.Turn
	if len(args) == 2 {
		if turns, err = c.readTrace(ctx, args[1], &cfg); err != nil {
			return err
		}
	}
	res, err := c.analyze(ctx, args[0], channel, turns, cfg)
	if err != nil {
		return err
	}
	if len(turns) == 0 {
		return c.finishAlone(args[0], res)
	}
	c.out.timing = pipeline.GapTiming{Source: pipeline.TimingRecording,
		Text: "the silences found in the recording " + args[0] + ", each explained by the trace's token timing"}
	s, err := c.out.begin(c.env, cfg)
	if err != nil {
		return err
	}
	for _, t := range res.Turns {
		if err := s.played(t.Turn, t.Playout); err != nil {
			s.abort()
			return err
		}
	}
	if c.plot != "" {
		if err := c.writePlot(res); err != nil {
			s.abort()
			return err
		}
	}
	s.writeReport = func(w io.Writer, r *pipeline.Report, asJSON bool) error {
		if asJSON {
			return writeHeardJSON(w, r, res, nil)
		}
		if err := r.WriteAnswer(w); err != nil {
			return err
		}
		writeHeardText(w, args[0], res)
		if err := r.WriteBody(w); err != nil {
			return err
		}
		if err := r.WriteVerdict(w); err != nil {
			return err
		}
		writeLists(w, r, c.out.list)
		return nil
	}
	return s.finish()
}

// analyze reads the recording name as it is decoded (its memory stays
// bounded, whatever its length) and hears it against turns.
func (c *heardCommand) analyze(ctx context.Context, name string, channel int, turns []*pipeline.Turn, cfg pipeline.Config) (*heard.Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageError{err}
	}
	defer f.Close()
	rec, err := tts.OpenRecording(f, channel)
	if err != nil {
		return nil, usagef("%s: %w", name, err)
	}
	opts := heard.Options{Detector: heard.Detector{MinSilence: c.minGap}, Offset: c.offset, AutoOffset: !c.cmd.Flags().Changed("offset")}
	if at, ok := recordedOffset(c.recorded, turns); ok && opts.AutoOffset {
		opts.Offset, opts.AutoOffset = at, false
	}
	res, err := heard.AnalyzeRecording(ctx, rec, rec.Rate(), turns, cfg, opts)
	if errors.Is(err, tts.ErrRecordingFormat) {
		return nil, usagef("%s: %w", name, err)
	}
	if err != nil {
		return nil, usageError{err}
	}
	return res, nil
}

// heardMemoryLimit is the soft limit of the Go heap while heard analyzes a
// recording.
const heardMemoryLimit = 32 << 20

// recordedOffset returns where the first turn's request lies in the WAV
// that speak --wav-out wrote beside rec: the heard record says where the
// turn's first audio lies in what the player played (its first sample, at
// the synthesizer's rate) and when, after the request, it played.
func recordedOffset(rec *speak.Recording, turns []*pipeline.Turn) (time.Duration, bool) {
	if rec == nil || len(turns) == 0 {
		return 0, false
	}
	first := turns[0]
	for _, t := range turns[1:] {
		if t.Start.Before(first.Start) {
			first = t
		}
	}
	h, ok := rec.Heard[first.ID]
	if !ok || !h.Started {
		return 0, false
	}
	for _, c := range rec.Chunks[first.ID] {
		if c.Rate > 0 {
			return time.Duration(float64(h.FirstSample)*float64(time.Second)/float64(c.Rate)) - h.Start, true
		}
	}
	return 0, false
}

// finishAlone reports a recording heard without a trace: its silences,
// and the verdict (fail on an interruption).
func (c *heardCommand) finishAlone(name string, res *heard.Result) error {
	if c.out.output != "text" && c.out.output != "json" {
		return usagef("--report: want text or json, got %q", c.out.output)
	}
	if c.plot != "" {
		if err := c.writePlot(res); err != nil {
			return err
		}
	}
	var us []pipeline.Underrun
	for _, h := range res.Gaps() {
		us = append(us, *h.Underrun)
	}
	t := pipeline.TallyUnderruns(us)
	answer := pipeline.RecordingAnswer(name, us)
	verdict := answer.Verdict
	if c.out.output == "json" {
		if err := writeHeardJSON(c.env.stdout, nil, res, answer); err != nil {
			return err
		}
	} else {
		if err := answer.WriteText(c.env.stdout); err != nil {
			return err
		}
		writeHeardText(c.env.stdout, name, res)
		fmt.Fprintf(c.env.stdout, "underruns: %d (%.0f ms); glitches: %d; interruptions: %d (%.0f ms)\nverdict: %s\n",
			len(us), ms(t.Silence), t.Glitches, t.Interruptions, ms(t.Interrupted), strings.ToUpper(verdict))
	}
	if verdict != "pass" {
		return errFail
	}
	return nil
}

// readTrace reads TRACE's turns; a recording of speak --record also gives
// the synthesizer's measured timings to cfg.
func (c *heardCommand) readTrace(ctx context.Context, name string, cfg *pipeline.Config) ([]*pipeline.Turn, error) {
	c.recorded = nil
	in, err := openInput(c.env, name)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	dec, err := in.decoder(c.format)
	if err != nil {
		return nil, err
	}
	var turns []*pipeline.Turn
	if err := in.each(ctx, dec, func(t *pipeline.Turn) error { turns = append(turns, t); return nil }); err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return nil, usagef("%s: no turns in it", name)
	}
	if f, err := os.Open(name); err == nil {
		rec, err := speak.ReadRecording(f, name)
		f.Close()
		if err == nil && len(rec.Chunks) > 0 {
			cfg.Measured = rec.Measured()
			c.recorded = rec
			fmt.Fprintf(c.env.stderr, "underrun: %s is a recording of underrun speak: its synthesizer timings replace the synthesizer model\n", name)
		}
	}
	return turns, nil
}

// heardRecordingJSON is the JSON report's recording: what the detector
// measured, the voice's pauses and every silence heard (written one by
// one after these fields: a long recording has tens of thousands).
type heardRecordingJSON struct {
	OffsetMs      float64            `json:"offset_ms"`
	FloorDB       float64            `json:"noise_floor_db"`
	SpeechDB      float64            `json:"speech_db"`
	Threshold     float64            `json:"threshold_db"`
	PausesMs      map[string]float64 `json:"pauses_ms"`
	ChunkPausesMs map[string]float64 `json:"chunk_start_pauses_ms,omitempty"`
	GapCount      int                `json:"gaps"`
	FirstSound    float64            `json:"first_sound_ms"`
}

type heardSilenceJSON struct {
	StartMs     float64                  `json:"start_ms"`
	LengthMs    float64                  `json:"length_ms"`
	Kind        heard.Kind               `json:"kind"`
	Confidence  float64                  `json:"confidence"`
	Turn        string                   `json:"turn,omitempty"`
	Place       heard.Place              `json:"place"`
	ChunkStart  bool                     `json:"chunk_start,omitempty"`
	After       string                   `json:"after,omitempty"`
	ExpectedMs  float64                  `json:"expected_ms"`
	GapStartMs  *float64                 `json:"gap_start_ms,omitempty"`
	GapLengthMs *float64                 `json:"gap_length_ms,omitempty"`
	DepthDB     float64                  `json:"depth_db"`
	Underrun    *pipeline.UnderrunReport `json:"underrun,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeHeardJSON writes the JSON report: {"answer": the answer of a
// recording heard without a trace (with one, the report's), "recording":
// {..., "silences": [...]}, "report": analyze's report}, each silence
// encoded as it is written.
func writeHeardJSON(w io.Writer, r *pipeline.Report, res *heard.Result, answer *pipeline.Answer) error {
	rec := heardRecordingJSON{OffsetMs: ms(res.Offset), FloorDB: res.Levels.Floor, SpeechDB: res.Levels.Speech,
		Threshold: res.Levels.Threshold, PausesMs: map[string]float64{}, FirstSound: ms(res.Levels.FirstSound)}
	for p, d := range res.Pauses {
		rec.PausesMs[string(p)] = ms(d)
	}
	if len(res.Turns) > 0 {
		rec.ChunkPausesMs = map[string]float64{}
		for p, d := range res.ChunkPauses {
			rec.ChunkPausesMs[string(p)] = ms(d)
		}
	}
	rec.GapCount = len(res.Gaps())
	bw := bufio.NewWriter(w)
	head, err := json.MarshalIndent(rec, "  ", "  ")
	if err != nil {
		return err
	}
	bw.WriteString("{\n")
	if answer != nil {
		b, err := json.MarshalIndent(answer, "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("  \"answer\": ")
		bw.Write(b)
		bw.WriteString(",\n")
	}
	// the recording's fields, then its silences in the same object
	bw.WriteString("  \"recording\": ")
	bw.Write(bytes.TrimSuffix(head, []byte("\n  }")))
	bw.WriteString(",\n    \"silences\": [")
	for i, h := range res.Silences {
		j := heardSilenceJSON{StartMs: ms(h.Start), LengthMs: ms(h.Length()), Kind: h.Kind, Confidence: h.Confidence, Turn: h.Turn,
			Place: h.Place, ChunkStart: h.ChunkStart, After: h.After, ExpectedMs: ms(h.Expected), DepthDB: h.Depth}
		if h.Kind == heard.Gap {
			s, l := ms(h.GapStart), ms(h.GapLength)
			j.GapStartMs, j.GapLengthMs = &s, &l
			if h.Underrun != nil {
				u := pipeline.NewUnderrunReport(*h.Underrun)
				j.Underrun = &u
			}
		}
		b, err := json.MarshalIndent(j, "      ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n      ")
		bw.Write(b)
	}
	if len(res.Silences) > 0 {
		bw.WriteString("\n    ")
	}
	bw.WriteString("]\n  }")
	if r != nil {
		b, err := json.MarshalIndent(r, "  ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString(",\n  \"report\": ")
		bw.Write(b)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

func writeHeardText(w io.Writer, name string, res *heard.Result) {
	gaps := res.Gaps()
	fmt.Fprintf(w, "recording %s: %.1f s at %d Hz; noise floor %.0f dBFS, speech %.0f dBFS, silence under %.0f dBFS\n",
		name, res.Levels.Duration.Seconds(), res.Rate, res.Levels.Floor, res.Levels.Speech, res.Levels.Threshold)
	if len(res.Turns) > 0 {
		fmt.Fprintf(w, "the trace's first request lies at %.1f ms of the recording; the voice's own pauses: %.0f ms between words, %.0f ms at a clause end, %.0f ms at a sentence end inside a chunk, %.0f, %.0f and %.0f ms where a chunk begins\n",
			ms(res.Offset), ms(res.Pauses[heard.AtWord]), ms(res.Pauses[heard.AtClause]), ms(res.Pauses[heard.AtSentence]),
			ms(res.ChunkPauses[heard.AtWord]), ms(res.ChunkPauses[heard.AtClause]), ms(res.ChunkPauses[heard.AtSentence]))
	} else {
		fmt.Fprintf(w, "no trace: a silence is an underrun when it is far longer than the recording's own long pauses (%.0f ms, their median)\n", ms(res.Pauses[heard.Unknown]))
	}
	fmt.Fprintf(w, "%s: %s, %s of the voice's own\n\n", plural(len(res.Silences), "silence"), plural(len(gaps), "underrun"), plural(len(res.Silences)-len(gaps), "pause"))
	fmt.Fprintf(w, "  %10s %9s  %-8s %5s  %-9s %-16s %9s %9s  %s\n", "at ms", "silence", "kind", "conf", "place", "before", "gap ms", "gap len", "cause")
	for _, h := range res.Silences {
		gapAt, gapLen, cause := "", "", ""
		if h.Kind == heard.Gap {
			gapAt, gapLen = fmt.Sprintf("%.1f", ms(h.GapStart)), fmt.Sprintf("%.1f", ms(h.GapLength))
			if u := h.Underrun; u != nil {
				cause = string(u.Class)
				if u.Cause != "" {
					cause += fmt.Sprintf(", %s, token %d (ITL %.1f ms)", u.Cause, u.Token, ms(u.ITL))
				}
			}
		}
		after := h.After
		if after != "" {
			after = strings.TrimSpace(h.Before + " | " + after)
		}
		fmt.Fprintf(w, "  %10.1f %9.1f  %-8s %5.2f  %-9s %-16s %9s %9s  %s\n", ms(h.Start), ms(h.Length()), h.Kind, h.Confidence, h.Place, clipWords(after, 16), gapAt, gapLen, cause)
	}
	fmt.Fprintln(w)
}

func clipWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// writePlot draws the recording's waveform with its gaps above each
// turn's timeline as the engine plays it with the gaps heard (--plot).
func (c *heardCommand) writePlot(res *heard.Result) error {
	f, err := createOutput("--plot", c.plot)
	if err != nil {
		return err
	}
	w := plot.Waveform{Min: res.Envelope.Min, Max: res.Envelope.Max, Step: res.Envelope.Step, Duration: res.Levels.Duration, Threshold: res.Levels.Threshold}
	for _, h := range res.Silences {
		w.Marks = append(w.Marks, plot.WaveMark{Start: h.Start, End: h.End, Gap: h.Kind == heard.Gap, GapStart: h.GapStart, GapEnd: h.GapStart + h.GapLength, Label: string(h.Place)})
	}
	var tls []plot.Timeline
	var bases []time.Duration
	for _, t := range res.Turns {
		tls = append(tls, plot.NewTimeline(t.Turn, t.Playout))
		bases = append(bases, t.Base)
	}
	fig := plot.HeardFigure(w, tls, bases)
	format, _ := plotFormat(c.plot)
	if format == "png" {
		err = fig.WritePNG(f)
	} else {
		err = fig.WriteSVG(f)
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("--plot: %w", err)
	}
	return f.Commit()
}
