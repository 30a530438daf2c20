package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// benchSize is the size of the generated benchmark inputs: 64 MiB, or
// UNDERRUN_BENCH_MB mebibytes (try 1024 for the 1 GiB figure).
func benchSize() int64 {
	if v, err := strconv.Atoi(os.Getenv("UNDERRUN_BENCH_MB")); err == nil && v > 0 {
		return int64(v) << 20
	}
	return 64 << 20
}

// benchFile writes a generated input of about benchSize bytes to a file.
func benchFile(b *testing.B, name string, gen func(w *bufio.Writer, size int64)) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	gen(w, benchSize())
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

const benchChunks = 200

func benchText() string {
	return strings.Repeat(" The quick \\\"brown\\\" fox jumps.", benchChunks/6)
}

// genColumnar writes the arrays of one vLLM/SGLang result object.
func genColumnar(w *bufio.Writer, size int64, head string) {
	n := int(size / (benchChunks*22 + 1100))
	w.WriteString(head)
	arr := func(key string, each func(i int)) { testkit.WriteList(w, key, n, each) }
	arr("input_lens", func(i int) { w.WriteString("512") })
	arr("output_lens", func(i int) { w.WriteString(strconv.Itoa(benchChunks + 1)) })
	arr("ttfts", func(i int) { fmt.Fprintf(w, "%.17g", 0.1+float64(i%97)/1000) })
	arr("itls", func(i int) {
		w.WriteByte('[')
		for k := range benchChunks {
			if k > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(w, "%.17g", 0.0201+float64((i+k)%13)/10000)
		}
		w.WriteByte(']')
	})
	arr("start_times", func(i int) { fmt.Fprintf(w, "%.17g", 1000+float64(i)/10) })
	arr("generated_texts", func(i int) { w.WriteString(`"` + benchText() + `"`) })
	arr("errors", func(i int) { w.WriteString(`""`) })
	w.WriteString(`, "mean_ttft_ms": 148.0, "p99_itl_ms": 21.5}`)
}

func genVLLM(w *bufio.Writer, size int64) {
	genColumnar(w, size, `{"date": "20261202-101500", "backend": "vllm", "tokenizer_id": "m", "completed": 1`)
}

func genSGLang(w *bufio.Writer, size int64) {
	for range 2 {
		genColumnar(w, size/2, `{"backend": "sglang", "total_output_tokens_retokenized": 1, "mean_e2e_latency_ms": 1.0`)
		w.WriteByte('\n')
	}
}

func genAIPerf(w *bufio.Writer, size int64) {
	var written int64
	for i := 0; written < size; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"metadata": {"session_num": %d, "x_request_id": "req-%d", "x_correlation_id": "c-%d", "conversation_id": "conv", "turn_index": 0, "request_start_ns": %d, "request_ack_ns": %d, "request_end_ns": %d, "worker_id": "worker_1", "record_processor_id": "rp_1", "benchmark_phase": "profiling", "was_cancelled": false, "cancellation_time_ns": null}, "metrics": {"input_sequence_length": {"value": 512, "unit": "tokens"}, "time_to_first_token": {"value": 120.512345, "unit": "ms"}, "request_latency": {"value": 4200.5, "unit": "ms"}, "output_token_count": {"value": %d, "unit": "tokens"}, "reasoning_token_count": {"value": 20, "unit": "tokens"}, "inter_chunk_latency": {"value": [`,
			i, i, i, 1764669600000000000+int64(i)*1e6, 1764669600000000000+int64(i)*1e6+5e7, 1764669600000000000+int64(i)*1e6+4e9, benchChunks+1)
		for k := range benchChunks {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%.6f", 20.1+float64((i+k)%13)/10)
		}
		b.WriteString(`], "unit": "ms"}, "output_sequence_length": {"value": 221, "unit": "tokens"}, "inter_token_latency": {"value": 20.5, "unit": "ms"}}, "error": null}` + "\n")
		n, _ := w.WriteString(b.String())
		written += int64(n)
	}
}

func genGenAIPerf(w *bufio.Writer, size int64) {
	w.WriteString(`{"experiments": [{"experiment": {"mode": "concurrency", "value": 8}, "requests": [`)
	var written int64
	for i := 0; written < size; i++ {
		var b strings.Builder
		if i > 0 {
			b.WriteString(", ")
		}
		start := 1764669600000000000 + int64(i)*1e6
		fmt.Fprintf(&b, `{"timestamp": %d, "request_inputs": {"payload": "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stream\": true}"}, "response_timestamps": [`, start)
		for k := range benchChunks {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(start+1e8+int64(k)*2e7, 10))
		}
		b.WriteString(`], "response_outputs": [`)
		for k := range benchChunks {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"response": "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764669600,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"finish_reason\":null}]}\n\n"}`, k)
		}
		b.WriteString(`]}`)
		n, _ := w.WriteString(b.String())
		written += int64(n)
	}
	w.WriteString(`]}], "version": "0.0.0"}`)
}

// benchRead reads the file in format once per iteration, reporting MB/s
// and the peak heap in use while reading (sampled every 100 turns).
func benchRead(b *testing.B, path, format string) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var peak uint64
	var ms runtime.MemStats
	runtime.GC()
	cpu0 := cpuTime()
	loops := 0
	for b.Loop() {
		loops++
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		dec, err := Open(f, path, format)
		if err != nil {
			b.Fatal(err)
		}
		turns := 0
		for {
			_, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if turns++; turns%100 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
		f.Close()
		if turns == 0 {
			b.Fatal("no turns")
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	// the machine may be shared: throughput per second of CPU used too
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(st.Size())*float64(loops)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkVLLMReader(b *testing.B) {
	benchRead(b, benchFile(b, "result.json", genVLLM), "")
}

func BenchmarkSGLangReader(b *testing.B) {
	benchRead(b, benchFile(b, "result.jsonl", genSGLang), "")
}

func BenchmarkAIPerfReader(b *testing.B) {
	benchRead(b, benchFile(b, "profile_export.jsonl", genAIPerf), "")
}

func BenchmarkGenAIPerfReader(b *testing.B) {
	benchRead(b, benchFile(b, "profile_export.json", genGenAIPerf), "")
}

// BenchmarkNativeReaderFile reads a native trace from a file, as the tool
// readers above are measured.
func BenchmarkNativeReaderFile(b *testing.B) {
	benchRead(b, benchFile(b, "trace.jsonl", func(w *bufio.Writer, size int64) {
		w.Write(benchTrace(int(size)))
	}), "")
}
