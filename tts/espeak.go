package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gopxl/beep/v2"
	"github.com/gopxl/beep/v2/wav"
)

// EspeakProgram is the program Espeak runs.
const EspeakProgram = "espeak-ng"

// Espeak is the espeak-ng synthesizer, run as a process per utterance:
// the text goes to its standard input, the WAV it writes to standard
// output is decoded with beep. A text that ends mid-sentence (no final
// punctuation) is spoken without espeak-ng's utterance-final pause (-z),
// as a streaming synthesizer fed word by word continues; one that ends a
// clause or sentence keeps its pause.
type Espeak struct {
	// Path is the program (default: espeak-ng found on PATH).
	Path string
	// Voice is espeak-ng's -v voice name (empty: its default).
	Voice string
	// Speed is espeak-ng's -s rate in words per minute (0: its default,
	// 175).
	Speed int
}

// NewEspeak returns espeak-ng found on PATH, or an error wrapping
// ErrNoEngine.
func NewEspeak() (*Espeak, error) {
	path, err := exec.LookPath(EspeakProgram)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoEngine, EspeakProgram, err)
	}
	return &Espeak{Path: path}, nil
}

// Name returns "espeak-ng".
func (e *Espeak) Name() string { return EspeakProgram }

// Speech returns true.
func (e *Espeak) Speech() bool { return true }

// Synthesize speaks text as one utterance.
func (e *Espeak) Synthesize(ctx context.Context, text string) (Audio, error) {
	path := e.Program()
	args := append([]string{"--stdout", "--stdin", "-b", "1"}, e.VoiceArgs()...)
	if !EndsPhrase(text) {
		args = append(args, "-z")
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(text)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Audio{}, ctx.Err()
		}
		return Audio{}, fmt.Errorf("%w: %s %q: %w: %s", ErrEngine, EspeakProgram, clip(text), err, strings.TrimSpace(errOut.String()))
	}
	a, err := DecodeWAV(out.Bytes())
	if err != nil {
		return Audio{}, fmt.Errorf("%w: %s %q: %w", ErrEngine, EspeakProgram, clip(text), err)
	}
	return a, nil
}

// VoiceArgs returns espeak-ng's arguments for Voice and Speed.
func (e *Espeak) VoiceArgs() []string {
	var args []string
	if e.Voice != "" {
		args = append(args, "-v", e.Voice)
	}
	if e.Speed > 0 {
		args = append(args, "-s", strconv.Itoa(e.Speed))
	}
	return args
}

// Program returns the program Synthesize runs: Path, or EspeakProgram.
func (e *Espeak) Program() string {
	if e.Path == "" {
		return EspeakProgram
	}
	return e.Path
}

// EndsPhrase reports whether text, trailing space and closing quotes
// aside, ends with sentence or clause punctuation: espeak-ng then keeps
// its pause after it.
func EndsPhrase(text string) bool {
	for len(text) > 0 {
		r, size := utf8.DecodeLastRuneInString(text)
		switch {
		case unicode.IsSpace(r), r == '"', r == '\'', r == ')', r == '”', r == '’', r == ']':
			text = text[:len(text)-size]
			continue
		}
		return IsSentenceEnd(r) || isClauseEnd(r)
	}
	return false
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:37] + "..."
}

// DecodeWAV decodes a mono or stereo PCM WAV (stereo is mixed down). A
// streamed WAV whose header gives no real length (as espeak-ng writes to a
// pipe) is read to its end.
func DecodeWAV(b []byte) (Audio, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return Audio{}, fmt.Errorf("decode wav: not a RIFF/WAVE file (%d bytes)", len(b))
	}
	// Patch the sizes that a streaming writer left open, so that the
	// decoder stops at the real end of the data.
	fixed := bytes.Clone(b)
	binary.LittleEndian.PutUint32(fixed[4:8], uint32(len(fixed)-8))
	hasFormat := false
	for off := 12; off+8 <= len(fixed); {
		id := string(fixed[off : off+4])
		size := int(binary.LittleEndian.Uint32(fixed[off+4 : off+8]))
		if id == "fmt " {
			if err := checkFormat(fixed[off+8:], size); err != nil {
				return Audio{}, err
			}
			hasFormat = true
		}
		if id == "data" {
			if !hasFormat {
				return Audio{}, fmt.Errorf("decode wav: data chunk at byte %d before the format chunk", off)
			}
			if rest := len(fixed) - off - 8; size > rest || size < 0 {
				binary.LittleEndian.PutUint32(fixed[off+4:off+8], uint32(rest))
			}
			break
		}
		if size < 0 || off+8+size > len(fixed) {
			return Audio{}, fmt.Errorf("decode wav: chunk %q at byte %d runs past the end", id, off)
		}
		off += 8 + size + size%2
	}
	s, format, err := wav.Decode(bytes.NewReader(fixed))
	if err != nil {
		return Audio{}, fmt.Errorf("decode wav: %w", err)
	}
	defer s.Close()
	return readStreamer(s, format, s.Len())
}

// checkFormat checks a PCM format chunk before beep reads it: beep trusts
// the header.
func checkFormat(body []byte, size int) error {
	if size < 16 || len(body) < 16 {
		return fmt.Errorf("decode wav: format chunk of %d bytes, want at least 16", size)
	}
	kind := binary.LittleEndian.Uint16(body[0:])
	channels := int(binary.LittleEndian.Uint16(body[2:]))
	rate := binary.LittleEndian.Uint32(body[4:])
	frame := int(binary.LittleEndian.Uint16(body[12:]))
	bits := int(binary.LittleEndian.Uint16(body[14:]))
	switch {
	case kind != 1 && kind != 0xfffe:
		return fmt.Errorf("decode wav: format %#x, want PCM", kind)
	case channels < 1 || channels > 8:
		return fmt.Errorf("decode wav: %d channels, want 1 to 8", channels)
	case bits != 8 && bits != 16 && bits != 24:
		return fmt.Errorf("decode wav: %d bits per sample, want 8, 16 or 24", bits)
	case frame != channels*bits/8:
		return fmt.Errorf("decode wav: %d bytes per frame, want %d channels x %d bits", frame, channels, bits)
	case rate == 0 || rate > 1_000_000:
		return fmt.Errorf("decode wav: sample rate %d", rate)
	}
	return nil
}

// readStreamer reads a beep streamer to its end as mono audio.
func readStreamer(s beep.Streamer, format beep.Format, hint int) (Audio, error) {
	a := Audio{Rate: int(format.SampleRate), Samples: make([]float32, 0, max(0, hint))}
	buf := make([][2]float64, 1024)
	for {
		n, ok := s.Stream(buf)
		for _, f := range buf[:n] {
			a.Samples = append(a.Samples, float32((f[0]+f[1])/2))
		}
		if !ok || n == 0 {
			break
		}
	}
	if err := s.Err(); err != nil {
		return Audio{}, fmt.Errorf("decode wav: %w", err)
	}
	if a.Rate <= 0 {
		return Audio{}, fmt.Errorf("decode wav: sample rate %d", a.Rate)
	}
	return a, nil
}
