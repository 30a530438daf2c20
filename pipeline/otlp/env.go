package otlp

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEnv reports a standard OTEL_* setting underrun cannot follow.
var ErrEnv = errors.New("unsupported OpenTelemetry setting")

// FromEnv completes o from the standard OpenTelemetry environment, read
// through getenv (a command passes os.Getenv; the package reads no
// environment of its own): the endpoints when o names none
// (OTEL_EXPORTER_OTLP_ENDPOINT, and the per-signal
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and ..._METRICS_ENDPOINT, which win
// for their signal), and, whatever o names, which signals to send
// (OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER: otlp, the default, or
// none; OTEL_SDK_DISABLED=true sends none). The protocols
// (OTEL_EXPORTER_OTLP_PROTOCOL and its per-signal forms) must be
// http/protobuf, the one spoken. The SDK reads the rest itself: the
// headers (OTEL_EXPORTER_OTLP_HEADERS and per signal), certificates,
// compression, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. An error
// wraps ErrEnv and names the variable.
func FromEnv(o Options, getenv func(string) string) (Options, error) {
	if o.Endpoint == "" && o.TracesEndpoint == "" && o.MetricsEndpoint == "" {
		o.Endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		o.TracesEndpoint = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		o.MetricsEndpoint = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		o.NoTraces, o.NoMetrics = true, true
		return o, nil
	}
	for _, sig := range []struct {
		name string
		off  *bool
	}{{"OTEL_TRACES_EXPORTER", &o.NoTraces}, {"OTEL_METRICS_EXPORTER", &o.NoMetrics}} {
		v := getenv(sig.name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		otlp, none := false, false
		for e := range strings.SplitSeq(v, ",") {
			switch e = strings.ToLower(strings.TrimSpace(e)); e {
			case "otlp":
				otlp = true
			case "none":
				none = true
			default:
				return o, fmt.Errorf("%w: %s=%s: underrun exports over OTLP (otlp) or not at all (none), not %q", ErrEnv, sig.name, v, e)
			}
		}
		if none && !otlp {
			*sig.off = true
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "http/protobuf" {
			return o, fmt.Errorf("%w: %s=%s: underrun speaks OTLP over HTTP with protobuf (http/protobuf, port 4318 by default)", ErrEnv, name, v)
		}
	}
	return o, nil
}

// Enabled says whether o sends anything: a signal with an endpoint that
// is not turned off.
func (o Options) Enabled() bool {
	traces, metrics, err := o.signalURLs()
	return err != nil || traces != "" || metrics != ""
}
