package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopxl/beep/v2"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts/player"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// speakRun is one run of speak.
type speakRun struct {
	cmd     *speakCommand
	cfg     pipeline.Config
	synth   stream.Synthesizer
	rate    int
	live    io.Writer
	start   time.Time
	session *session
	guard   *pipeline.Guard
	player  *player.Player
	sess    *speak.Session
	wav     *player.WAV
	wavFile *recording
	rec     *speak.Recorder
	recFile *recording
	stop    func() // ends the drain
	drained chan struct{}

	mu    sync.Mutex // live output
	texts map[string]map[int]string
}

// open starts the report, the outputs, the player and the guard.
func (r *speakRun) open() (err error) {
	c := r.cmd
	c.out.timing = pipeline.GapTiming{Source: pipeline.TimingPlayer, Synthesizer: r.synth.Name(),
		Text: "the real player's own count of the silence it played (ground truth), " + r.synth.Name() + " synthesizing each " +
			"speech chunk in real time as the chunking releases it; the engine's prediction for the same run follows the report"}
	c.out.run = runInfo{command: "speak", live: true, llm: c.url}
	if r.session, err = c.out.begin(c.env, r.cfg); err != nil {
		return err
	}
	r.session.writeReport = r.writeReport
	defer func() {
		if err != nil {
			r.abort()
		}
	}()
	if c.record != "" {
		if r.recFile, err = openRecording(c.env.stderr, "--record", c.record, c.out.force); err != nil {
			return err
		}
		r.rec = speak.NewRecorder(r.recFile, "speak; "+r.synth.Name()+"; clock: the player's monotonic clock, chunks from a server by their receive stamps")
	}
	if c.wavOut != "" {
		if r.wavFile, err = openRecording(c.env.stderr, "--wav", c.wavOut, c.out.force); err != nil {
			return err
		}
		r.wav = player.NewWAV(r.wavFile, r.rate)
	}
	opts := player.Options{Preroll: r.cfg.Preroll, OnGap: r.gapEvent, Transport: r.cfg.Transport}
	if r.wav != nil {
		opts.Record = r.wav.Write
	}
	if r.player, err = player.New(r.rate, opts); err != nil {
		return err
	}
	r.drained = make(chan struct{})
	if c.play {
		stop, err := openSpeaker(r.rate, c.playBuffer, playerStreamer{r.player})
		if err != nil {
			return fmt.Errorf("--play: %w", err)
		}
		r.stop = func() { r.player.Close(); stop(); close(r.drained) }
		// a card can take a moment before it plays steadily: the first
		// turn begins once it has taken speakerWarmup of (silent) audio
		ctx, cancel := context.WithTimeout(context.Background(), speakerReady)
		err = r.player.WaitDrained(ctx, int64(speakerWarmup.Seconds()*float64(r.rate)))
		cancel()
		if err != nil {
			return fmt.Errorf("--play: the sound card took no audio for %v: %w", speakerReady, err)
		}
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer close(r.drained)
			r.player.Run(ctx, c.period)
		}()
		r.stop = func() { r.player.Close(); cancel(); <-r.drained }
	}
	// the event log says which events are the model's and which were
	// heard; the pipeline plays no filler, so the guard's model has none
	// (the report says what --filler would cover)
	model := r.cfg
	model.Filler = pipeline.Filler{}
	r.guard, err = pipeline.NewGuard(model, pipeline.GuardOptions{
		Clock: pipeline.RealClock(), Logger: r.session.log.With().Str("source", "model").Logger(),
		OnEvent: r.guardEvent, WarnTolerance: c.warn,
	})
	if err != nil {
		return usageError{err}
	}
	r.session.log = r.session.log.With().Str("source", "heard").Logger()
	return nil
}

