// Command underrun finds the moments a text-to-speech synthesizer fed by a
// streaming LLM would run out of text, and the inter-token latencies that
// caused them. Run it with no arguments for a demonstration, or see
// `underrun --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Exit codes: CI pipelines gate on them.
const (
	exitOK    = 0
	exitFail  = 1 // the verdict failed: an interruption or a turn without a reply, or an SLO or expectation given was missed
	exitUsage = 2 // bad flags or bad input
)

// errFail marks a run that worked but whose verdict is "fail".
var errFail = errors.New("verdict: fail")

// usageError marks bad flags, arguments or input: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() { os.Exit(runMain()) }

// runMain runs the process's command line, signals and all, and
// returns its exit code.
func runMain() int {
	ctx, stop := interruptible(os.Stderr, os.Exit)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// A recording or event log that fails says so itself, once (see
// watchedWriter): zerolog must not print its own line for every event.
func init() { zerolog.ErrorHandler = func(error) {} }

// exitInterrupted is the exit status of a run ended by a second signal:
// 128 plus SIGINT's number, as a shell reports Ctrl-C.
const exitInterrupted = 130

// interruptible returns a context that SIGINT or SIGTERM cancels: every
// command stops at the next turn, request or record, writes what it has
// and reports. A second signal while it does so ends the process at once
// (exit, with exitInterrupted), whatever it was doing: a shutdown that
// waits for clients, a file that will not take a write. stop releases the
// signals.
func interruptible(stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "underrun: %v again: stopped at once\n", s)
			exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr,
		progressAfter: DefaultProgressAfter, progressEvery: DefaultProgressEvery}, args)
}

// runEnv executes the command line in e and returns the exit code.
func runEnv(ctx context.Context, e *env, args []string) int {
	// third-party libraries write notes to the standard logger that are
	// none of the user's business (mewkiz/flac: a line per frame of a
	// sample rate its tests lack)
	log.SetOutput(io.Discard)
	stdin, stdout, stderr := e.stdin, e.stdout, e.stderr
	e.ctx = ctx
	root := newRootCommand(e)
	if args == nil {
		args = []string{} // cobra would read os.Args for nil
	}
	root.SetArgs(withHelpAll(args))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFail):
		return exitFail
	}
	fmt.Fprintf(stderr, "underrun: %v\n", err)
	return exitUsage
}

// env is what commands read and write instead of the process's own files,
// so tests can run them.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// progressAfter is how long reading an input takes before its
	// progress bar shows (on a terminal stderr), progressEvery how often
	// it is redrawn; noProgress turns the bars off (the event log goes to
	// stderr)
	progressAfter, progressEvery time.Duration
	noProgress                   bool
	// ctx is the command line's context (nil: never done): it ends on
	// Ctrl-C, which stops what waits at exit (an OTLP export)
	ctx context.Context
}
