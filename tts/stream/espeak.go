package stream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/tts"
)

// StdbufProgram is the program Espeak runs espeak-ng through, when it is
// installed, so that audio leaves espeak-ng the moment it is written:
// espeak-ng writes its audio to a pipe through a 4 KiB stdio buffer, which
// would hold the last 93 ms of each text until the next text's audio
// pushes it out.
const StdbufProgram = "stdbuf"

// Espeak is espeak-ng as a streaming synthesizer: a process per request
// (Synthesize) or per turn (OpenContext), whose audio is read from its
// standard output as it is written.
//
// A request speaks its text as one utterance, with the end-of-text pause
// only when the text ends a clause or sentence (as tts.Espeak). A context
// runs espeak-ng reading line by line: each text is one line, spoken as
// its own utterance as soon as it arrives, without espeak-ng's
// end-of-utterance pause; a text that ends a sentence or clause gets a
// pause of espeak-ng's own length instead (SSML breaks), so the turn
// sounds as if it were spoken whole.
type Espeak struct {
	// Engine is the program, voice and rate (see tts.Espeak).
	Engine *tts.Espeak
	// Stdbuf is the stdbuf program to run espeak-ng through ("" runs it
	// directly; its last few milliseconds of audio per text then arrive
	// late).
	Stdbuf string
}

var (
	_ Synthesizer        = (*Espeak)(nil)
	_ ContextSynthesizer = (*Espeak)(nil)
)

// NewEspeak returns espeak-ng found on PATH (an error wrapping
// tts.ErrNoEngine when it is not), run through stdbuf when that is
// installed.
func NewEspeak() (*Espeak, error) {
	engine, err := tts.NewEspeak()
	if err != nil {
		return nil, err
	}
	e := &Espeak{Engine: engine}
	if path, err := exec.LookPath(StdbufProgram); err == nil {
		e.Stdbuf = path
	}
	return e, nil
}

// Name returns "espeak-ng".
func (e *Espeak) Name() string { return tts.EspeakProgram }

// command returns the process for args.
func (e *Espeak) command(ctx context.Context, args []string) *exec.Cmd {
	if e.Stdbuf != "" {
		return exec.CommandContext(ctx, e.Stdbuf, append([]string{"-o0", e.Engine.Program()}, args...)...)
	}
	return exec.CommandContext(ctx, e.Engine.Program(), args...)
}

// Synthesize speaks text in a process of its own.
func (e *Espeak) Synthesize(ctx context.Context, text string) (Utterance, error) {
	args := append([]string{"--stdout", "--stdin", "-b", "1"}, e.Engine.VoiceArgs()...)
	if !tts.EndsPhrase(text) {
		args = append(args, "-z")
	}
	p, err := e.start(ctx, args, text)
	if err != nil {
		return nil, err
	}
	if err := p.stdin.Close(); err != nil {
		p.abort()
		return nil, fmt.Errorf("%w: %s: %w", ErrSynthesis, tts.EspeakProgram, err)
	}
	return p, nil
}

// OpenContext starts a process that speaks every text given to it, line
// by line, for one turn.
func (e *Espeak) OpenContext(ctx context.Context) (Context, error) {
	args := append([]string{"--stdout", "-b", "1", "-z", "-m"}, e.Engine.VoiceArgs()...)
	p, err := e.start(ctx, args, "")
	if err != nil {
		return nil, err
	}
	return &espeakContext{process: p, speed: e.Engine.Speed}, nil
}

// start runs espeak-ng with args, text written to its standard input.
func (e *Espeak) start(ctx context.Context, args []string, text string) (*process, error) {
	cmd := e.command(ctx, args)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSynthesis, tts.EspeakProgram, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSynthesis, tts.EspeakProgram, err)
	}
	p := &process{cmd: cmd, stdin: stdin, ctx: ctx, text: text}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSynthesis, tts.EspeakProgram, err)
	}
	p.reader = NewWAVReader(stdout)
	if text != "" {
		if _, err := io.WriteString(stdin, text); err != nil {
			p.abort()
			return nil, fmt.Errorf("%w: %s %q: writing the text: %w", ErrSynthesis, tts.EspeakProgram, clip(text), err)
		}
	}
	return p, nil
}