// speakerBuffer is the sound card's buffer for speak --play: short, so that
// the card asks for audio often and a gap's end is heard where it falls.
// speakerWarmup is how much silence the card must have taken before the
// first turn begins, within speakerReady.
const (
	speakerBuffer = 10 * time.Millisecond
	speakerWarmup = 200 * time.Millisecond
	speakerReady  = 5 * time.Second
)

// playerStreamer plays a Player through beep's speaker.
type playerStreamer struct{ p *player.Player }

func (s playerStreamer) Stream(buf [][2]float64) (int, bool) {
	mono := make([]float32, len(buf))
	if !s.p.Stream(mono) {
		return 0, false
	}
	for i, v := range mono {
		buf[i] = [2]float64{float64(v), float64(v)}
	}
	return len(buf), true
}

func (s playerStreamer) Err() error { return nil }

var _ beep.Streamer = playerStreamer{}

func (r *speakRun) playerText() string {
	switch {
	case r.cmd.play:
		return "plays through the sound card"
	case r.cmd.wavOut != "":
		return "is paced by the monotonic clock and writes what it plays to " + r.cmd.wavOut
	}
	return "is paced by the monotonic clock (--wav FILE keeps what it plays)"
}

// line prints one live line.
func (r *speakRun) line(turn, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.live, "  %8.3fs  %-12s  %s\n", time.Since(r.start).Seconds(), turn, fmt.Sprintf(format, args...))
}

func (r *speakRun) guardEvent(e pipeline.Event) {
	if text, ok := guardEventText(e); ok {
		r.line(e.Turn, "model: %s", text)
	}
}

func (r *speakRun) gapEvent(turn string, g player.Gap, e player.GapEvent) {
	switch e {
	case player.GapStarted:
		r.line(turn, "heard: silence began (%.1f ms into the turn)", pipeline.Millis(g.Start))
	case player.GapEnded:
		r.line(turn, "heard: %.1f ms of silence (%d samples), ended by chunk %d %q", pipeline.Millis(g.Duration), g.Samples, g.Chunk, r.chunkText(turn, g.Chunk))
	case player.GapCancelled:
		r.line(turn, "heard: the speech was over (no underrun)")
	}
}

func (r *speakRun) chunkEvent(turn string, t speak.Timing, e speak.ChunkEvent) {
	r.mu.Lock()
	if r.texts == nil {
		r.texts = map[string]map[int]string{}
	}
	if r.texts[turn] == nil {
		r.texts[turn] = map[int]string{}
	}
	r.texts[turn][t.Index] = t.Text
	r.mu.Unlock()
	if e == speak.ChunkDone {
		if t.Err != "" {
			r.line(turn, "synthesizer: chunk %d %q failed: %s", t.Index, clipText(t.Text), t.Err)
		}
		r.sess.RecordTiming(turn, t)
	}
}

func (r *speakRun) chunkText(turn string, i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clipText(r.texts[turn][i])
}

func clipText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 30 {
		return s
	}
	return s[:27] + "..."
}

// heard says a turn was heard to its end and accounts it.
func (r *speakRun) heard(st *speak.SessionTurn, res *speak.Result, cmp *speak.Comparison) error {
	h := res.Heard
	r.line(st.ID(), "heard to its end: %d %s, %.0f ms of silence; predicted %d; %s",
		len(h.Gaps), noun(len(h.Gaps), "gap", "gaps"), pipeline.Millis(h.Silence()), len(cmp.Model.Underruns), agreeText(cmp))
	return r.session.played(res.Record, cmp.Heard)
}

func agreeText(cmp *speak.Comparison) string {
	if d := cmp.Differences(); len(d) > 0 {
		return fmt.Sprintf("%d %s", len(d), noun(len(d), "difference", "differences"))
	}
	return "as predicted"
}

// replay speaks recorded turns, each chunk at its recorded time since its
// turn began.
func (r *speakRun) replay(ctx context.Context, turns []*pipeline.Turn) error {
	err := r.sess.Replay(ctx, turns, r.cmd.pause, r.heard)
	if te := (*speak.TurnError)(nil); errors.As(err, &te) {
		return usageError{err}
	}
	return err
}

