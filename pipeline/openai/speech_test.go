package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts/stream"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// speechServer serves the mock with synth as its speech engine.
func speechServer(t *testing.T, synth stream.Synthesizer, latency time.Duration, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	var h http.Handler = &Mock{Turns: nil, Speech: synth, SpeechLatency: latency}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestSpeechEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct{ base, want string }{
		{"http://h:1", "http://h:1/v1/audio/speech"},
		{"http://h:1/", "http://h:1/v1/audio/speech"},
		{"http://h:1/v1", "http://h:1/v1/audio/speech"},
		{"https://h/api/v1/audio/speech", "https://h/api/v1/audio/speech"},
	}
	for _, tt := range tests {
		if got, err := SpeechEndpoint(tt.base); err != nil || got != tt.want {
			t.Errorf("SpeechEndpoint(%q) = %q, %v; want %q", tt.base, got, err, tt.want)
		}
	}
	for _, bad := range []string{"ftp://h", "h:1", "http://"} {
		if _, err := SpeechEndpoint(bad); !errors.Is(err, ErrRequest) {
			t.Errorf("SpeechEndpoint(%q) = %v, want ErrRequest", bad, err)
		}
	}
}

func TestSpeechBody(t *testing.T) {
	t.Parallel()
	s := &Speech{Speed: 1.25, Extra: map[string]any{"stream": true}}
	b, err := s.Body("Hi.")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input":"Hi.","model":"tts-1","response_format":"pcm","speed":1.25,"stream":true,"voice":"alloy"}`
	if string(b) != want {
		t.Errorf("body %s, want %s", b, want)
	}
	for _, bad := range []*Speech{{Format: "mp3"}, {StreamFormat: "chunks"}, {Extra: map[string]any{"input": "x"}}} {
		if _, err := bad.Body("x"); !errors.Is(err, ErrRequest) {
			t.Errorf("Body of %+v = %v, want ErrRequest", bad, err)
		}
	}
}

// The client keeps the streaming contract against the mock speaking
// espeak-ng, in every format the mock serves.
func TestSpeechAgainstMock(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	srv := speechServer(t, e, 0, nil)
	whole, err := e.Engine.Synthesize(context.Background(), "Hello there, this is a test.")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format, streamFormat string
		rate                 int
	}{{"pcm", "", DefaultSpeechRate}, {"wav", "", whole.Rate}, {"pcm", "sse", DefaultSpeechRate}, {"wav", "sse", whole.Rate}} {
		s := &Speech{BaseURL: srv.URL, Format: c.format, StreamFormat: c.streamFormat}
		streamtest.CheckSynthesizer(t, s)
		u, err := s.Synthesize(context.Background(), "Hello there, this is a test.")
		if err != nil {
			t.Fatal(err)
		}
		pieces, err := streamtest.Drain(u)
		u.Close()
		if err != nil {
			t.Fatalf("%s/%s: %v", c.format, c.streamFormat, err)
		}
		got := streamtest.Samples(pieces)
		want := len(whole.Samples) * c.rate / whole.Rate
		if pieces[0].Rate != c.rate || got < want-8 || got > want+8 {
			t.Errorf("%s/%s: %d samples at %d Hz, want %d at %d", c.format, c.streamFormat, got, pieces[0].Rate, want, c.rate)
		}
		if c.format == "wav" {
			// the audio is espeak-ng's, sample for sample
			var all []float32
			for _, p := range pieces {
				all = append(all, p.Samples...)
			}
			for i := range all {
				if all[i] != whole.Samples[i] {
					t.Fatalf("%s/%s: sample %d = %v, espeak-ng's %v", c.format, c.streamFormat, i, all[i], whole.Samples[i])
				}
			}
		}
	}
}

// slowSynth speaks 100 ms of tone per piece, each piece only when the
// test lets it (release), or fails after fail pieces.
type slowSynth struct {
	release chan struct{}
	fail    int // 0: never
}

func (s *slowSynth) Name() string { return "slow" }

func (s *slowSynth) Synthesize(ctx context.Context, text string) (stream.Utterance, error) {
	return &slowUtterance{s: s, ctx: ctx}, nil
}

type slowUtterance struct {
	s   *slowSynth
	ctx context.Context
	n   int
}

func (u *slowUtterance) Next() (stream.Piece, error) {
	if u.s.fail > 0 && u.n == u.s.fail {
		return stream.Piece{}, errors.New("the voice model crashed")
	}
	if u.n == 3 {
		return stream.Piece{}, io.EOF
	}
	if u.n > 0 && u.s.release != nil {
		select {
		case <-u.s.release:
		case <-u.ctx.Done():
			return stream.Piece{}, u.ctx.Err()
		}
	}
	u.n++
	samples := make([]float32, DefaultSpeechRate/10)
	for i := range samples {
		samples[i] = 0.25
	}
	return stream.Piece{Samples: samples, Rate: DefaultSpeechRate, At: time.Now()}, nil
}

