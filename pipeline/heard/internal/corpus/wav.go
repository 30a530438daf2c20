package corpus

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Encoding is how a WAV file stores its samples.
type Encoding string

// The encodings WAV writes.
const (
	PCM16   Encoding = "pcm16"
	PCM24   Encoding = "pcm24"
	Float32 Encoding = "float32"
	MuLaw   Encoding = "mu-law"
	ALaw    Encoding = "a-law"
)

// WAV returns a WAV file of the channels (each as long as the first) at
// rate in encoding e. Samples are clipped to [-1, 1].
func WAV(channels [][]float32, rate int, e Encoding) ([]byte, error) {
	if len(channels) == 0 || rate <= 0 {
		return nil, fmt.Errorf("wav: %d channels at %d Hz", len(channels), rate)
	}
	n := len(channels[0])
	for i, c := range channels {
		if len(c) != n {
			return nil, fmt.Errorf("wav: channel %d has %d samples, channel 1 %d", i+1, len(c), n)
		}
	}
	var tag, bits uint16
	switch e {
	case PCM16:
		tag, bits = 1, 16
	case PCM24:
		tag, bits = 1, 24
	case Float32:
		tag, bits = 3, 32
	case MuLaw:
		tag, bits = 7, 8
	case ALaw:
		tag, bits = 6, 8
	default:
		return nil, fmt.Errorf("wav: unknown encoding %q", e)
	}
	block := len(channels) * int(bits) / 8
	data := n * block
	b := make([]byte, 0, 44+data)
	le := binary.LittleEndian
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, uint32(36+data))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, tag)
	b = le.AppendUint16(b, uint16(len(channels)))
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*block))
	b = le.AppendUint16(b, uint16(block))
	b = le.AppendUint16(b, bits)
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(data))
	for i := range n {
		for _, c := range channels {
			v := max(-1, min(1, float64(c[i])))
			switch e {
			case PCM16:
				b = le.AppendUint16(b, uint16(int16(math.Round(v*32767))))
			case PCM24:
				x := int32(math.Round(v * 8388607))
				b = append(b, byte(x), byte(x>>8), byte(x>>16))
			case Float32:
				b = le.AppendUint32(b, math.Float32bits(float32(v)))
			case MuLaw:
				b = append(b, muLaw(int16(math.Round(v*32767))))
			case ALaw:
				b = append(b, aLaw(int16(math.Round(v*32767))))
			}
		}
	}
	return b, nil
}

// muLaw encodes a 16-bit sample as G.711 mu-law.
func muLaw(s int16) byte {
	const bias, clip = 0x84, 32635
	x := int(s)
	sign := 0
	if x < 0 {
		x, sign = -x, 0x80
	}
	x = min(x, clip) + bias
	exp := 7
	for mask := 0x4000; x&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (x >> (exp + 3)) & 0x0f
	return ^byte(sign | exp<<4 | mant)
}

// aLaw encodes a 16-bit sample as G.711 A-law.
func aLaw(s int16) byte {
	x := int(s) >> 3 // 13 bits
	sign := 0x80
	if x < 0 {
		x, sign = -x-1, 0
	}
	x = min(x, 0xfff)
	var out int
	if x < 32 {
		out = x >> 1
	} else {
		exp := 1
		for v := x >> 5; v > 1; v >>= 1 {
			exp++
		}
		out = exp<<4 | (x>>exp)&0x0f
	}
	return byte((out | sign) ^ 0x55)
}