// live_ speaks the answers of the --url server, one request after
// another.
func (r *speakRun) live_(ctx context.Context, prompts []openai.Prompt) error {
	c := r.cmd
	key := os.Getenv(c.keyEnv)
	if key == "" && c.cmd.Flags().Changed("api-key-env") {
		return usagef("--api-key-env: the environment variable %s is not set", c.keyEnv)
	}
	n := c.requests
	if n == 0 {
		n = len(prompts)
	}
	feed := r.sess.Feed(ctx)
	feed.OnStreamError = func(turn, text string) { r.line(turn, "stream: %s", text) }
	client := &openai.Client{BaseURL: c.url, APIKey: key, IdleTimeout: c.idle, Trace: feed, ReadClock: c.clock == "read"}
	if !client.ReadClock {
		_ = rxstamp.Warm(ctx)
	}
	for i := range n {
		if i > 0 && c.pause > 0 {
			select {
			case <-time.After(c.pause):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		req := openai.Request{API: openai.API(c.api), Model: c.model, Prompt: prompts[i%len(prompts)], MaxTokens: c.maxTokens, NoUsage: c.noUsage}
		feed.Reset()
		_, err := client.Stream(ctx, "r"+strconv.Itoa(i+1), c.session, req)
		if err == nil {
			err = feed.Err()
		}
		st := feed.Turn()
		if err != nil {
			if st != nil {
				st.Abort()
			}
			return err
		}
		if st == nil {
			continue
		}
		res, cmp, err := st.Heard(ctx)
		if err != nil {
			return err
		}
		if err := r.heard(st, res, cmp); err != nil {
			return err
		}
	}
	return nil
}

// abort stops everything after an error, leaving the outputs as they are.
func (r *speakRun) abort() {
	if r.guard != nil {
		r.guard.Close()
	}
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	if r.wav != nil {
		r.wav.Close()
	}
	if r.wavFile != nil {
		r.wavFile.Close()
	}
	if r.recFile != nil {
		r.recFile.Close()
	}
	if r.session != nil {
		r.session.abort()
	}
}

// finish closes the outputs and writes the report.
func (r *speakRun) finish() error {
	r.guard.Close()
	r.stop()
	r.stop = nil
	var errs []error
	if r.wav != nil {
		errs = append(errs, r.wav.Close())
		errs = append(errs, r.wavFile.Close())
	}
	if r.recFile != nil {
		errs = append(errs, r.recFile.Close())
	}
	errs = append(errs, r.sess.Err())
	if err := errors.Join(errs...); err != nil {
		r.session.abort()
		return err
	}
	err := r.session.finish()
	if err != nil && !errors.Is(err, errFail) {
		return err
	}
	if r.cmd.check && !r.sess.Report().Agrees() {
		return errFail
	}
	return err
}

// writeReport renders the report of what was heard and, beside it, the
// comparison with the engine's prediction.
func (r *speakRun) writeReport(w io.Writer, rep *pipeline.Report, json_ bool) error {
	if json_ {
		var heard bytes.Buffer
		if err := rep.WriteJSON(&heard); err != nil {
			return err
		}
		out := struct {
			Answer     *pipeline.Answer `json:"answer"`
			Heard      json.RawMessage  `json:"heard"`
			Comparison speak.ReportJSON `json:"comparison"`
		}{Answer: rep.Answer, Heard: bytes.TrimSpace(heard.Bytes()), Comparison: r.sess.Report().JSON()}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	if err := rep.WriteAnswer(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "what was heard (the player's own count of its silence):\n\n")
	if err := rep.WriteBody(w); err != nil {
		return err
	}
	if err := rep.WriteVerdict(w); err != nil {
		return err
	}
	writeLists(w, rep, r.session.flags.list)
	return r.sess.Report().WriteText(w)
}