func (u *slowUtterance) Close() error { return nil }

// Audio reaches the client while the server is still synthesizing.
func TestSpeechStreams(t *testing.T) {
	t.Parallel()
	synth := &slowSynth{release: make(chan struct{})}
	srv := speechServer(t, synth, 0, nil)
	for _, f := range []string{"pcm", "wav"} {
		u, err := (&Speech{BaseURL: srv.URL, Format: f}).Synthesize(context.Background(), "Hi.")
		if err != nil {
			t.Fatal(err)
		}
		// the first 100 ms come before the server has made the rest
		n := 0
		for n < DefaultSpeechRate/10 {
			p, err := u.Next()
			if err != nil {
				t.Fatalf("%s: %v after %d samples, before the server went on", f, err, n)
			}
			n += len(p.Samples)
		}
		synth.release <- struct{}{}
		synth.release <- struct{}{}
		rest, err := streamtest.Drain(u)
		u.Close()
		if err != nil || n+streamtest.Samples(rest) != 3*DefaultSpeechRate/10 {
			t.Fatalf("%s: %d samples in all, %v; want %d", f, n+streamtest.Samples(rest), err, 3*DefaultSpeechRate/10)
		}
	}
}

// A slow first byte: the answer waits, and so does its first audio.
func TestSpeechSlowFirstByte(t *testing.T) {
	t.Parallel()
	const latency = 300 * time.Millisecond
	srv := speechServer(t, &slowSynth{}, latency, nil)
	sent := time.Now()
	u, err := (&Speech{BaseURL: srv.URL}).Synthesize(context.Background(), "Hi.")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	p, err := u.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.At.Sub(sent); got < latency {
		t.Errorf("first audio %v after the request, want at least the server's %v", got, latency)
	}
}

// A synthesis that fails mid-stream: the client's audio stream ends in a
// clear error after the audio that came, and the next request works.
func TestSpeechErrorMidStream(t *testing.T) {
	t.Parallel()
	srv := speechServer(t, &slowSynth{fail: 1}, 0, nil)
	s := &Speech{BaseURL: srv.URL}
	u, err := s.Synthesize(context.Background(), "Hi there.")
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := streamtest.Drain(u)
	u.Close()
	if !errors.Is(err, stream.ErrSynthesis) || !strings.Contains(err.Error(), "broke off") || !strings.Contains(err.Error(), `"Hi there."`) {
		t.Errorf("error %v, want ErrSynthesis saying the stream of \"Hi there.\" broke off", err)
	}
	if streamtest.Samples(pieces) != DefaultSpeechRate/10 {
		t.Errorf("%d samples before the error, want the %d sent", streamtest.Samples(pieces), DefaultSpeechRate/10)
	}
	// an HTTP error answer is an error too, with the server's message
	_, err = s.Synthesize(context.Background(), strings.Repeat("x", MaxSpeechInput+1))
	if !errors.Is(err, stream.ErrSynthesis) || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "4096") {
		t.Errorf("error %v, want ErrSynthesis with HTTP 400 and the limit", err)
	}
}

// cutAfter answers with the handler's whole answer announced in
// Content-Length but only half of its body sent: a server that closes
// early.
func cutAfter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
}

func TestSpeechServerClosesEarly(t *testing.T) {
	t.Parallel()
	srv := speechServer(t, &slowSynth{}, 0, cutAfter)
	for _, f := range []string{"pcm", "wav"} {
		u, err := (&Speech{BaseURL: srv.URL, Format: f}).Synthesize(context.Background(), "Hi.")
		if err != nil {
			t.Fatal(err)
		}
		pieces, err := streamtest.Drain(u)
		u.Close()
		if !errors.Is(err, stream.ErrSynthesis) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: error %v, want ErrSynthesis wrapping io.ErrUnexpectedEOF", f, err)
		}
		if n := streamtest.Samples(pieces); n == 0 || n >= 3*DefaultSpeechRate/10 {
			t.Errorf("%s: %d samples before the end, want some, not all", f, n)
		}
	}
}

// Requests go out at once, one per text, and run side by side.
func TestSpeechConcurrent(t *testing.T) {
	t.Parallel()
	srv := speechServer(t, &slowSynth{}, 0, nil)
	s := &Speech{BaseURL: srv.URL}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			u, err := s.Synthesize(context.Background(), "Hi.")
			if err != nil {
				errs <- err
				return
			}
			defer u.Close()
			pieces, err := streamtest.Drain(u)
			if err == nil && streamtest.Samples(pieces) != 3*DefaultSpeechRate/10 {
				err = errors.New("audio missing")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
