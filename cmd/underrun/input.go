package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// DefaultProgressAfter is how long reading an input takes before its
// progress bar shows: quick inputs never draw one.
const DefaultProgressAfter = time.Second

// DefaultProgressEvery is how often a progress bar is redrawn.
const DefaultProgressEvery = 100 * time.Millisecond

// input is one file (or standard input) a command reads turns from. When
// stderr is a terminal and the reading takes longer than
// env.progressAfter, a progress bar on stderr shows the bytes read (of the
// file's size, when known) and the turns done so far; on a pipe or a file
// it never shows, and it never touches stdout.
type input struct {
	r     io.Reader
	label string
	file  *os.File
	size  int64
	dec   trace.Decoder
	// warn takes the decoder's warnings, printed by Close
	warn io.Writer

	// the progress bar: drawn only when tty, from after on
	tty          bool
	after        time.Time
	every        time.Duration
	drawn        time.Time
	max, bytes   int64
	turns        int
	shownTurns   int
	bar          *progressbar.ProgressBar
	progressDest io.Writer
	// barOut is the bar's way to progressDest, closed by Close: nothing
	// the bar does after it reaches the terminal, so the bar never draws
	// over (or races) what the command writes once its input is read
	barOut *barWriter
}

// openInput opens name ("-" for standard input).
func openInput(e *env, name string) (*input, error) {
	in := &input{r: e.stdin, label: "stdin", warn: e.stderr}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageError{err}
		}
		in.file, in.r, in.label = f, f, name
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			in.size = st.Size()
		}
	}
	if f, ok := e.stderr.(*os.File); ok && !e.noProgress && term.IsTerminal(int(f.Fd())) {
		in.tty, in.after, in.every, in.progressDest = true, time.Now().Add(e.progressAfter), e.progressEvery, f
		in.max = in.size
		if in.max == 0 {
			in.max = -1 // a spinner: the size is unknown
		}
		if in.file != nil {
			in.r = &countingFile{File: in.file, in: in}
		} else {
			in.r = &countingReader{r: in.r, in: in}
		}
	}
	return in, nil
}

// openDecoder opens name as openInput does, with its trace decoder for
// format; the caller closes the input. On an error nothing is left open.
func openDecoder(e *env, name, format string) (*input, trace.Decoder, error) {
	in, err := openInput(e, name)
	if err != nil {
		return nil, nil, err
	}
	dec, err := in.decoder(format)
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, dec, nil
}

// warningPrefix begins every warning line on stderr: something in the
// input was passed over, and the command goes on.
const warningPrefix = "underrun: warning: "

// warnf prints a warning on the command's stderr.
func warnf(e *env, format string, args ...any) {
	fmt.Fprintf(e.stderr, warningPrefix+format+"\n", args...)
}

// isFile reports whether name is a file that exists (not a folder).
func isFile(name string) bool {
	st, err := os.Stat(name)
	return err == nil && !st.IsDir()
}

// decoder opens the trace decoder of the input in format (or "auto").
func (in *input) decoder(format string) (trace.Decoder, error) {
	dec, err := trace.Open(in.r, in.label, format)
	if err != nil {
		return nil, usageError{err}
	}
	if _, ok := dec.(*trace.ColumnarReader); ok && in.tty && in.size > 0 {
		in.max = 2 * in.size // an index pass, then the reading pass
		if in.bar != nil {
			in.bar.ChangeMax64(in.max)
		}
	}
	in.dec = dec
	return dec, nil
}

// progress counts n bytes read and redraws the bar when it is due.
func (in *input) progress(n int) {
	in.bytes += int64(n)
	in.tick()
}

// tick draws the bar, at most every in.every, once the reading has
// taken long enough.
func (in *input) tick() {
	if !in.tty {
		return
	}
	if in.bar == nil {
		// made at the first read, so that its rate and times count from
		// the start; it reaches the terminal once the reading has taken
		// env.progressAfter
		in.barOut = &barWriter{w: &fromWriter{w: in.progressDest, from: in.after}}
		in.bar = progressbar.NewOptions64(in.max,
			progressbar.OptionSetWriter(in.barOut),
			// no spinner of its own ticking: the bar is drawn here, on
			// the goroutine that reads, and nowhere else
			progressbar.OptionSetSpinnerChangeInterval(0),
			progressbar.OptionThrottle(0),
			progressbar.OptionSetDescription(in.description()),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
		)
		in.shownTurns = in.turns
	}
	now := time.Now()
	if now.Before(in.after) || now.Sub(in.drawn) < in.every {
		return
	}
	in.drawn = now
	in.bar.Set64(in.bytes)
	if in.turns != in.shownTurns {
		in.shownTurns = in.turns
		in.bar.Describe(in.description())
	}
}

func (in *input) description() string {
	return fmt.Sprintf("%s: %s", filepath.Base(in.label), plural(in.turns, "turn"))
}

// Close ends the progress bar (cleared from the terminal), stops its
// writes, prints the decoder's warnings (fields it does not know, each
// once) on stderr, and closes the file and the decoder.
func (in *input) Close() {
	if in.bar != nil {
		in.bar.Finish()
		in.bar.Exit()
		in.barOut.Close()
	}
	if w, ok := in.dec.(trace.Warner); ok {
		for _, msg := range w.Warnings() {
			fmt.Fprintln(in.warn, warningPrefix+msg)
		}
	}
	if c, ok := in.dec.(io.Closer); ok {
		c.Close()
	}
	if in.file != nil {
		in.file.Close()
	}
}

// fromWriter drops what is written to it before a time (a progress bar
// not yet due: what it clears at the end, for one).
type fromWriter struct {
	w    io.Writer
	from time.Time
}

func (f *fromWriter) Write(p []byte) (int, error) {
	if time.Now().Before(f.from) {
		return len(p), nil
	}
	return f.w.Write(p)
}

// countingFile counts the bytes read from a file, sequentially or at
// offsets, for the progress bar.
type countingFile struct {
	*os.File
	in *input
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.in.progress(n)
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.in.progress(n)
	return n, err
}

// countingReader counts the bytes read from standard input.
type countingReader struct {
	r  io.Reader
	in *input
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.in.progress(n)
	return n, err
}

// each calls fn with every turn dec yields, until the input ends, ctx is
// cancelled or fn fails. A decoder error is bad input (usageError); fn's
// errors are returned as they are.
func (in *input) each(ctx context.Context, dec trace.Decoder, fn func(*pipeline.Turn) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return usageError{err}
		}
		if err := fn(t); err != nil {
			return err
		}
		in.turns++
		in.tick()
	}
}

// loadPrompts reads the --prompts file, or returns the built-in prompts
// when path is empty.
func loadPrompts(path string) ([]openai.Prompt, error) {
	if path == "" {
		return openai.DefaultPrompts, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--prompts: %w", err)
	}
	defer f.Close()
	prompts, err := openai.ReadPrompts(f, path)
	if err != nil {
		return nil, usagef("--prompts: %w", err)
	}
	return prompts, nil
}

// bindFormat binds --format, the format of the input whose is says.
func bindFormat(fs *pflag.FlagSet, format *string, whose string) {
	fs.StringVar(format, "format", "auto", whose+" `FORMAT`: auto (told from the content) or one of "+trace.FormatNames())
}
