package tts

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of the voice model. The rate is an articulation rate: pauses at
// punctuation come on top of it. 184 words per minute with these pauses
// speaks ordinary assistant text (the built-in corpus) at 177-178 words
// per minute including the pauses: the rate people hear from hosted
// neural voices (OpenAI's six voices measured 175.8-178.8 wpm at default
// speed on the Grandfather and Rainbow passages, community.openai.com
// thread 657893) and espeak-ng's default of 175.
const (
	DefaultWPM           = 184.0
	DefaultWordOnset     = 0.35
	DefaultCommaPause    = 150 * time.Millisecond
	DefaultSentencePause = 350 * time.Millisecond
	// TokensPerWord is the usual number of LLM tokens per English word; it
	// sets how long a token without text is spoken.
	TokensPerWord = 1.33
	// averageWordLetters is the mean length of an English word in letters.
	averageWordLetters = 4.7
)

// The range of a voice's parameters. Outside it no one speaks: a rate of
// a few words a year or a pause of a century is a typo, and the engine,
// which counts audio in nanoseconds and plays it frame by frame, would
// overflow or run for ever on it. A voice file or flag past them is
// refused, naming the field.
const (
	// MinWPM and MaxWPM bound the articulation rate, far below and above
	// any voice (people speak 100-250 words a minute, sped-up TTS 500).
	MinWPM, MaxWPM = 10.0, 2000.0
	// MaxPause bounds the pause after a comma or a sentence.
	MaxPause = time.Minute
	// MaxTokenAudio bounds how long one token without text is spoken.
	MaxTokenAudio = 10 * time.Second
)

// ErrVoice reports a voice whose parameters cannot describe speech.
var ErrVoice = errors.New("invalid voice")

// Voice turns text into seconds of audio. Each word costs a fixed onset plus
// a share per letter, so long words take longer than short ones; commas,
// semicolons and colons add CommaPause, sentence-final punctuation adds
// SentencePause. The model is additive: the audio of a text equals the sum
// of the audio of its pieces, however the text is chunked.
type Voice struct {
	// Name labels the voice in reports ("model" for the built-in estimate,
	// or the engine a profile was calibrated against).
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// WPM is the articulation rate in words per minute, pauses excluded.
	WPM float64 `json:"wpm" yaml:"wpm"`
	// WordOnset is the fraction of an average word's time that every word
	// costs regardless of its length (0..1).
	WordOnset float64 `json:"word_onset" yaml:"word_onset"`
	// CommaPause is the pause after , ; : and dashes.
	CommaPause time.Duration `json:"comma_pause_ns" yaml:"comma_pause"`
	// SentencePause is the pause after . ! ? and their CJK forms.
	SentencePause time.Duration `json:"sentence_pause_ns" yaml:"sentence_pause"`
	// TokenAudio is how long one token without text is spoken; zero means
	// the duration of an average word divided by TokensPerWord.
	TokenAudio time.Duration `json:"token_audio_ns,omitempty" yaml:"token_audio,omitempty"`
}

// DefaultVoice returns the built-in voice model: 184 words per minute of
// articulation, about 177 with its pauses.
func DefaultVoice() Voice {
	return Voice{
		Name:          "model",
		WPM:           DefaultWPM,
		WordOnset:     DefaultWordOnset,
		CommaPause:    DefaultCommaPause,
		SentencePause: DefaultSentencePause,
	}
}

// Validate reports the first parameter that is out of range.
func (v Voice) Validate() error {
	switch {
	case !(v.WPM >= MinWPM && v.WPM <= MaxWPM):
		return fmt.Errorf("%w: wpm must be a speaking rate from %v to %v words per minute, got %v", ErrVoice, MinWPM, MaxWPM, v.WPM)
	case !(v.WordOnset >= 0 && v.WordOnset <= 1):
		return fmt.Errorf("%w: word_onset must be between 0 and 1, got %v", ErrVoice, v.WordOnset)
	case v.CommaPause < 0 || v.CommaPause > MaxPause:
		return fmt.Errorf("%w: comma pause must be from 0 to %v, got %v", ErrVoice, MaxPause, v.CommaPause)
	case v.SentencePause < 0 || v.SentencePause > MaxPause:
		return fmt.Errorf("%w: sentence pause must be from 0 to %v, got %v", ErrVoice, MaxPause, v.SentencePause)
	case v.TokenAudio < 0 || v.TokenAudio > MaxTokenAudio:
		return fmt.Errorf("%w: token audio must be from 0 to %v, got %v", ErrVoice, MaxTokenAudio, v.TokenAudio)
	}
	return nil
}

