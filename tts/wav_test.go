package tts

import (
	"encoding/binary"
	"math"
	"testing"
)

// wavOf builds a WAV of format code with frames of the given bytes.
func wavOf(code, channels, bits int, rate uint32, data []byte) []byte {
	fmtBody := make([]byte, 16)
	binary.LittleEndian.PutUint16(fmtBody[0:], uint16(code))
	binary.LittleEndian.PutUint16(fmtBody[2:], uint16(channels))
	binary.LittleEndian.PutUint32(fmtBody[4:], rate)
	binary.LittleEndian.PutUint32(fmtBody[8:], rate*uint32(channels*bits/8))
	binary.LittleEndian.PutUint16(fmtBody[12:], uint16(channels*bits/8))
	binary.LittleEndian.PutUint16(fmtBody[14:], uint16(bits))
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00")
	b = append(b, fmtBody...)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

func TestDecodeWAVChannel(t *testing.T) {
	t.Parallel()
	stereo16 := wavOf(1, 2, 16, 8000, []byte{0x00, 0x40, 0x00, 0xc0, 0x00, 0x20, 0x00, 0x00}) // (0.5, -0.5), (0.25, 0)
	var f32 []byte
	for _, v := range []float32{0.5, -0.25, 0.125, 1} {
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(v))
	}
	float3 := wavOf(3, 2, 32, 48000, f32)
	var i32 []byte
	i32 = binary.LittleEndian.AppendUint32(i32, uint32(1<<30))
	tests := []struct {
		name    string
		b       []byte
		channel int
		want    []float32
		rate    int
	}{
		{"16-bit left", stereo16, 1, []float32{0.5, 0.25}, 8000},
		{"16-bit right", stereo16, 2, []float32{-0.5, 0}, 8000},
		{"16-bit mix", stereo16, MixChannels, []float32{0, 0.125}, 8000},
		{"float right", float3, 2, []float32{-0.25, 1}, 48000},
		{"float mix", float3, MixChannels, []float32{0.125, 0.5625}, 48000},
		{"32-bit", wavOf(1, 1, 32, 16000, i32), 1, []float32{0.5}, 16000},
		{"mu-law", wavOf(7, 1, 8, 8000, []byte{0xff, 0x7f, 0x00}), 1, []float32{0, 0, -0.98}, 8000},
		{"A-law", wavOf(6, 1, 8, 8000, []byte{0xd5, 0x55, 0xaa}), 1, []float32{0.0002, -0.0002, 0.98}, 8000},
	}
	for _, tt := range tests {
		a, err := DecodeWAVChannel(tt.b, tt.channel)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if a.Rate != tt.rate || len(a.Samples) != len(tt.want) {
			t.Errorf("%s: %d samples at %d Hz, want %d at %d", tt.name, len(a.Samples), a.Rate, len(tt.want), tt.rate)
			continue
		}
		for i, w := range tt.want {
			if math.Abs(float64(a.Samples[i]-w)) > 0.01 {
				t.Errorf("%s: sample %d = %v, want %v", tt.name, i, a.Samples[i], w)
			}
		}
	}
	if _, err := DecodeWAVChannel(stereo16, 3); err == nil {
		t.Error("channel 3 of a stereo file: no error")
	}
	if _, err := DecodeWAVChannel(wavOf(2, 1, 16, 8000, nil), 1); err == nil {
		t.Error("ADPCM: no error")
	}
}

func FuzzDecodeWAVChannel(f *testing.F) {
	f.Add(wavOf(1, 2, 16, 8000, []byte{1, 2, 3, 4}), 1)
	f.Add(wavOf(3, 1, 32, 48000, []byte{0, 0, 0x80, 0x7f}), 0)
	f.Add(wavOf(7, 3, 8, 8000, []byte{1, 2, 3, 4, 5, 6}), 3)
	f.Add(wavOf(1, 4, 24, 44100, make([]byte, 24)), 2)
	f.Fuzz(func(t *testing.T, b []byte, channel int) {
		a, err := DecodeWAVChannel(b, channel)
		if err != nil {
			return
		}
		if a.Rate <= 0 {
			t.Errorf("no error but rate %d", a.Rate)
		}
		if len(a.Samples) > len(b) {
			t.Errorf("%d samples from %d bytes", len(a.Samples), len(b))
		}
		for i, v := range a.Samples {
			if math.IsNaN(float64(v)) || v < -1.0001 || v > 1.0001 {
				t.Fatalf("sample %d = %v", i, v)
			}
		}
	})
}
