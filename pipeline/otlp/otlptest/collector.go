package otlptest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// CollectorEnv names the OpenTelemetry Collector binary the tests run
// (.ci/run builds it from pipeline/otlp/testdata/collector and sets it);
// without it, CollectorPath in the user's cache directory is looked for.
const CollectorEnv = "UNDERRUN_OTELCOL"

// CollectorPath is where .ci/run puts the Collector, under the user's
// cache directory.
const CollectorPath = "underrun/otelcol-underrun"

// Collector is a real OpenTelemetry Collector (v0.165.0: the OTLP
// receiver and the file exporter) running as a process for one test.
// URL is its OTLP/HTTP endpoint; Stop ends it and reads back what
// arrived.
type Collector struct {
	URL    string
	cmd    *exec.Cmd
	out    string
	stderr bytes.Buffer
	done   chan error
}

// CollectorBinary returns the Collector binary, or skips the test with a
// message saying how to build it.
func CollectorBinary(t testing.TB) string {
	t.Helper()
	path := os.Getenv(CollectorEnv)
	if path == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			path = filepath.Join(dir, CollectorPath)
		}
	}
	if _, err := os.Stat(path); path == "" || err != nil {
		t.Skipf("no OpenTelemetry Collector built (%s or ~/.cache/%s): .ci/run builds it, or "+
			"go build -C pipeline/otlp/testdata/collector -o ~/.cache/%s .", CollectorEnv, CollectorPath, CollectorPath)
	}
	return path
}

// StartCollector runs a Collector whose OTLP/HTTP receiver listens on a
// free loopback port and whose file exporter writes every export it
// receives; it stops when the test ends, if Stop was not called.
func StartCollector(t testing.TB) *Collector {
	t.Helper()
	bin := CollectorBinary(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &Collector{URL: "http://" + addr, out: filepath.Join(dir, "received.json"), done: make(chan error, 1)}
	config := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
    metrics:
      receivers: [otlp]
      exporters: [file]
`, addr, c.out)
	cfg, err := os.CreateTemp(dir, "config-*.yaml")
	if err == nil {
		_, err = cfg.WriteString(config)
		err = errors.Join(err, cfg.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config=file:"+cfg.Name())
	c.cmd.Stdout, c.cmd.Stderr = &c.stderr, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("the Collector %s: %v", bin, err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	// however long a busy machine takes to start it
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case err := <-c.done:
			t.Fatalf("the Collector exited before listening (%v): %s", err, c.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Collector did not listen on %s within a minute: %s", addr, c.stderr.String())
		}
	}
}

// Received is what a Collector's file exporter wrote.
type Received struct {
	Spans   []Span
	Metrics map[string][]pmetric.Metric
}

// Stop ends the Collector as a service manager does (SIGTERM: it drains
// its pipelines) and reads back every export it received.
func (c *Collector) Stop(t testing.TB) Received {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-c.done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("the Collector: %v: %s", err, c.stderr.String())
		}
	case <-ctx.Done():
		c.cmd.Process.Kill()
		t.Fatalf("the Collector did not stop within 30 s of SIGTERM: %s", c.stderr.String())
	}
	if s := c.stderr.String(); strings.Contains(s, "\terror\t") {
		t.Errorf("the Collector logged errors: %s", s)
	}
	f, err := os.Open(c.out)
	if err != nil {
		t.Fatalf("the Collector's file exporter wrote nothing (%v): %s", err, c.stderr.String())
	}
	defer f.Close()
	r := Received{Metrics: map[string][]pmetric.Metric{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		switch {
		case bytes.Contains(b, []byte(`"resourceSpans"`)):
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
			if err != nil {
				t.Fatalf("%s:%d: %v", c.out, line, err)
			}
			rs := td.ResourceSpans()
			for i := range rs.Len() {
				for j := range rs.At(i).ScopeSpans().Len() {
					ss := rs.At(i).ScopeSpans().At(j).Spans()
					for k := range ss.Len() {
						r.Spans = append(r.Spans, Span{Span: ss.At(k), Resource: rs.At(i).Resource()})
					}
				}
			}
		case bytes.Contains(b, []byte(`"resourceMetrics"`)):
			md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
			if err != nil {
				t.Fatalf("%s:%d: %v", c.out, line, err)
			}
			rm := md.ResourceMetrics()
			for i := range rm.Len() {
				for j := range rm.At(i).ScopeMetrics().Len() {
					ms := rm.At(i).ScopeMetrics().At(j).Metrics()
					for k := range ms.Len() {
						r.Metrics[ms.At(k).Name()] = append(r.Metrics[ms.At(k).Name()], ms.At(k))
					}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", c.out, err)
	}
	return r
}