// WordTime is the time an average word takes, pauses excluded.
func (v Voice) WordTime() time.Duration {
	return time.Duration(float64(time.Minute) / v.WPM)
}

// TokenTime is how long one token without text is spoken.
func (v Voice) TokenTime() time.Duration {
	if v.TokenAudio > 0 {
		return v.TokenAudio
	}
	return time.Duration(float64(v.WordTime()) / TokensPerWord)
}

// Meter measures the audio of text that arrives piece by piece. It
// remembers whether the last piece ended inside a word, so a word split
// over two tokens pays its onset once. The zero Meter is not usable; get one
// from Voice.Meter.
type Meter struct {
	onset, letter   time.Duration
	comma, sentence time.Duration
	inWord          bool
}

// Meter returns a Meter for the voice at the start of a turn.
func (v Voice) Meter() Meter {
	word := float64(v.WordTime())
	return Meter{
		onset:    time.Duration(word * v.WordOnset),
		letter:   time.Duration(word * (1 - v.WordOnset) / averageWordLetters),
		comma:    v.CommaPause,
		sentence: v.SentencePause,
	}
}

// Add returns the audio of text spoken after everything added before.
func (m *Meter) Add(text string) time.Duration {
	// counts, not a running sum: the audio is the same integer either way
	var letters, onsets, commas, sentences int
	inWord := 0
	if m.inWord {
		inWord = 1
	}
	for i := 0; i < len(text); {
		b := text[i]
		if b >= utf8.RuneSelf {
			// as Meter.rune
			r, size := utf8.DecodeRuneInString(text[i:])
			i += size
			if isWordRune(r) {
				letters++
				onsets += 1 - inWord
				inWord = 1
				continue
			}
			inWord = 0
			if r == '\'' || r == '’' {
				inWord = 1
			}
			switch {
			case IsSentenceEnd(r):
				sentences++
			case isClauseEnd(r):
				commas++
			}
			continue
		}
		i++
		// without branches: the bits of meterBits
		t := int(meterBits[b])
		letter := t & meterLetter
		letters += letter
		onsets += letter &^ inWord
		sentences += t >> 2 & 1
		commas += t >> 3 & 1
		inWord = t >> 1 & 1
	}
	m.inWord = inWord == 1
	return time.Duration(letters)*m.letter + time.Duration(onsets)*m.onset +
		time.Duration(commas)*m.comma + time.Duration(sentences)*m.sentence
}

// InWord reports whether the text added so far ended inside a word, so
// that a letter added next pays no onset.
func (m *Meter) InWord() bool { return m.inWord }

// WithInWord returns the Meter as it stands after a text that ended inside
// a word (inWord) or not: what InWord said then is all a Meter remembers.
func (m Meter) WithInWord(inWord bool) Meter {
	m.inWord = inWord
	return m
}

// How Meter.Add treats an ASCII character: bits of meterBits.
const (
	meterLetter   = 1 << iota // a letter or digit: audio, and an onset when it starts a word
	meterInWord               // a word goes on after it (a letter or an apostrophe)
	meterSentence             // sentence-final punctuation
	meterClause               // a comma, semicolon or colon
)

// meterBits classifies the ASCII characters as Meter.rune does.
var meterBits = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		switch {
		case isWordRune(r):
			t[r] = meterLetter | meterInWord
		case r == '\'':
			t[r] = meterInWord
		case IsSentenceEnd(r):
			t[r] = meterSentence
		case isClauseEnd(r):
			t[r] = meterClause
		}
	}
	return t
}()

// Duration returns the audio of a whole text spoken on its own.
func (v Voice) Duration(text string) time.Duration {
	m := v.Meter()
	return m.Add(text)
}

func (m *Meter) rune(r rune) time.Duration {
	if isWordRune(r) {
		d := m.letter
		if !m.inWord {
			d += m.onset
		}
		m.inWord = true
		return d
	}
	m.inWord = r == '\'' || r == '’' // don't, it's: one word
	switch {
	case IsSentenceEnd(r):
		return m.sentence
	case isClauseEnd(r):
		return m.comma
	}
	return 0
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// IsSentenceEnd reports whether r ends a sentence: . ! ? and their CJK and
// full-width forms, and the ellipsis.
func IsSentenceEnd(r rune) bool {
	switch r {
	case '.', '!', '?', '。', '！', '？', '…':
		return true
	}
	return false
}

// IsClauseEnd reports whether r ends a clause: , ; : the dashes and their
// CJK and full-width forms (the voice pauses CommaPause after it).
func IsClauseEnd(r rune) bool { return isClauseEnd(r) }

func isClauseEnd(r rune) bool {
	switch r {
	case ',', ';', ':', '—', '–', '，', '；', '：', '、':
		return true
	}
	return false
}
