package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
)

// --otlp on every command that reports turns (analyze, replay, speak, sim,
// capture, proxy: a sink of the report flags) and on monitor (otlpFlag.attach).
func init() { sinkFactories = append(sinkFactories, otlpSinkFactory) }

// otlpFlag is --otlp URL, with the standard OTEL_* settings of the
// environment (otlp.FromEnv).
type otlpFlag struct{ url string }

func (f *otlpFlag) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "otlp", "", "send each turn (a span) and the metrics to the OTLP/HTTP endpoint `URL`, e.g. http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
}

// start makes the exporter the flag or the environment asks for (nil,
// nil when neither does). Its first failed export is one warning on
// stderr, a signal the backend does not take one note; the run and its
// exit status go on unchanged.
func (f *otlpFlag) start(e *env, run runInfo, tpotSLO, ttftSLO time.Duration) (*otlp.Exporter, error) {
	o := otlp.Options{Endpoint: f.url, Command: run.command, TPOTSLO: tpotSLO, TTFTSLO: ttftSLO, Offline: !run.live,
		OnError: func(err error) {
			fmt.Fprintf(e.stderr, "underrun: warning: %v (the run and its results are unchanged)\n", err)
		},
		OnNotTaken: func(err error) {
			var nt *otlp.NotTakenError
			if errors.As(err, &nt) {
				fmt.Fprintf(e.stderr, "underrun: note: %v; they are not sent (OTEL_%s_EXPORTER=none says so up front)\n", err, strings.ToUpper(nt.Signal))
			}
		}}
	if run.llm != "" {
		// underrun spoke the OpenAI API itself; each turn says its
		// operation (chat or text_completion)
		o.Server, o.Provider = run.llm, "openai"
	}
	o, err := otlp.FromEnv(o, os.Getenv)
	if err != nil {
		return nil, usageError{err}
	}
	if !o.Enabled() {
		return nil, nil
	}
	exp, err := otlp.New(context.Background(), o)
	if err != nil {
		if f.url != "" {
			return nil, usagef("--otlp: %w", err)
		}
		return nil, usagef("OTEL_EXPORTER_OTLP_*: %w", err)
	}
	return exp, nil
}

// stopOTLP sends what is left: an offline run that finished waits until
// every span is delivered or Ctrl-C; one that was stopped, and a live
// one, wait a bounded time (the exporter's). When spans were not
// delivered it says how many were, of how many.
func stopOTLP(e *env, exp *otlp.Exporter, offline bool) {
	if exp == nil {
		return
	}
	ctx := context.Background()
	if offline && e.ctx != nil {
		if e.ctx.Err() == nil {
			ctx = e.ctx
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 2*otlp.DefaultTimeout)
			defer cancel()
		}
	}
	// a failure was its warning already; what is left to say is how many
	// spans did not arrive
	_ = exp.Shutdown(ctx)
	if d := exp.Delivery(); d.Lost() > 0 {
		fmt.Fprintf(e.stderr, "underrun: warning: OTLP: %s\n", exp.DeliveryText())
	}
}

// attach makes monitor export every turn that ends, and its /metrics
// count the spans (underrun_otlp_spans_total by result); the returned
// function, run after the monitor stopped, sends what is left.
func (f *otlpFlag) attach(e *env, opts *monitor.Options) (func(), error) {
	exp, err := f.start(e, runInfo{command: "monitor", live: true}, 0, 0) // no TPOT SLO: the verdict is what the listener hears
	if err != nil || exp == nil {
		return func() {}, err
	}
	opts.OnTurn = func(d monitor.TurnDone) {
		exp.Export(otlp.TurnRecord{Turn: d.Turn, Playout: d.Playout, Underruns: d.Underruns, Status: d.Status,
			Traceparent: d.Traceparent, Tracestate: d.Tracestate})
	}
	opts.Collectors = append(opts.Collectors, exp.Collector())
	return func() { stopOTLP(e, exp, false) }, nil
}

// otlpSink exports the turns of a run.
type otlpSink struct {
	env *env
	exp *otlp.Exporter
	run *runInfo
}

func otlpSinkFactory(fs *pflag.FlagSet, f *reportFlags) func(e *env, cfg pipeline.Config) (turnSink, error) {
	var fl otlpFlag
	fl.bind(fs)
	return func(e *env, _ pipeline.Config) (turnSink, error) {
		run := f.run
		if run.command == "" {
			run.command = fs.Name()
		}
		exp, err := fl.start(e, run, f.tpotSLO, f.ttftSLO)
		if err != nil || exp == nil {
			return nil, err
		}
		return otlpSink{env: e, exp: exp, run: &f.run}, nil
	}
}

func (s otlpSink) Add(t *pipeline.Turn, p *pipeline.Playout) error {
	r := otlp.TurnRecord{Turn: t, Playout: p}
	if sp := s.run.speed; sp > 0 && sp != 1 && !t.Start.IsZero() {
		// the turn's start is on the replay's faster clock: back to the
		// wall clock, and its span as long as the playing took
		r.Start = s.run.origin.Add(time.Duration(float64(t.Start.Sub(s.run.origin)) / sp))
		r.Speed = sp
	}
	s.exp.Export(r)
	return nil
}

func (s otlpSink) Close() error { stopOTLP(s.env, s.exp, !s.run.live); return nil }

func (s otlpSink) Abort() { stopOTLP(s.env, s.exp, !s.run.live) }
