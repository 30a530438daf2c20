package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline/httpserver"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/loadgen"
)

// newMonitorWatchCommand is the /events subscriber monitor load starts in
// a process of its own (hidden: a tool of the load command). It times the
// underrun_started events until its standard input closes, then writes a
// loadgen.DrainReport as JSON to standard output.
func newMonitorWatchCommand(e *env) *cobra.Command {
	var to, token string
	var nice int
	cmd := &cobra.Command{
		Use:     "watch --monitor URL",
		Short:   "Time a monitor's underrun_started events until standard input closes (a tool of monitor load)",
		Example: "  underrun monitor watch --monitor http://" + defaultMonitorListen + " < /dev/null",
		Hidden:  true,
		Args:    positional(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usagef("monitor watch needs --monitor URL, the monitor whose events to time%s", exampleOf(cmd))
			}
			if nice != 0 {
				if err := loadgen.NiceSelf(nice); err != nil {
					fmt.Fprintf(e.stderr, "underrun watch: at nice 0 (nice %d refused: %v)\n", nice, err)
				}
			}
			w, err := loadgen.WatchDrains(cmd.Context(), to, token)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stderr, watchingLine)
			io.Copy(io.Discard, e.stdin)
			return json.NewEncoder(e.stdout).Encode(w.Stop())
		},
	}
	cmd.Flags().StringVar(&to, "monitor", "", "the monitor's `URL`")
	cmd.Flags().StringVar(&token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer `TOKEN`")
	cmd.Flags().IntVar(&nice, "nice", 0, "run at this nice value (monitor load's real-time senders share the subscriber's CPUs)")
	renamed(e, cmd.Flags(), "to", "", "monitor")
	return cmd
}

// watchingLine is what monitor watch says once it is subscribed.
const watchingLine = "underrun watch: subscribed"

// spawnWatch is loadgen.Options.Watch with the subscriber in a
// process of its own (this executable's monitor watch), so that it reads
// its events promptly instead of sharing the load's threads. Beside the
// load's real-time senders (realtime) it runs at nice -20 where allowed:
// at nice 0 it read its events late behind every ordinary thread on
// those CPUs (read-p99 20-90 ms at 5,000 sessions), and the events
// reached its socket late with it (drain-p99 7-9 ms at 4,000 sessions,
// 3-4 ms at nice -20 or with senders at ordinary priority).
func spawnWatch(ctx context.Context, url, token string, realtime bool) (func() (loadgen.DrainReport, error), error) {
	args := []string{"monitor", "watch", "--monitor", url}
	if realtime {
		args = append(args, "--nice=-20")
	}
	cmd, err := selfCommand(args...)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "UNDERRUN_MONITOR_TOKEN="+token) // not on the command line
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startChild(ctx, cmd, nil, "subscribe", func(line string) bool { return line == watchingLine }); err != nil {
		return nil, err
	}
	return func() (loadgen.DrainReport, error) {
		stdin.Close()
		var r loadgen.DrainReport
		err := json.NewDecoder(stdout).Decode(&r)
		if werr := cmd.Wait(); err == nil {
			err = werr
		}
		return r, err
	}, nil
}

// newMonitorEchoCommand is the bare echo server monitor load starts as the
// ceiling (hidden: a tool of the load command).
func newMonitorEchoCommand(e *env) *cobra.Command {
	return newLoadTargetCommand(e, "echo", "Serve a bare gorilla websocket echo server (the ceiling of monitor load)",
		func(ctx context.Context, ln net.Listener) error {
			hs := httpserver.New(loadgen.EchoHandler())
			go func() {
				<-ctx.Done()
				hs.Close()
			}()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
}

// newMonitorSinkCommand is the sink monitor load measures the write floor
// against (hidden: a tool of the load command).
func newMonitorSinkCommand(e *env) *cobra.Command {
	return newLoadTargetCommand(e, "sink", "Read and drop whatever connections send (the write floor of monitor load)", loadgen.Sink)
}

// newLoadTargetCommand is a hidden server of monitor load's: it listens on
// --listen, says where on standard error (spawn reads it), and serves.
func newLoadTargetCommand(e *env, name, short string, serve func(context.Context, net.Listener) error) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:     name,
		Short:   short,
		Example: "  underrun monitor " + name + " --listen 127.0.0.1:0",
		Hidden:  true,
		Args:    positional(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkListen(listen, ""); err != nil {
				return err
			}
			ln, err := listenMonitor(listen)
			if err != nil {
				return usagef("--listen: %w", err)
			}
			fmt.Fprintf(e.stderr, "underrun %s on %s \n", name, monitor.BaseURL(ln))
			return serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback `HOST:PORT` (or unix:PATH) to listen on")
	return cmd
}

var listenLine = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+|unix:\S+)[/ ]`)

// spawn starts this executable with args, waits for it to say where it
// listens, and returns it as a target.
func spawn(ctx context.Context, cpus []int, args ...string) (*loadgen.Target, error) {
	cmd, err := selfCommand(args...)
	if err != nil {
		return nil, err
	}
	t := &loadgen.Target{}
	listens := 0 // the lines to wait for: one per --listen
	for _, a := range args {
		if a == "--listen" {
			listens++
		}
	}
	listens = max(listens, 1)
	var urls []string
	if err := startChild(ctx, cmd, cpus, "say where it listens", func(line string) bool {
		if m := listenLine.FindStringSubmatch(line); m != nil {
			urls = append(urls, m[1])
		}
		return len(urls) == listens
	}); err != nil {
		return nil, err
	}
	t.URL = urls[0]
	if len(urls) > 1 {
		t.Watch = urls[1]
	}
	t.CPU = func() time.Duration { return loadgen.ProcessCPUOf(cmd.Process.Pid) }
	t.Peak = func() string { return loadgen.PeakMemoryOf(cmd.Process.Pid) }
	t.Stop = func() error {
		cmd.Process.Signal(os.Interrupt)
		return cmd.Wait()
	}
	return t, nil
}

// selfCommand is this executable run with args.
func selfCommand(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}

// startChild starts cmd on cpus (none: anywhere) and waits, at most 10 s,
// for a line on its standard error for which ready is true (what names
// that moment, for the error); the rest of its standard error is read and
// dropped. On failure the child is killed.
func startChild(ctx context.Context, cmd *exec.Cmd, cpus []int, what string, ready func(line string) bool) error {
	name := strings.Join(cmd.Args, " ")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := loadgen.StartOn(cmd, cpus); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		last := ""
		for sc.Scan() {
			if ready(sc.Text()) {
				done <- nil
				io.Copy(io.Discard, stderr)
				return
			}
			last = sc.Text()
		}
		done <- fmt.Errorf("%s exited before it would %s: %s", name, what, last)
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("%s did not %s within 10s", name, what)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
	return err
}
