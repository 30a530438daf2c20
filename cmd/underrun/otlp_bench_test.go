//go:build linux || darwin

package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
)

// BenchmarkAnalyzeOTLP is the whole-process cost of --otlp (issue 49): on
// the generated vLLM file (benchVLLMFile; UNDERRUN_BENCH_MB=41 gives the
// issue's 41 MB) it runs `underrun analyze` without and with --otlp to a
// real OTLP/HTTP receiver in this process, one after the other in each
// iteration, and reports each one's CPU and wall time and their ratios.
// The receiver reads each request and answers it without decoding, in
// this process, not analyze's:
//
//	UNDERRUN_BENCH_MB=41 UNDERRUN_BENCH_FILE=/tmp/vllm41.json \
//	  go test ./cmd/underrun -run '^$' -bench AnalyzeOTLP -benchtime 3x
func BenchmarkAnalyzeOTLP(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build underrun with")
	}
	bin := filepath.Join(b.TempDir(), "underrun")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	path, itls := benchVLLMFile(b)
	rcv := otlptest.NewReceiverWith(b, otlptest.Options{Discard: true})
	var plain, with, plainCPU, withCPU time.Duration
	for b.Loop() {
		w, _, cpu := child(b, bin, "analyze", path)
		plain, plainCPU = plain+w, plainCPU+cpu
		w, _, cpu = child(b, bin, "analyze", "--otlp", rcv.URL, path)
		with, withCPU = with+w, withCPU+cpu
	}
	n := float64(b.N)
	b.ReportMetric(plainCPU.Seconds()/n, "analyze-cpu-s")
	b.ReportMetric(withCPU.Seconds()/n, "otlp-cpu-s")
	b.ReportMetric(withCPU.Seconds()/plainCPU.Seconds(), "otlp/analyze-cpu")
	b.ReportMetric(plain.Seconds()/n, "analyze-s")
	b.ReportMetric(with.Seconds()/n, "otlp-s")
	b.ReportMetric(with.Seconds()/plain.Seconds(), "otlp/analyze-wall")
	b.ReportMetric(float64(itls), "itls")
}
