// Command otelcol-underrun is an OpenTelemetry Collector for underrun's
// OTLP tests, built from the Go module proxy in a module of its own (so
// the main module's dependencies stay small): the OTLP receiver and the
// file exporter, which writes what arrived as OTLP JSON, one export per
// line. .ci/run builds it; pipeline/otlp/otlptest runs it.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	otlp, file := otlpreceiver.NewFactory(), fileexporter.NewFactory()
	return otelcol.Factories{
		Receivers: map[component.Type]receiver.Factory{otlp.Type(): otlp},
		Exporters: map[component.Type]exporter.Factory{file.Type(): file},
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	info := component.BuildInfo{Command: "otelcol-underrun", Description: "OpenTelemetry Collector for underrun's tests", Version: "v0.165.0"}
	set := otelcol.CollectorSettings{BuildInfo: info, Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()}, DefaultScheme: "file"}}}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
