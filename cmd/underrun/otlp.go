package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
)

// --otlp on every command that reports turns (analyze, replay, speak, sim,
// capture, proxy: a sink of the report flags) and on monitor (otlpFlag.attach).
func init() { sinkFactories = append(sinkFactories, otlpSinkFactory) }

// otlpFlag is --otlp URL, with the standard OTEL_EXPORTER_OTLP_* endpoints
// of the environment when it is not given.
type otlpFlag struct {
	url string
	fs  *pflag.FlagSet
}

func (f *otlpFlag) bind(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.url, "otlp", "", "send each turn (a span) and the metrics to the OTLP/HTTP endpoint `URL`, e.g. http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
}

// start makes the exporter the flag or the environment asks for (nil,
// nil when neither does). Its first failed export is one warning on
// stderr; the run and its exit status go on unchanged.
func (f *otlpFlag) start(e *env, command string, tpotSLO time.Duration) (*otlp.Exporter, error) {
	o := otlp.Options{Endpoint: f.url, Command: command, TPOTSLO: tpotSLO,
		OnError: func(err error) {
			fmt.Fprintf(e.stderr, "underrun: warning: %v (telemetry is dropped; the run and its results are unchanged)\n", err)
		}}
	if f.url == "" {
		o.Endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		o.TracesEndpoint = os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		o.MetricsEndpoint = os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
		if o.Endpoint == "" && o.TracesEndpoint == "" && o.MetricsEndpoint == "" {
			return nil, nil
		}
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

// stopOTLP sends what is left, in bounded time; a failure was the
// warning already.
func stopOTLP(exp *otlp.Exporter) {
	if exp != nil {
		_ = exp.Shutdown(context.Background())
	}
}

// attach makes monitor export every turn that ends; the returned
// function, run after the monitor stopped, sends what is left.
func (f *otlpFlag) attach(e *env, opts *monitor.Options) (func(), error) {
	exp, err := f.start(e, "monitor", 0) // no TPOT SLO: the verdict is what the listener hears
	if err != nil || exp == nil {
		return func() {}, err
	}
	opts.OnTurn = func(d monitor.TurnDone) {
		exp.Export(otlp.TurnRecord{Turn: d.Turn, Playout: d.Playout, Underruns: d.Underruns, Status: d.Status,
			Traceparent: d.Traceparent, Tracestate: d.Tracestate})
	}
	return func() { stopOTLP(exp) }, nil
}

// otlpSink exports the turns of a run.
type otlpSink struct{ exp *otlp.Exporter }

func otlpSinkFactory(fs *pflag.FlagSet) func(e *env, cfg pipeline.Config) (turnSink, error) {
	var f otlpFlag
	f.bind(fs)
	return func(e *env, _ pipeline.Config) (turnSink, error) {
		var slo time.Duration // none: the verdict is what the listener hears
		if fl := fs.Lookup("tpot-slo"); fl != nil {
			if d, err := time.ParseDuration(fl.Value.String()); err == nil {
				slo = d
			}
		}
		exp, err := f.start(e, fs.Name(), slo)
		if err != nil || exp == nil {
			return nil, err
		}
		return otlpSink{exp}, nil
	}
}

func (s otlpSink) Add(t *pipeline.Turn, p *pipeline.Playout) error {
	s.exp.Export(otlp.TurnRecord{Turn: t, Playout: p})
	return nil
}

func (s otlpSink) Close() error { stopOTLP(s.exp); return nil }

func (s otlpSink) Abort() { stopOTLP(s.exp) }