// process is one espeak-ng process and its audio: the Utterance of a
// request.
type process struct {
	cmd    *exec.Cmd
	ctx    context.Context
	stdin  io.WriteCloser
	reader *Reader
	stderr limitedBuffer
	text   string // for errors ("" for a context)

	tag      func() int // the Speak index pieces are given (contexts)
	waitOnce sync.Once
	waitErr  error
	done     atomic.Bool
}

// Next returns the next piece of espeak-ng's audio.
func (p *process) Next() (Piece, error) {
	piece, err := p.reader.Next()
	if err == nil {
		if p.tag != nil {
			piece.Text = p.tag()
		}
		return piece, nil
	}
	werr := p.wait()
	switch {
	case p.ctx.Err() != nil:
		return Piece{}, p.ctx.Err()
	case p.done.Load():
		return Piece{}, fmt.Errorf("%w: %s: stopped", ErrSynthesis, tts.EspeakProgram)
	case werr != nil:
		return Piece{}, fmt.Errorf("%w: %s%s: %w%s", ErrSynthesis, tts.EspeakProgram, p.about(), werr, p.stderr.note())
	case err == io.EOF:
		return Piece{}, io.EOF
	}
	return Piece{}, fmt.Errorf("%w: %s%s: its audio: %w%s", ErrSynthesis, tts.EspeakProgram, p.about(), err, p.stderr.note())
}

func (p *process) about() string {
	if p.text == "" {
		return ""
	}
	return fmt.Sprintf(" %q", clip(p.text))
}

// wait waits for the process once.
func (p *process) wait() error {
	p.waitOnce.Do(func() { p.waitErr = p.cmd.Wait() })
	return p.waitErr
}

// abort kills the process and waits for it.
func (p *process) abort() {
	p.done.Store(true)
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	_ = p.stdin.Close()
	_ = p.wait()
}

// Close stops the process if it still runs and waits for it.
func (p *process) Close() error {
	p.abort()
	return nil
}

// espeakContext is one espeak-ng process reading a turn's texts line by
// line.
type espeakContext struct {
	*process
	speed  int
	mu     sync.Mutex
	texts  int          // texts handed over
	said   atomic.Int64 // the last of them written to espeak-ng
	closed bool
}

// Speak writes text as the next line.
func (c *espeakContext) Speak(text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: %s: speak after close", ErrSynthesis, tts.EspeakProgram)
	}
	if c.tag == nil {
		c.tag = func() int { return int(c.said.Load()) }
	}
	i := c.texts
	c.texts++
	line := c.line(text)
	if line == "" {
		return nil // nothing to say: no audio comes for it
	}
	c.said.Store(int64(i))
	if _, err := io.WriteString(c.stdin, line); err != nil {
		return fmt.Errorf("%w: %s: writing %q: %w%s", ErrSynthesis, tts.EspeakProgram, clip(text), err, c.stderr.note())
	}
	return nil
}

// Default pauses of espeak-ng at its default rate (175 words per
// minute), measured: after a sentence inside a text, and after a comma.
const (
	espeakSentencePauseMs = 300
	espeakClausePauseMs   = 140
)

// line is the SSML line that speaks text: markup escaped, line breaks
// made spaces, a break after a sentence or clause.
func (c *espeakContext) line(text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range text {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\n', '\r', '\v', '\f':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	if tts.EndsPhrase(text) {
		ms := espeakClausePauseMs
		if endsSentence(text) {
			ms = espeakSentencePauseMs
		}
		if c.speed > 0 {
			ms = ms * 175 / c.speed
		}
		fmt.Fprintf(&b, `<break time="%dms"/>`, ms)
	}
	b.WriteByte('\n')
	return b.String()
}

// endsSentence reports whether text ends with sentence punctuation,
// trailing space and closing quotes aside.
func endsSentence(text string) bool {
	t := strings.TrimRight(text, " \t\r\n\"')]”’")
	r, _ := utf8.DecodeLastRuneInString(t)
	return t != "" && tts.IsSentenceEnd(r)
}

// Close ends the input: espeak-ng speaks what it has and ends.
func (c *espeakContext) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSynthesis, tts.EspeakProgram, err)
	}
	return nil
}

// Abort stops the process at once.
func (c *espeakContext) Abort() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.process.abort()
	return nil
}

// limitedBuffer keeps the first 4 KiB written to it (a process's standard
// error), for error messages.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 4096 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// note returns ": " and what was kept, or "".
func (b *limitedBuffer) note() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	if s == "" {
		return ""
	}
	return ": " + s
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:37] + "..."
}
