package tts

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MixChannels is the channel DecodeWAVChannel mixes every channel into.
const MixChannels = 0

// WAV format codes (the format chunk's first field, or the first two bytes
// of WAVE_FORMAT_EXTENSIBLE's sub-format).
const (
	wavPCM        = 1
	wavFloat      = 3
	wavALaw       = 6
	wavMuLaw      = 7
	wavExtensible = 0xfffe
)

// maxWAVChunk is the largest chunk before the data that the decoder reads
// into memory (the format chunk); any other chunk is skipped unread.
const maxWAVChunk = 1 << 16

// wavFormat is what a format chunk says.
type wavFormat struct {
	code, channels, bits, frame int
	rate                        uint32
}

// DecodeWAV decodes a PCM, float or G.711 WAV, mixing its channels down.
// A streamed WAV whose header gives no real length (as espeak-ng writes to
// a pipe) is read to its end.
func DecodeWAV(b []byte) (Audio, error) { return DecodeWAVChannel(b, MixChannels) }

// DecodeWAVChannel decodes a WAV as DecodeWAV does, keeping one channel
// (numbered from 1; MixChannels for the mean of them all). It reads
// integer PCM of 8, 16, 24 or 32 bits, 32- and 64-bit float, and G.711
// A-law and mu-law, in plain or extensible format chunks, at any rate, as
// OpenRecording does.
func DecodeWAVChannel(b []byte, channel int) (Audio, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return Audio{}, fmt.Errorf("%w: wav: not a RIFF/WAVE file (%d bytes)", ErrRecordingFormat, len(b))
	}
	return DecodeRecording(b, channel)
}

// wavSource streams the samples of a WAV's data chunk.
type wavSource struct {
	r       *bufio.Reader
	f       wavFormat
	channel int
	left    int64 // bytes of data left; -1: to the end of the file
	buf     []byte
	sample  func(p []byte) float64
}

// openWAV reads a WAV's header up to its data chunk (the RIFF and WAVE
// marks already read) and returns the source of its samples. A data chunk
// whose size is 0 or past 2 GiB (what a streaming writer leaves) is read to
// the end of the file.
func openWAV(r *bufio.Reader, channel int) (*wavSource, error) {
	var f wavFormat
	hasFormat := false
	var off int64 = 12
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			switch {
			case !hasFormat:
				return nil, fmt.Errorf("%w: wav: no format chunk", ErrRecordingFormat)
			default:
				return nil, fmt.Errorf("%w: wav: no data chunk", ErrRecordingFormat)
			}
		}
		id := string(head[:4])
		size := int64(binary.LittleEndian.Uint32(head[4:]))
		switch id {
		case "fmt ":
			if size > maxWAVChunk {
				return nil, fmt.Errorf("%w: wav: format chunk at byte %d of %d bytes, want at most %d", ErrRecordingFormat, off, size, maxWAVChunk)
			}
			body := make([]byte, size+size%2)
			n, err := io.ReadFull(r, body)
			if err != nil && int64(n) < size {
				return nil, fmt.Errorf("%w: wav: chunk %q at byte %d runs past the end", ErrRecordingFormat, id, off)
			}
			if f, err = readFormat(body[:size], int(size)); err != nil {
				return nil, err
			}
			hasFormat = true
		case "data":
			if !hasFormat {
				return nil, fmt.Errorf("%w: wav: data chunk at byte %d before the format chunk", ErrRecordingFormat, off)
			}
			if channel < 0 || channel > f.channels {
				return nil, fmt.Errorf("%w: wav: channel %d of a recording of %d channels (want 1 to %d, or the mix)", ErrRecordingFormat, channel, f.channels, f.channels)
			}
			left := size
			if size == 0 || size >= 0x7ffff000 {
				left = -1
			}
			w := &wavSource{r: r, f: f, channel: channel, left: left}
			w.sample = sampleDecoder(f)
			return w, nil
		default:
			if _, err := r.Discard(int(size + size%2)); err != nil {
				return nil, fmt.Errorf("%w: wav: chunk %q at byte %d runs past the end", ErrRecordingFormat, id, off)
			}
		}
		off += 8 + size + size%2
	}
}

// readFormat reads and checks a format chunk.
func readFormat(body []byte, size int) (wavFormat, error) {
	if size < 16 || len(body) < 16 {
		return wavFormat{}, fmt.Errorf("%w: wav: format chunk of %d bytes, want at least 16", ErrRecordingFormat, size)
	}
	f := wavFormat{
		code:     int(binary.LittleEndian.Uint16(body[0:])),
		channels: int(binary.LittleEndian.Uint16(body[2:])),
		rate:     binary.LittleEndian.Uint32(body[4:]),
		frame:    int(binary.LittleEndian.Uint16(body[12:])),
		bits:     int(binary.LittleEndian.Uint16(body[14:])),
	}
	if f.code == wavExtensible {
		if size < 40 || len(body) < 40 {
			return wavFormat{}, fmt.Errorf("%w: wav: extensible format chunk of %d bytes, want 40", ErrRecordingFormat, size)
		}
		f.code = int(binary.LittleEndian.Uint16(body[24:]))
	}
	okBits := false
	switch f.code {
	case wavPCM:
		okBits = f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32
	case wavFloat:
		okBits = f.bits == 32 || f.bits == 64
	case wavALaw, wavMuLaw:
		okBits = f.bits == 8
	default:
		return wavFormat{}, fmt.Errorf("%w: wav: format %#x, want PCM, float, A-law or mu-law", ErrRecordingFormat, f.code)
	}
	switch {
	case !okBits:
		return wavFormat{}, fmt.Errorf("%w: wav: %d bits per sample in format %#x", ErrRecordingFormat, f.bits, f.code)
	case f.channels < 1 || f.channels > 8:
		return wavFormat{}, fmt.Errorf("%w: wav: %d channels, want 1 to 8", ErrRecordingFormat, f.channels)
	case f.frame != f.channels*f.bits/8:
		return wavFormat{}, fmt.Errorf("%w: wav: %d bytes per frame, want %d channels x %d bits", ErrRecordingFormat, f.frame, f.channels, f.bits)
	case f.rate == 0 || f.rate > maxRate:
		return wavFormat{}, fmt.Errorf("%w: wav: sample rate %d, want 1 to %d", ErrRecordingFormat, f.rate, maxRate)
	}
	return f, nil
}

