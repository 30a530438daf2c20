package tts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopxl/beep/v2"
	"github.com/gopxl/beep/v2/flac"
	"github.com/gopxl/beep/v2/mp3"
)

// MaxRecording is the longest FLAC or MP3 recording DecodeRecording
// decodes: a compressed file of a few kilobytes can hold hours of
// silence, and its samples are kept in memory.
const MaxRecording = 4 * time.Hour

// ErrRecordingFormat reports a recording DecodeRecording cannot read.
var ErrRecordingFormat = errors.New("unreadable recording")

// DecodeRecording decodes a recording of speech, telling its format from
// its content: WAV (as DecodeWAVChannel), FLAC and MP3 (by beep's
// decoders, mewkiz/flac and hajimehoshi/go-mp3), keeping one channel
// (numbered from 1; MixChannels for the mean of them all). beep reads FLAC
// and MP3 as one or two channels.
func DecodeRecording(b []byte, channel int) (Audio, error) {
	switch {
	case len(b) >= 4 && string(b[:4]) == "RIFF":
		return DecodeWAVChannel(b, channel)
	case len(b) >= 4 && string(b[:4]) == "fLaC":
		audio, err := flacAudioOnly(b)
		if err != nil {
			return Audio{}, err
		}
		// a FLAC frame holds at most 65535 samples in no fewer than 8 bytes
		return decodeStream("flac", audio, channel, 8192, func(r io.Reader) (beep.StreamSeekCloser, beep.Format, error) { return flac.Decode(r) })
	case isMP3(b):
		// an MPEG audio frame holds 1152 samples in no fewer than 24 bytes
		return decodeStream("mp3", b, channel, 48, func(r io.Reader) (beep.StreamSeekCloser, beep.Format, error) {
			return mp3.Decode(io.NopCloser(r))
		})
	}
	return Audio{}, fmt.Errorf("%w: not WAV (RIFF), FLAC (fLaC) or MP3 (an ID3 tag or an MPEG audio frame) at its start (%d bytes)", ErrRecordingFormat, len(b))
}

// flacAudioOnly returns the FLAC file b with its STREAMINFO and audio
// frames only: the other metadata blocks (tags, pictures, cue sheets, seek
// tables) say nothing about the sound, and the decoder allocates what
// their length fields claim before it checks them against the file.
func flacAudioOnly(b []byte) ([]byte, error) {
	off, n := 4, 0
	var info []byte
	for last := false; !last; n++ {
		if off+4 > len(b) {
			return nil, fmt.Errorf("%w: flac: the file ends inside metadata block %d's header (byte %d)", ErrRecordingFormat, n+1, off)
		}
		h := b[off]
		last = h&0x80 != 0
		kind, size := h&0x7f, int(b[off+1])<<16|int(b[off+2])<<8|int(b[off+3])
		switch {
		case off+4+size > len(b):
			return nil, fmt.Errorf("%w: flac: metadata block %d (type %d, byte %d) claims %d bytes, past the end of the file", ErrRecordingFormat, n+1, kind, off, size)
		case n == 0 && (kind != 0 || size != 34):
			return nil, fmt.Errorf("%w: flac: the first metadata block is of type %d and %d bytes, want STREAMINFO (type 0, 34 bytes)", ErrRecordingFormat, kind, size)
		case kind == 127:
			return nil, fmt.Errorf("%w: flac: metadata block %d (byte %d) has the invalid type 127", ErrRecordingFormat, n+1, off)
		}
		if n == 0 {
			info = b[off+4 : off+4+size]
		}
		off += 4 + size
	}
	out := make([]byte, 0, 8+len(info)+len(b)-off)
	out = append(out, "fLaC"...)
	out = append(out, 0x80, 0, 0, byte(len(info)))
	out = append(out, info...)
	return append(out, b[off:]...), nil
}

// isMP3 reports whether b starts as an MP3 file: an ID3v2 tag, or the
// sync word of an MPEG audio frame.
func isMP3(b []byte) bool {
	if len(b) >= 3 && string(b[:3]) == "ID3" {
		return true
	}
	return len(b) >= 2 && b[0] == 0xff && b[1]&0xe0 == 0xe0
}

// decodeStream reads a whole stream of a beep decoder into one channel.
// The decoders are third-party code fed untrusted bytes: a panic inside
// one is the file's fault and is returned as an error, and a stream of
// more than perByte samples per byte of the file (more than its format can
// hold) is a decoder gone wrong on it.
func decodeStream(kind string, b []byte, channel, perByte int, decode func(io.Reader) (beep.StreamSeekCloser, beep.Format, error)) (a Audio, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, err = Audio{}, fmt.Errorf("%w: %s: the decoder failed on the file: %v", ErrRecordingFormat, kind, p)
		}
	}()
	s, f, err := decode(bytes.NewReader(b))
	if err != nil {
		return Audio{}, fmt.Errorf("%w: %s: %w", ErrRecordingFormat, kind, err)
	}
	defer s.Close()
	rate := int(f.SampleRate)
	switch {
	case rate <= 0 || rate > 768000:
		return Audio{}, fmt.Errorf("%w: %s: sample rate %d", ErrRecordingFormat, kind, rate)
	case f.NumChannels < 1 || f.NumChannels > 2:
		return Audio{}, fmt.Errorf("%w: %s: %d channels, want 1 or 2", ErrRecordingFormat, kind, f.NumChannels)
	case channel < MixChannels || channel > f.NumChannels:
		return Audio{}, fmt.Errorf("%w: %s: no channel %d: the file has %d", ErrRecordingFormat, kind, channel, f.NumChannels)
	}
	limit := min(int(MaxRecording.Seconds())*rate, perByte*len(b))
	var out []float32
	buf := make([][2]float64, 4096)
	for {
		n, ok := s.Stream(buf)
		for _, v := range buf[:n] {
			switch {
			case channel == 1 || f.NumChannels == 1:
				out = append(out, float32(v[0]))
			case channel == 2:
				out = append(out, float32(v[1]))
			default:
				out = append(out, float32((v[0]+v[1])/2))
			}
		}
		if len(out) > limit {
			return Audio{}, fmt.Errorf("%w: %s: more than %d samples (%v at %d Hz, or %d per byte of the file)", ErrRecordingFormat, kind, limit, MaxRecording, rate, perByte)
		}
		if !ok || n == 0 { // a decoder that streams nothing more has ended
			break
		}
	}
	if err := s.Err(); err != nil {
		return Audio{}, fmt.Errorf("%w: %s: %w", ErrRecordingFormat, kind, err)
	}
	return Audio{Samples: out, Rate: rate}, nil
}
