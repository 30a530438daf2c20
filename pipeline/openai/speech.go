package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// Defaults of a Speech client: what OpenAI's speech API takes, in the
// one streamed format every such server offers without a decoder: raw
// 16-bit PCM at 24 kHz.
const (
	DefaultSpeechModel  = "tts-1"
	DefaultSpeechVoice  = "alloy"
	DefaultSpeechFormat = "pcm"
	DefaultSpeechRate   = 24000
	// SpeechPath is the speech endpoint under a server's root.
	SpeechPath = "/v1/audio/speech"
)

// SpeechEndpoint returns the URL of the speech endpoint on the server at
// base: its root, its /v1, or the endpoint itself.
func SpeechEndpoint(base string) (string, error) {
	return endpoint(base, SpeechPath, "/audio/speech")
}

// Speech is a streaming synthesizer behind an OpenAI-compatible
// /v1/audio/speech endpoint: OpenAI, Kokoro-FastAPI, LocalAI, vLLM-Omni,
// `underrun mock --tts`. Each text is one request ({"model", "input",
// "voice", "response_format"}, plus "speed", "stream_format" and Extra when
// set); its audio is read as it arrives: raw 16-bit little-endian PCM at
// Rate ("pcm"), a WAV stream ("wav", any header sizes), or OpenAI's
// server-sent events ("stream_format": "sse": speech.audio.delta events
// of base64 audio in the response format, then speech.audio.done). A WAV
// body is read as WAV whatever format was asked for. Compressed formats
// (mp3, opus, aac, flac) are refused. A Speech is safe for concurrent use.
type Speech struct {
	// BaseURL is the server (see SpeechEndpoint).
	BaseURL string
	// APIKey, when set, is sent as a bearer token; a server that echoes it
	// in an error has it redacted.
	APIKey string
	// Model and Voice are sent as they are (defaults DefaultSpeechModel,
	// DefaultSpeechVoice).
	Model, Voice string
	// Format is the response_format: "pcm" (default) or "wav".
	Format string
	// Rate is the sample rate of "pcm" audio (default 24000, OpenAI's and
	// Kokoro-FastAPI's).
	Rate int
	// Speed, when positive, is sent as "speed".
	Speed float64
	// StreamFormat, when set, is sent as "stream_format" ("audio" or
	// "sse").
	StreamFormat string
	// Extra fields are added to every request body (Kokoro-FastAPI's
	// "stream", "lang_code", ...); they may not replace the ones above.
	Extra map[string]any
	// HTTP is the client to send with (nil: one made by NewHTTPClient).
	HTTP *http.Client
}

var _ stream.Synthesizer = (*Speech)(nil)

// Name returns "speech API at HOST".
func (s *Speech) Name() string {
	if u, err := url.Parse(s.BaseURL); err == nil && u.Host != "" {
		return "speech API at " + u.Host
	}
	return "speech API"
}

func (s *Speech) format() string {
	if s.Format == "" {
		return DefaultSpeechFormat
	}
	return s.Format
}

func (s *Speech) rate() int {
	if s.Rate > 0 {
		return s.Rate
	}
	return DefaultSpeechRate
}

// Body returns the JSON request body for text.
func (s *Speech) Body(text string) ([]byte, error) {
	switch s.format() {
	case "pcm", "wav":
	default:
		return nil, fmt.Errorf("%w: response format %q: want pcm or wav (compressed audio cannot be played as it streams here)", ErrRequest, s.Format)
	}
	switch s.StreamFormat {
	case "", "audio", "sse":
	default:
		return nil, fmt.Errorf("%w: stream format %q: want audio or sse", ErrRequest, s.StreamFormat)
	}
	body := map[string]any{}
	for k, v := range s.Extra {
		body[k] = v
	}
	set := func(k string, v any) error {
		if _, ok := s.Extra[k]; ok {
			return fmt.Errorf("%w: extra field %q would replace the client's own", ErrRequest, k)
		}
		body[k] = v
		return nil
	}
	model, voice := s.Model, s.Voice
	if model == "" {
		model = DefaultSpeechModel
	}
	if voice == "" {
		voice = DefaultSpeechVoice
	}
	errs := []error{set("model", model), set("input", text), set("voice", voice), set("response_format", s.format())}
	if s.Speed > 0 {
		errs = append(errs, set("speed", s.Speed))
	}
	if s.StreamFormat != "" {
		errs = append(errs, set("stream_format", s.StreamFormat))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return json.Marshal(body)
}

func (s *Speech) httpClient() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return defaultSpeechHTTP
}

var defaultSpeechHTTP = &http.Client{Transport: newTransport(false)}

