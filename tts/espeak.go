package tts

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
