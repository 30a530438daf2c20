//go:build linux || darwin

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// benchRequests is the number of requests of the generated vLLM file: by
// default about 4 MB of it, or UNDERRUN_BENCH_MB megabytes (412 gives the
// file of issue 16: 77,000 requests, 19 M ITLs).
func benchRequests() int {
	mb := 4
	if v, err := strconv.Atoi(os.Getenv("UNDERRUN_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	// a request of ~249 ITLs written as Python writes floats takes ~5.35 kB
	return max(1, mb*1_000_000/5350)
}

// writeVLLMDetailed writes a vLLM `bench serve --save-result
// --save-detailed` result of n requests, as vLLM writes it (Python's
// json.dump: floats in their shortest form, ", " between items): 150 to
// 349 output tokens each, TTFTs of 50 to 450 ms, ITLs of 15 to 30 ms with
// a stall of 100 to 900 ms once in 200 tokens, one request in 500 failed.
// With text, each request's generated text is English-like words, about
// one per 1.33 tokens; without, the texts are empty, as in a run that did
// not keep them. It returns the number of ITLs written.
func writeVLLMDetailed(w io.Writer, n int, text bool, seed uint64) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int, n)
	for i := range out {
		out[i] = 150 + r.IntN(200)
	}
	failed := func(i int) bool { return i%500 == 499 }
	completed := 0
	for i := range n {
		if !failed(i) {
			completed++
		}
	}
	fmt.Fprintf(bw, `{"date": "20261204-010000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": null, "model_id": "example/voice-8b", "tokenizer_id": "example/voice-8b", "num_prompts": %d, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 64, "completed": %d, "failed": %d`, n, completed, n-completed)
	list := func(key string, each func(i int)) { testkit.WriteList(bw, key, n, each) }
	float := func(v float64) { bw.WriteString(strconv.FormatFloat(v, 'g', -1, 64)) }
	list("input_lens", func(i int) { bw.WriteString("1024") })
	list("output_lens", func(i int) {
		if failed(i) {
			bw.WriteString("0")
			return
		}
		bw.WriteString(strconv.Itoa(out[i]))
	})
	list("ttfts", func(i int) {
		if failed(i) {
			bw.WriteString("0.0")
			return
		}
		float(0.05 + 0.4*r.Float64())
	})
	itls := 0
	list("itls", func(i int) {
		bw.WriteByte('[')
		if !failed(i) {
			for k := range out[i] - 1 {
				if k > 0 {
					bw.WriteString(", ")
				}
				v := 0.015 + 0.015*r.Float64()
				if r.IntN(200) == 0 {
					v = 0.1 + 0.8*r.Float64()
				}
				float(v)
				itls++
			}
		}
		bw.WriteByte(']')
	})
	list("start_times", func(i int) { float(1764810000 + float64(i)/64) })
	words := []string{"the", "voice", "answer", "is", "ready,", "and", "we", "can", "speak", "it", "now.", "Tokens", "arrive", "slowly", "when", "the", "server", "is", "busy."}
	list("generated_texts", func(i int) {
		bw.WriteByte('"')
		if text && !failed(i) {
			for k := range out[i] * 3 / 4 {
				if k > 0 {
					bw.WriteByte(' ')
				}
				bw.WriteString(words[r.IntN(len(words))])
			}
		}
		bw.WriteByte('"')
	})
	list("errors", func(i int) {
		if failed(i) {
			bw.WriteString(`"TimeoutError: the server stopped answering"`)
			return
		}
		bw.WriteString(`""`)
	})
	bw.WriteString("}\n")
	return itls, bw.Flush()
}