// sampleDecoder returns the function that reads one sample of format f
// (checked by readFormat) from the start of p.
func sampleDecoder(f wavFormat) func(p []byte) float64 {
	width := f.bits / 8
	switch {
	case f.code == wavALaw:
		return func(p []byte) float64 { return aLaw(p[0]) }
	case f.code == wavMuLaw:
		return func(p []byte) float64 { return muLaw(p[0]) }
	case f.code == wavFloat && width == 4:
		return func(p []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(p))) }
	case f.code == wavFloat:
		return func(p []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(p)) }
	case width == 1:
		return func(p []byte) float64 { return (float64(p[0]) - 128) / 128 }
	case width == 2:
		return func(p []byte) float64 { return float64(int16(binary.LittleEndian.Uint16(p))) / (1 << 15) }
	case width == 3:
		return func(p []byte) float64 {
			return float64(int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24)>>8) / (1 << 23)
		}
	default:
		return func(p []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(p))) / (1 << 31) }
	}
}

// read decodes up to len(p) samples into p; io.EOF once the data has
// ended. A partial last frame is dropped.
func (w *wavSource) read(p, ref []float32) (int, error) {
	if w.left == 0 {
		return 0, io.EOF
	}
	need := len(p) * w.f.frame
	if w.left > 0 {
		need = int(min(int64(need), w.left/int64(w.f.frame)*int64(w.f.frame)))
		if need == 0 {
			w.left = 0
			return 0, io.EOF
		}
	}
	if cap(w.buf) < need {
		w.buf = make([]byte, need)
	}
	buf := w.buf[:need]
	got, err := io.ReadFull(w.r, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%w: wav: %w", ErrRecordingFormat, err)
	}
	n := got / w.f.frame
	if w.left > 0 {
		w.left -= int64(got)
	}
	if err != nil {
		w.left = 0 // the file ended
	}
	w.decode(buf[:n*w.f.frame], p[:n])
	if ref != nil {
		w.decodeOthers(buf[:n*w.f.frame], ref[:n])
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// decode turns whole frames into samples of the channel (or the mix).
func (w *wavSource) decode(data []byte, out []float32) {
	f := w.f
	width := f.bits / 8
	if f.code == wavPCM && width == 2 && (f.channels == 1 || w.channel != MixChannels) {
		at := 0
		if w.channel > 0 {
			at = 2 * (w.channel - 1)
		}
		const scale = 1.0 / (1 << 15)
		if f.frame == 2 {
			data = data[:2*len(out)]
			for i := range out {
				out[i] = float32(int16(uint16(data[2*i])|uint16(data[2*i+1])<<8)) * scale
			}
			return
		}
		for i := range out {
			p := data[i*f.frame+at : i*f.frame+at+2]
			out[i] = float32(int16(uint16(p[0])|uint16(p[1])<<8)) * scale
		}
		return
	}
	for i := range out {
		frame := data[i*f.frame : (i+1)*f.frame]
		var v float64
		if w.channel == MixChannels {
			for c := range f.channels {
				v += w.sample(frame[c*width:])
			}
			v /= float64(f.channels)
		} else {
			v = w.sample(frame[(w.channel-1)*width:])
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		out[i] = float32(max(-1, min(1, v)))
	}
}

// decodeOthers turns whole frames into the mean of the channels other
// than the one read.
func (w *wavSource) decodeOthers(data []byte, out []float32) {
	f := w.f
	width := f.bits / 8
	for i := range out {
		frame := data[i*f.frame : (i+1)*f.frame]
		var v float64
		for c := range f.channels {
			if c != w.channel-1 {
				v += w.sample(frame[c*width:])
			}
		}
		v /= float64(f.channels - 1)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		out[i] = float32(max(-1, min(1, v)))
	}
}

// muLaw expands a G.711 mu-law byte.
func muLaw(b byte) float64 {
	b = ^b
	exp := int(b>>4) & 7
	mant := int(b & 0x0f)
	v := ((mant << 3) + 0x84) << exp
	v -= 0x84
	if b&0x80 != 0 {
		v = -v
	}
	return float64(v) / 32768
}

// aLaw expands a G.711 A-law byte.
func aLaw(b byte) float64 {
	b ^= 0x55
	exp := int(b>>4) & 7
	mant := int(b & 0x0f)
	var v int
	if exp == 0 {
		v = mant<<4 + 8
	} else {
		v = (mant<<4 + 0x108) << (exp - 1)
	}
	if b&0x80 == 0 {
		v = -v
	}
	return float64(v) / 32768
}

// isRIFF reports whether b starts a RIFF/WAVE file.
func isRIFF(b []byte) bool {
	return len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WAVE"))
}
