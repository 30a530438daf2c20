package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gopxl/beep/v2"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// MaxSpeechInput is the longest input the mock's speech endpoint takes,
// in characters: OpenAI's limit.
const MaxSpeechInput = 4096

type speechRequest struct {
	Model          string   `json:"model"`
	Input          *string  `json:"input"`
	Voice          any      `json:"voice"`
	ResponseFormat string   `json:"response_format"`
	Speed          *float64 `json:"speed"`
	StreamFormat   string   `json:"stream_format"`
}

// serveSpeech answers POST /v1/audio/speech: m.Speech speaks the input,
// and its audio goes out as it comes, each piece written and flushed.
func (m *Mock) serveSpeech(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	if m.Speech == nil {
		writeError(w, http.StatusNotFound, "this mock serves no speech: start it with --tts")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	var req speechRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "request body is not a JSON object: "+err.Error())
		return
	}
	format := req.ResponseFormat
	if format == "" {
		format = "wav"
	}
	switch {
	case req.Input == nil || *req.Input == "":
		writeError(w, http.StatusBadRequest, `speech request without "input"`)
		return
	case utf8.RuneCountInString(*req.Input) > MaxSpeechInput:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`"input" has %d characters, at most %d are taken`, utf8.RuneCountInString(*req.Input), MaxSpeechInput))
		return
	case format != "pcm" && format != "wav":
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`response_format %q: the mock speaks "pcm" (16-bit, %d Hz) and "wav"`, format, DefaultSpeechRate))
		return
	case req.StreamFormat != "" && req.StreamFormat != "audio" && req.StreamFormat != "sse":
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`stream_format %q: want "audio" or "sse"`, req.StreamFormat))
		return
	case req.Speed != nil && !(*req.Speed >= 0.25 && *req.Speed <= 4):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("speed %v: want 0.25 to 4", *req.Speed))
		return
	}
	ctx := r.Context()
	if m.SpeechLatency > 0 {
		t := time.NewTimer(time.Until(arrived.Add(m.SpeechLatency)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	s := &speechAnswer{w: w, format: format, sse: req.StreamFormat == "sse"}
	err = s.serve(ctx, m.Speech, *req.Input)
	ev := m.Logger.Info()
	if err != nil {
		ev = m.Logger.Warn().Str("error", err.Error())
	}
	ev.Str("event", "mock_speech").Int("chars", utf8.RuneCountInString(*req.Input)).Str("format", format).
		Float64("first_byte_ms", pipeline.Millis(s.first.Sub(arrived))).Float64("audio_ms", s.audioMs()).
		Float64("duration_ms", pipeline.Millis(time.Since(arrived))).Msg("mock_speech")
	if s.broken {
		// the stream broke off: cut the connection, as a real server whose
		// synthesis fails mid-stream does, so that the client sees it
		panic(http.ErrAbortHandler)
	}
}

// speechAnswer writes one speech response.
type speechAnswer struct {
	w       http.ResponseWriter
	f       http.Flusher
	format  string
	sse     bool
	rate    int // of the audio written
	samples int64
	first   time.Time
	broken  bool
	buf     []byte
}

func (s *speechAnswer) audioMs() float64 {
	if s.rate == 0 {
		return 0
	}
	return float64(s.samples) * 1000 / float64(s.rate)
}

// serve synthesizes text and streams its audio.
func (s *speechAnswer) serve(ctx context.Context, synth stream.Synthesizer, text string) error {
	f, ok := s.w.(http.Flusher)
	if !ok {
		writeError(s.w, http.StatusInternalServerError, "the server cannot stream")
		return errors.New("response writer cannot flush")
	}
	s.f = f
	u, err := synth.Synthesize(ctx, text)
	if err != nil {
		writeError(s.w, http.StatusInternalServerError, err.Error())
		return err
	}
	defer u.Close()
	// the first piece before the headers: a synthesis that fails at once
	// is an HTTP error, not a broken stream
	first, err := u.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		writeError(s.w, http.StatusInternalServerError, err.Error())
		return err
	}
	s.rate = first.Rate
	if s.rate <= 0 {
		s.rate = DefaultSpeechRate
	}
	var resampled beep.Streamer
	if s.format == "pcm" && s.rate != DefaultSpeechRate {
		// OpenAI's pcm is 24 kHz, and clients take it so
		src := &pieceStreamer{u: u, pending: first.Samples, err: err}
		resampled = beep.Resample(4, beep.SampleRate(s.rate), beep.SampleRate(DefaultSpeechRate), src)
		s.rate = DefaultSpeechRate
	}
	h := s.w.Header()
	switch {
	case s.sse:
		h.Set("Content-Type", "text/event-stream")
	case s.format == "pcm":
		h.Set("Content-Type", "audio/pcm")
	default:
		h.Set("Content-Type", "audio/wav")
	}
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	if s.format == "wav" {
		if err := s.write(streamingWAVHeader(s.rate)); err != nil {
			return err
		}
	}
	if resampled != nil {
		buf := make([][2]float64, 1024)
		for {
			n, ok := resampled.Stream(buf)
			if err := s.samplesOut(buf[:n]); err != nil {
				return err
			}
			if !ok {
				break
			}
		}
		err = resampled.Err()
	} else {
		piece := first
		for err == nil {
			if err = s.piece(piece.Samples); err != nil {
				return err
			}
			piece, err = u.Next()
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		s.broken = true
		return err
	}
	if s.sse {
		usage := tokens.Count(text)
		return s.writeRaw(fmt.Appendf(nil, "data: {\"type\":\"speech.audio.done\",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d}}\n\n",
			usage, s.samples/int64(max(1, s.rate/50)), usage+int(s.samples/int64(max(1, s.rate/50)))))
	}
	return nil
}

// piece writes samples as 16-bit PCM.
func (s *speechAnswer) piece(samples []float32) error {
	if len(samples) == 0 {
		return nil
	}
	b := s.buf[:0]
	for _, v := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(pcm16(float64(v))))
	}
	s.buf = b
	s.samples += int64(len(samples))
	return s.write(b)
}