// benchVLLMFile returns a generated vLLM file of benchRequests requests
// (texts with UNDERRUN_BENCH_TEXT=1) and its ITL count. With
// UNDERRUN_BENCH_FILE=PATH the file is kept there and reused by later runs
// of the same size.
func benchVLLMFile(b *testing.B) (string, int) {
	b.Helper()
	n, text := benchRequests(), os.Getenv("UNDERRUN_BENCH_TEXT") == "1"
	path := os.Getenv("UNDERRUN_BENCH_FILE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "vllm-detailed.json")
	}
	meta := path + ".itls"
	if m, err := os.ReadFile(meta); err == nil {
		var kept, itls int
		var keptText bool
		if _, err := fmt.Sscanf(string(m), "%d %t %d", &kept, &keptText, &itls); err == nil && kept == n && keptText == text {
			if _, err := os.Stat(path); err == nil {
				return path, itls
			}
		}
	}
	var buf bytes.Buffer
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	itls, err := writeVLLMDetailed(f, n, text, 16)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(&buf, "%d %t %d\n", n, text, itls)
	if err := os.WriteFile(meta, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path, itls
}

// child runs a command to its end and returns its wall time, peak
// resident memory (bytes) and CPU time (user and system).
func child(b *testing.B, name string, args ...string) (time.Duration, int64, time.Duration) {
	b.Helper()
	cmd := exec.Command(name, args...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		b.Fatalf("%s: %v", name, err)
	}
	// exit status 1 is a failing verdict, a result like any other
	if code := cmd.ProcessState.ExitCode(); code != 0 && code != exitFail {
		b.Fatalf("%s %v: %v: %s", name, args, err, errOut.String())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if runtime.GOOS == "linux" {
		rss *= 1024 // kB on Linux, bytes on macOS
	}
	return wall, rss, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkAnalyzeVsPythonJSON is the whole-process comparison of issue
// 16: on a generated vLLM --save-detailed file it builds and runs
// `underrun analyze --report json` (defaults, and --max-tpot=false) and
// `python3 -c 'import json; json.load(open(F))'`, one after the other in
// each iteration, and reports each one's wall time and peak resident
// memory and CPU time, the ratios of analyze's wall time to Python's and
// to analyze --max-tpot=false, and analyze's peak memory per pooled ITL. The file is
// about 4 MB unless UNDERRUN_BENCH_MB says otherwise; run it so:
//
//	UNDERRUN_BENCH_MB=412 UNDERRUN_BENCH_FILE=/tmp/vllm412.json \
//	  go test ./cmd/underrun -run '^$' -bench AnalyzeVsPythonJSON -benchtime 1x
func BenchmarkAnalyzeVsPythonJSON(b *testing.B) {
	python, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not installed: nothing to compare with")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build underrun with")
	}
	bin := filepath.Join(b.TempDir(), "underrun")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	path, itls := benchVLLMFile(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	var analyze, plain, py, analyzeCPU, plainCPU, pyCPU time.Duration
	var analyzeRSS, plainRSS, pyRSS int64
	for b.Loop() {
		w, rss, cpu := child(b, bin, "analyze", "--report", "json", path)
		analyze, analyzeRSS, analyzeCPU = analyze+w, max(analyzeRSS, rss), analyzeCPU+cpu
		w, rss, cpu = child(b, bin, "analyze", "--report", "json", "--max-tpot=false", path)
		plain, plainRSS, plainCPU = plain+w, max(plainRSS, rss), plainCPU+cpu
		w, rss, cpu = child(b, python, "-c", "import json, sys; json.load(open(sys.argv[1]))", path)
		py, pyRSS, pyCPU = py+w, max(pyRSS, rss), pyCPU+cpu
	}
	// CPU time too: on a shared machine it moves less than wall time
	b.ReportMetric(analyzeCPU.Seconds()/float64(b.N), "analyze-cpu-s")
	b.ReportMetric(plainCPU.Seconds()/float64(b.N), "no-max-tpot-cpu-s")
	b.ReportMetric(pyCPU.Seconds()/float64(b.N), "python-cpu-s")
	b.ReportMetric(analyze.Seconds()/float64(b.N), "analyze-s")
	b.ReportMetric(plain.Seconds()/float64(b.N), "no-max-tpot-s")
	b.ReportMetric(py.Seconds()/float64(b.N), "python-s")
	b.ReportMetric(analyze.Seconds()/py.Seconds(), "analyze/python")
	b.ReportMetric(analyze.Seconds()/plain.Seconds(), "analyze/no-max-tpot")
	b.ReportMetric(float64(analyzeRSS)/1e6, "analyze-peak-MB")
	b.ReportMetric(float64(plainRSS)/1e6, "no-max-tpot-peak-MB")
	b.ReportMetric(float64(pyRSS)/1e6, "python-peak-MB")
	b.ReportMetric(float64(itls), "itls")
	b.ReportMetric(float64(analyzeRSS)/float64(max(itls, 1)), "analyze-B/itl")
}

// BenchmarkAnalyzeVLLM runs `analyze --report json` inside the test
// process on the generated vLLM file (benchVLLMFile), with and without
// the per-turn largest safe TPOT, for profiles (-cpuprofile, -memprofile).
func BenchmarkAnalyzeVLLM(b *testing.B) {
	path, _ := benchVLLMFile(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"default", []string{"analyze", "--report", "json", path}},
		{"no-max-tpot", []string{"analyze", "--report", "json", "--max-tpot=false", path}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				var errOut bytes.Buffer
				code := runEnv(b.Context(), &env{stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: &errOut}, bc.args)
				if code != exitOK && code != exitFail {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
			}
		})
	}
}

// TestAnalyzeMemoryPerITL runs `analyze --report json` as its own process
// on two generated vLLM files, of about 1.5 and 64 MB, and bounds what
// its peak memory grows by per ITL: 8 bytes for the one pool of them
// (vLLM's floats of seconds, exact; the report's figures read them from
// there), with a margin for the rest of each request (its TTFT, TPOT and
// E2E, about 0.2 bytes per ITL here) and the measurement; nothing else
// may grow with the file. It grew by 45 bytes per ITL before the pools,
// by 13 with a pool each for the report and for vLLM's figures.
func TestAnalyzeMemoryPerITL(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("measures the memory of a 64 MB analysis; the race detector multiplies it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the pools stay on the heap here")
	}
	// not parallel: a busy machine lets the child's heap outgrow its goal
	peak := func(requests int) (int64, int) {
		path := filepath.Join(t.TempDir(), "result.json")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		itls, err := writeVLLMDetailed(f, requests, false, 7)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "analyze", "--report", "json", path)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		peak, err := execPeak(t, cmd)
		if code := cmd.ProcessState.ExitCode(); code != exitOK && code != exitFail {
			t.Fatalf("exit %d (%v): %s", code, err, stderr.String())
		}
		return peak, itls
	}
	small, smallITLs := peak(300)
	large, largeITLs := peak(12000)
	perITL := float64(large-small) / float64(largeITLs-smallITLs)
	t.Logf("peak %d kB for %d ITLs, %d kB for %d: %.2f bytes per ITL", small>>10, smallITLs, large>>10, largeITLs, perITL)
	if perITL > 10.5 {
		t.Errorf("peak memory grows by %.2f bytes per ITL; want at most 10.5 (8 for the pool, and the margin)", perITL)
	}
}
