package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// input is one file (or standard input) a command reads turns from, with
// a progress bar on stderr when stderr is a terminal.
type input struct {
	r     io.Reader
	label string
	file  *os.File
	bar   *progressbar.ProgressBar
	size  int64
	dec   trace.Decoder
}

// openInput opens name ("-" for standard input).
func openInput(e *env, name string) (*input, error) {
	in := &input{r: e.stdin, label: "stdin"}
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
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		max := in.size
		if max == 0 {
			max = -1 // a spinner: the size is unknown
		}
		in.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription(filepath.Base(in.label)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		if in.file != nil {
			in.r = &countingFile{File: in.file, bar: in.bar}
		} else {
			in.r = io.TeeReader(in.r, in.bar)
		}
	}
	return in, nil
}

// decoder opens the trace decoder of the input in format (or "auto").
func (in *input) decoder(format string) (trace.Decoder, error) {
	dec, err := trace.Open(in.r, in.label, format)
	if err != nil {
		return nil, usageError{err}
	}
	if _, ok := dec.(*trace.ColumnarReader); ok && in.bar != nil && in.size > 0 {
		in.bar.ChangeMax64(2 * in.size) // an index pass, then the reading pass
	}
	in.dec = dec
	return dec, nil
}

// Close ends the progress bar and closes the file and the decoder.
func (in *input) Close() {
	if in.bar != nil {
		in.bar.Finish()
	}
	if c, ok := in.dec.(io.Closer); ok {
		c.Close()
	}
	if in.file != nil {
		in.file.Close()
	}
}

// countingFile counts the bytes read from a file, sequentially or at
// offsets, on a progress bar.
type countingFile struct {
	*os.File
	bar *progressbar.ProgressBar
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.bar.Add64(int64(n))
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.bar.Add64(int64(n))
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
	}
}
