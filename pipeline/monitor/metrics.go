package monitor

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the monitor's Prometheus collectors, on its own registry.
type metrics struct {
	reg *prometheus.Registry

	itl, tpot, ttft, ttfa, underrun prometheus.Histogram

	turns         *prometheus.CounterVec
	goodTurns     prometheus.Counter
	speech        prometheus.Counter
	glitches      prometheus.Counter
	interruptions prometheus.Counter
	toolSilences  prometheus.Counter
	toolSilence   prometheus.Counter
	bargeIns      prometheus.Counter
	stalls        prometheus.Counter
	messages      *prometheus.CounterVec
	byType        map[Type]prometheus.Counter // messages, resolved once
	refused       *prometheus.CounterVec
	dropped       *prometheus.CounterVec

	sessions    prometheus.Gauge
	maxSessions prometheus.Gauge
	openTurns   prometheus.Gauge
}

// latencyBuckets suit token latencies and audible gaps: 5 ms to 10 s.
var latencyBuckets = []float64{.005, .01, .02, .03, .04, .05, .075, .1, .15, .2, .3, .5, .75, 1, 2, 5, 10}

func newMetrics() *metrics {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "underrun", Name: name, Help: help, Buckets: latencyBuckets,
		})
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "underrun", Name: name, Help: help})
	}
	m := &metrics{
		reg:      prometheus.NewRegistry(),
		itl:      h("itl_seconds", "Inter-token latency: the gap between consecutive chunks of a turn."),
		tpot:     h("tpot_seconds", "Time per output token of each finished turn: (E2E - TTFT) / (tokens - 1)."),
		ttft:     h("ttft_seconds", "Time to first token: the first chunk's arrival after turn_start."),
		ttfa:     h("ttfa_seconds", "Time to first audio: when the modelled player started, after turn_start."),
		underrun: h("underrun_seconds", "Length of each underrun (the player had nothing to play)."),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "underrun", Name: "turns_total",
			Help: "Turns ended, by status (ok, error, cancelled, barge_in, incomplete)."}, []string{"status"}),
		goodTurns:     c("good_turns_total", "Turns that ended ok with no interruption (speech goodput is good_turns_total / turns_total, as analyze counts it)."),
		speech:        c("speech_seconds_total", "Seconds of speech in the turns ended: the audio the modelled player plays, which interruptions per minute of speech count against."),
		glitches:      c("glitches_total", "Underruns shorter than the interruption threshold."),
		interruptions: c("interruptions_total", "Underruns at least as long as the interruption threshold."),
		toolSilences:  c("tool_silences_total", "Silences while a turn's stream stopped for a tool call: no underruns, not in glitches or interruptions."),
		toolSilence:   c("tool_silence_seconds_total", "Seconds of those tool-call silences."),
		bargeIns:      c("barge_ins_total", "Turns the user interrupted (barge-in)."),
		stalls:        c("stall_warnings_total", "Stall warnings: the stall tolerance fell below the warning threshold."),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "underrun", Name: "messages_total",
			Help: "Ingest messages accepted, by type."}, []string{"type"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "underrun", Name: "messages_refused_total",
			Help: "Ingest messages refused, by reason (malformed, rejected, rate_limit)."}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "underrun", Name: "subscribers_dropped_total",
			Help: "Subscribers and pages dropped because they read too slowly, by kind."}, []string{"kind"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "underrun", Name: "live_sessions", Help: "Ingest connections open now."}),
		maxSessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "underrun", Name: "max_sessions",
			Help: "Ingest connections the monitor takes at once (--max-sessions); more are refused with HTTP 503."}),
		openTurns: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "underrun", Name: "open_turns", Help: "Turns streaming now."}),
	}
	m.reg.MustRegister(m.itl, m.tpot, m.ttft, m.ttfa, m.underrun, m.turns, m.goodTurns, m.speech, m.glitches, m.interruptions,
		m.toolSilences, m.toolSilence, m.bargeIns, m.stalls, m.messages, m.refused, m.dropped, m.sessions, m.maxSessions, m.openTurns)
	// the series exist from the start, so dashboards see zeros, not gaps
	for _, s := range []string{"ok", "error", "cancelled", "barge_in", "incomplete"} {
		m.turns.WithLabelValues(s)
	}
	m.byType = map[Type]prometheus.Counter{}
	for _, t := range ingestTypes {
		m.byType[t] = m.messages.WithLabelValues(string(t))
	}
	for _, r := range []string{reasonMalformed, reasonRejected, reasonRate} {
		m.refused.WithLabelValues(r)
	}
	for _, k := range []string{"events", "page"} {
		m.dropped.WithLabelValues(k)
	}
	return m
}

// Reasons a message is refused.
const (
	reasonMalformed = "malformed"
	reasonRejected  = "rejected"
	reasonRate      = "rate_limit"
)
