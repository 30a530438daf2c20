package loadgen

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/procfs"
	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline/httpserver"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// Target is a server a load run drives: its address, how to count what
// it took in and the CPU it used, and how to stop it. Every field but URL
// may be left unset.
type Target struct {
	// URL is the target's address (Options.URL).
	URL string
	// Watch is where its events subscriber connects, if not to URL (a
	// monitor on a Unix socket that listens on loopback TCP too, whose
	// bytes the kernel stamps as they arrive).
	Watch string
	// Received is Options.Received; nil for a monitor: its /metrics are
	// read (monitor.ScrapeReceived).
	Received func() int64
	// CPU is Options.TargetCPU.
	CPU func() time.Duration
	// Peak is the peak memory of a target process, as text ("" unknown).
	Peak func() string
	// Stop stops the target.
	Stop func() error
}

// InProcess starts a target inside this process on ln: an echo server
// (EchoHandler), or a monitor speaking Config with room for sessions
// sessions and an events queue deep enough that the subscriber timing the
// drains is not dropped when every session opens at once.
func InProcess(echo bool, sessions int, ln net.Listener) (*Target, error) {
	t := &Target{URL: monitor.BaseURL(ln)}
	if echo {
		hs := httpserver.New(EchoHandler())
		go hs.Serve(ln)
		t.Stop = hs.Close
		return t, nil
	}
	srv, err := monitor.New(monitor.Options{Config: Config(), MaxSessions: sessions + 10,
		Queue: 4 * sessions, Logger: zerolog.Nop()})
	if err != nil {
		ln.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, 5*time.Second) }()
	t.Received = func() int64 { return srv.Stats().Received }
	t.Stop = func() error { cancel(); return <-done }
	return t, nil
}

// Drive runs opts against t (an echo server when echo is set) and stops
// t: opts.URL, Echo, TargetCPU and Received come from t (a monitor's
// received count from its /metrics when t has none), and opts.Watch, if
// set, subscribes to t.Watch where t has one. It returns what the run
// measured and the target's peak memory as t.Peak said it before it
// stopped ("" unknown).
func Drive(ctx context.Context, opts Options, t *Target, echo bool) (res Result, peak string, err error) {
	opts.URL, opts.Echo, opts.TargetCPU = t.URL, echo, t.CPU
	opts.Received = t.Received
	if watch := opts.Watch; watch != nil && t.Watch != "" {
		opts.Watch = func(ctx context.Context, _, token string) (func() (DrainReport, error), error) {
			return watch(ctx, t.Watch, token)
		}
	}
	if !echo && opts.Received == nil {
		opts.Received = func() int64 {
			n, err := monitor.ScrapeReceived(ctx, t.URL, opts.Token)
			if err != nil {
				return -1
			}
			return n
		}
	}
	res, err = Run(ctx, opts)
	if t.Peak != nil {
		peak = t.Peak()
	}
	if t.Stop != nil {
		t.Stop()
	}
	return res, peak, err
}

// ProcessCPUOf returns the CPU time (user and system) of a process, read
// from /proc (0 where there is none).
func ProcessCPUOf(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// PeakMemoryOf returns a process's peak resident memory, from /proc
// ("" where there is none).
func PeakMemoryOf(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	st, err := p.NewStatus()
	if err != nil || st.VmHWM == 0 {
		return ""
	}
	return fmt.Sprintf("%d kB", st.VmHWM/1024)
}
