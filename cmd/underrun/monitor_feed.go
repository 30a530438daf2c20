package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/prometheus"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

const monitorFeedLong = `Play a recorded trace into a running monitor at its real pace: one ingest
connection per session of the trace, each turn started at its recorded offset
from the first (turns without a start time follow each other), each chunk sent
at its recorded time with t_ms, so the monitor raises the same underruns that
analyze reports. A turn named SESSION/TURN (as monitor --record names them)
is sent as TURN on SESSION. Any trace format analyze reads is accepted.

--monitor takes several monitors, separated by commas: each session goes to one
of them, picked by a stable hash of the session name (jump consistent hash
of its FNV-1a 64-bit hash, as monitor.Shard computes it), so the same name
always reaches the same monitor and a fleet grown by one monitor moves only
the sessions that go to the new one. Keep the list in the same order.

Exit codes: 0 every message sent; 2 bad usage, or a monitor could not be
reached.`

const monitorFeedExample = `  underrun monitor feed live.jsonl --monitor http://127.0.0.1:8765
  underrun monitor feed --format vllm bench.json --monitor ws://127.0.0.1:8765 --token "$TOKEN"
  underrun monitor feed live.jsonl --monitor http://10.0.0.1:8765,http://10.0.0.2:8765,http://10.0.0.3:8765`

func newMonitorFeedCommand(e *env) *cobra.Command {
	var to, token, format, session string
	cmd := &cobra.Command{
		Use:     "feed FILE --monitor URL[,URL...]",
		Short:   "Feed a recorded trace into a running monitor at its real pace",
		Long:    monitorFeedLong,
		Example: monitorFeedExample,
		Args:    positional(1, 1, "the trace to feed (a file, or - for standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usagef("--monitor: the monitor's address is required (e.g. http://%s)", defaultMonitorListen)
			}
			in, err := openInput(e, args[0])
			if err != nil {
				return err
			}
			defer in.Close()
			dec, err := in.decoder(format)
			if err != nil {
				return err
			}
			return feedMonitor(cmd.Context(), e, dec, to, token, session)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&to, "monitor", "", "the monitor's `URL` (http:// or ws://), or several separated by commas (each session goes to one, by a hash of its name)")
	fs.StringVar(&token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer `TOKEN` (default $UNDERRUN_MONITOR_TOKEN)")
	bindFormat(fs, &format, "input")
	fs.StringVar(&session, "session", "feed", "session `NAME` for turns that carry none")
	renamed(e, fs, "to", "", "monitor")
	return cmd
}

// feedMonitor plays the turns of dec into the monitors at to (one URL, or
// several separated by commas) at their real pace and says what it sent.
func feedMonitor(ctx context.Context, e *env, dec trace.Decoder, to, token, session string) error {
	urls := strings.Split(to, ",")
	for i, u := range urls {
		if urls[i] = strings.TrimSpace(u); urls[i] == "" {
			return usagef("--monitor %q: monitor %d of the list is empty; want URL or URL1,URL2,...", to, i+1)
		}
	}
	st, err := monitor.Feed(ctx, dec, monitor.FeedOptions{
		URLs: urls, Token: token, Session: session,
		OnRefused: func(s, msg string) {
			fmt.Fprintf(e.stderr, "underrun: monitor refused a message of session %s: %s\n", s, msg)
		},
	})
	fmt.Fprintf(e.stdout, "fed %d turns of %d sessions: %d messages, %d refused\n", st.Turns, st.Sessions, st.Messages, st.Refused)
	if len(urls) > 1 && len(st.PerMonitor) == len(urls) {
		per := make([]string, len(urls))
		for i, u := range urls {
			per[i] = fmt.Sprintf("%s %d", u, st.PerMonitor[i])
		}
		fmt.Fprintf(e.stdout, "sessions per monitor: %s\n", strings.Join(per, ", "))
	}
	if err != nil && errors.Is(err, trace.ErrFormat) {
		return usageError{err}
	}
	return err
}

// newMonitorRulesCommand prints the Prometheus rules for a fleet of
// monitors.
func newMonitorRulesCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "Print the Prometheus recording and alerting rules for a fleet of monitors",
		Long: `Print the Prometheus rules for the monitors' /metrics (a YAML rule file, the
repository's pipeline/monitor/prometheus/rules.yml): recording rules for the
fleet's interruptions per minute of speech, speech goodput, ITL and
time-to-first-audio percentiles and live sessions per monitor, and alerts for
an interruption rate above 0.5 per minute of speech for 5 minutes, a monitor
dropping subscribers or refusing more than 1% of its messages, a monitor above
90% of its --max-sessions, and a monitor Prometheus cannot scrape. They expect
the monitors in a scrape job named "underrun". The README, section "A fleet of
monitors", shows a Prometheus configuration that loads them.`,
		Example: `  underrun monitor rules > /etc/prometheus/underrun.rules.yml
  promtool check rules /etc/prometheus/underrun.rules.yml`,
		Args: positional(0, 0, ""),
		RunE: func(*cobra.Command, []string) error {
			_, err := e.stdout.Write(prometheus.Rules)
			return err
		},
	}
}
