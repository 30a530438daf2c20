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
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes: CI pipelines gate on them.
const (
	exitOK    = 0
	exitFail  = 1 // the verdict failed: an SLO or expectation was missed
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr,
		progressAfter: DefaultProgressAfter, progressEvery: DefaultProgressEvery}, args)
}

// runEnv executes the command line in e and returns the exit code.
func runEnv(ctx context.Context, e *env, args []string) int {
	stdin, stdout, stderr := e.stdin, e.stdout, e.stderr
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
}