// Synthesize sends text and returns once the response headers are in.
// An HTTP error answer is an error wrapping stream.ErrSynthesis with the
// server's message; a stream that breaks off later fails the Utterance.
func (s *Speech) Synthesize(ctx context.Context, text string) (stream.Utterance, error) {
	body, err := s.Body(text)
	if err != nil {
		return nil, err
	}
	endpoint, err := SpeechEndpoint(s.BaseURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: %w", ErrRequest, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: %s %q: %w", stream.ErrSynthesis, s.Name(), clipText(text), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, trace.MaxErrorBody))
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%w: %s %q: %s", stream.ErrSynthesis, s.Name(), clipText(text), trace.HTTPErrorText(resp.StatusCode, b, s.APIKey))
	}
	u := &speechUtterance{s: s, text: text, body: resp.Body, cancel: cancel, counted: &countingReader{r: resp.Body}}
	if err := u.open(resp.Header.Get("Content-Type")); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// speechUtterance is the audio of one speech response.
type speechUtterance struct {
	s       *Speech
	text    string
	body    io.ReadCloser
	cancel  context.CancelFunc
	counted *countingReader
	reader  *stream.Reader
	samples int
	rate    int
}

// open picks the decoder for the response.
func (u *speechUtterance) open(contentType string) error {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	var src io.Reader = u.counted
	if mt == "text/event-stream" {
		src = &sseAudio{src: u.counted}
	}
	br := bufio.NewReaderSize(src, 64)
	head, _ := br.Peek(4) // a stream that ends here fails in the reader
	switch {
	case string(head) == "RIFF":
		u.reader = stream.NewWAVReader(br)
	case strings.HasPrefix(mt, "audio/") && !isPCMType(mt):
		return fmt.Errorf("%w: %s %q: the server sent %s, not PCM or WAV: ask for response_format pcm or wav", stream.ErrSynthesis, u.s.Name(), clipText(u.text), mt)
	default:
		u.reader = stream.NewPCMReader(br, u.s.rate())
	}
	return nil
}

func isPCMType(mt string) bool {
	switch mt {
	case "audio/pcm", "audio/l16", "audio/raw", "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return true
	}
	return false
}

// Next returns the next piece of audio as it arrives.
func (u *speechUtterance) Next() (stream.Piece, error) {
	p, err := u.reader.Next()
	if err == nil {
		u.samples += len(p.Samples)
		u.rate = p.Rate
		return p, nil
	}
	if errors.Is(err, io.EOF) {
		return stream.Piece{}, io.EOF
	}
	heard := ""
	if u.rate > 0 {
		heard = fmt.Sprintf(", %.0f ms of audio", float64(u.samples)*1000/float64(u.rate))
	}
	return stream.Piece{}, fmt.Errorf("%w: %s %q: the audio stream broke off after %d bytes%s: %w",
		stream.ErrSynthesis, u.s.Name(), clipText(u.text), u.counted.n, heard, err)
}

// Close ends the request.
func (u *speechUtterance) Close() error {
	u.cancel()
	u.body.Close()
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sseAudio reads the audio out of OpenAI's speech event stream: the
// base64 "audio" of every speech.audio.delta event, until
// speech.audio.done; an "error" in an event fails the stream.
type sseAudio struct {
	src    io.Reader
	parser trace.SSEParser
	out    []byte // decoded audio not yet read
	buf    []byte
	done   bool
	err    error
}

func (a *sseAudio) Read(p []byte) (int, error) {
	if a.buf == nil {
		a.buf = make([]byte, readBuf)
	}
	for len(a.out) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		if a.done {
			return 0, io.EOF
		}
		n, err := a.src.Read(a.buf)
		if n > 0 {
			if perr := a.parser.Feed(a.buf[:n], 0, a.event); perr != nil && a.err == nil {
				a.err = perr
			}
		}
		if err != nil && a.err == nil && !a.done {
			if err == io.EOF {
				err = fmt.Errorf("%w: the event stream ended before speech.audio.done", io.ErrUnexpectedEOF)
			}
			a.err = err
		}
	}
	n := copy(p, a.out)
	a.out = a.out[n:]
	return n, nil
}

type speechEvent struct {
	Type  string          `json:"type"`
	Audio string          `json:"audio"`
	Error json.RawMessage `json:"error"`
}

func (a *sseAudio) event(e *trace.SSEEvent) error {
	if e.Comment || a.done {
		return nil
	}
	var ev speechEvent
	if err := json.Unmarshal(e.Data, &ev); err != nil {
		return fmt.Errorf("speech event is not a JSON object: %w", err)
	}
	switch {
	case len(ev.Error) > 0 && string(ev.Error) != "null":
		return fmt.Errorf("error in the speech stream: %s", trace.ErrorMessage(ev.Error))
	case ev.Type == "speech.audio.done":
		a.done = true
	case ev.Type == "speech.audio.delta":
		b, err := base64.StdEncoding.DecodeString(ev.Audio)
		if err != nil {
			return fmt.Errorf("speech.audio.delta: audio is not base64: %w", err)
		}
		a.out = append(a.out, b...)
	}
	return nil
}

func clipText(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:37] + "..."
}
