package tts

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gopxl/beep/v2/wav"
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
// A-law and mu-law, in plain or extensible format chunks, at any rate; 8,
// 16 and 24-bit PCM of one or two channels is read by beep's decoder.
func DecodeWAVChannel(b []byte, channel int) (Audio, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return Audio{}, fmt.Errorf("decode wav: not a RIFF/WAVE file (%d bytes)", len(b))
	}
	// Patch the sizes that a streaming writer left open, so that the
	// decoder stops at the real end of the data.
	fixed := bytes.Clone(b)
	binary.LittleEndian.PutUint32(fixed[4:8], uint32(len(fixed)-8))
	var f wavFormat
	hasFormat := false
	data, dataLen := -1, 0
	for off := 12; off+8 <= len(fixed); {
		id := string(fixed[off : off+4])
		size := int(binary.LittleEndian.Uint32(fixed[off+4 : off+8]))
		if id == "fmt " {
			var err error
			if f, err = readFormat(fixed[off+8:], size); err != nil {
				return Audio{}, err
			}
			hasFormat = true
		}
		if id == "data" {
			if !hasFormat {
				return Audio{}, fmt.Errorf("decode wav: data chunk at byte %d before the format chunk", off)
			}
			if rest := len(fixed) - off - 8; size > rest || size < 0 {
				size = rest
				binary.LittleEndian.PutUint32(fixed[off+4:off+8], uint32(rest))
			}
			data, dataLen = off+8, size
			break
		}
		if size < 0 || off+8+size > len(fixed) {
			return Audio{}, fmt.Errorf("decode wav: chunk %q at byte %d runs past the end", id, off)
		}
		off += 8 + size + size%2
	}
	if !hasFormat {
		return Audio{}, fmt.Errorf("decode wav: no format chunk")
	}
	if data < 0 {
		return Audio{}, fmt.Errorf("decode wav: no data chunk")
	}
	if channel < 0 || channel > f.channels {
		return Audio{}, fmt.Errorf("decode wav: channel %d of a recording of %d channels (want 1 to %d, or the mix)", channel, f.channels, f.channels)
	}
	if f.code == wavPCM && f.bits <= 24 && f.channels <= 2 {
		s, format, err := wav.Decode(bytes.NewReader(fixed))
		if err != nil {
			return Audio{}, fmt.Errorf("decode wav: %w", err)
		}
		defer s.Close()
		return readStreamer(s, format, s.Len(), channel)
	}
	return decodeFrames(fixed[data:data+dataLen], f, channel), nil
}

// readFormat reads and checks a format chunk.
func readFormat(body []byte, size int) (wavFormat, error) {
	if size < 16 || len(body) < 16 {
		return wavFormat{}, fmt.Errorf("decode wav: format chunk of %d bytes, want at least 16", size)
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
			return wavFormat{}, fmt.Errorf("decode wav: extensible format chunk of %d bytes, want 40", size)
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
		return wavFormat{}, fmt.Errorf("decode wav: format %#x, want PCM, float, A-law or mu-law", f.code)
	}
	switch {
	case !okBits:
		return wavFormat{}, fmt.Errorf("decode wav: %d bits per sample in format %#x", f.bits, f.code)
	case f.channels < 1 || f.channels > 8:
		return wavFormat{}, fmt.Errorf("decode wav: %d channels, want 1 to 8", f.channels)
	case f.frame != f.channels*f.bits/8:
		return wavFormat{}, fmt.Errorf("decode wav: %d bytes per frame, want %d channels x %d bits", f.frame, f.channels, f.bits)
	case f.rate == 0 || f.rate > 1_000_000:
		return wavFormat{}, fmt.Errorf("decode wav: sample rate %d", f.rate)
	}
	return f, nil
}

// decodeFrames decodes the samples of data in format f (checked by
// readFormat), keeping channel (or the mix); a partial last frame is
// dropped.
func decodeFrames(data []byte, f wavFormat, channel int) Audio {
	width := f.bits / 8
	n := len(data) / f.frame
	a := Audio{Rate: int(f.rate), Samples: make([]float32, n)}
	sample := func(p []byte) float64 {
		switch {
		case f.code == wavALaw:
			return aLaw(p[0])
		case f.code == wavMuLaw:
			return muLaw(p[0])
		case f.code == wavFloat && width == 4:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case f.code == wavFloat:
			return math.Float64frombits(binary.LittleEndian.Uint64(p))
		case width == 1:
			return (float64(p[0]) - 128) / 128
		case width == 2:
			return float64(int16(binary.LittleEndian.Uint16(p))) / (1 << 15)
		case width == 3:
			return float64(int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24)>>8) / (1 << 23)
		default:
			return float64(int32(binary.LittleEndian.Uint32(p))) / (1 << 31)
		}
	}
	for i := range n {
		frame := data[i*f.frame : (i+1)*f.frame]
		var v float64
		if channel == MixChannels {
			for c := range f.channels {
				v += sample(frame[c*width:])
			}
			v /= float64(f.channels)
		} else {
			v = sample(frame[(channel-1)*width:])
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		a.Samples[i] = float32(max(-1, min(1, v)))
	}
	return a
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