// samplesOut writes resampled samples as 16-bit PCM.
func (s *speechAnswer) samplesOut(buf [][2]float64) error {
	if len(buf) == 0 {
		return nil
	}
	b := s.buf[:0]
	for _, v := range buf {
		b = binary.LittleEndian.AppendUint16(b, uint16(pcm16(v[0])))
	}
	s.buf = b
	s.samples += int64(len(buf))
	return s.write(b)
}

// pcm16 is a sample as a 16-bit integer: x 32768, so that 16-bit audio
// read as v/32768 goes back exactly.
func pcm16(v float64) int16 {
	return int16(max(-32768, min(32767, math.Round(v*32768))))
}

// write sends audio bytes, as they are or in a speech.audio.delta event.
func (s *speechAnswer) write(b []byte) error {
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if !s.sse {
		return s.writeRaw(b)
	}
	ev := make([]byte, 0, len(b)*4/3+64)
	ev = append(ev, `data: {"type":"speech.audio.delta","audio":"`...)
	ev = base64.StdEncoding.AppendEncode(ev, b)
	ev = append(ev, "\"}\n\n"...)
	return s.writeRaw(ev)
}

func (s *speechAnswer) writeRaw(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// streamingWAVHeader is the header of a 16-bit mono WAV stream whose
// length is not known: its sizes say 0xFFFFFFFF, as OpenAI's stream does.
func streamingWAVHeader(rate int) []byte {
	b := make([]byte, 0, 44)
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, 0xFFFFFFFF)
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*2))
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	return binary.LittleEndian.AppendUint32(b, 0xFFFFFFFF)
}

// pieceStreamer pulls an Utterance's pieces as a beep.Streamer: Stream
// waits until the buffer is full or the audio has ended, as the
// resampler needs.
type pieceStreamer struct {
	u       stream.Utterance
	pending []float32
	err     error // io.EOF at the end
}

func (p *pieceStreamer) Stream(buf [][2]float64) (int, bool) {
	n := 0
	for n < len(buf) {
		if len(p.pending) == 0 {
			if p.err != nil {
				break
			}
			piece, err := p.u.Next()
			p.pending, p.err = piece.Samples, err
			continue
		}
		k := copy2(buf[n:], p.pending)
		p.pending = p.pending[k:]
		n += k
	}
	return n, n > 0
}

func copy2(dst [][2]float64, src []float32) int {
	n := min(len(dst), len(src))
	for i := range n {
		v := float64(src[i])
		dst[i] = [2]float64{v, v}
	}
	return n
}

// Err returns the synthesis error, if the audio ended in one.
func (p *pieceStreamer) Err() error {
	if errors.Is(p.err, io.EOF) {
		return nil
	}
	return p.err
}
