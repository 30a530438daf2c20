package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
	"time"
)

// wavHeader returns a WAV header for the format, with dataSize as the
// data chunk's size, and extra chunks before the data.
func wavHeader(format, channels, rate, bits int, dataSize uint32, extra ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(0xFFFFFFFF))
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, uint16(format))
	binary.Write(&b, binary.LittleEndian, uint16(channels))
	binary.Write(&b, binary.LittleEndian, uint32(rate))
	binary.Write(&b, binary.LittleEndian, uint32(rate*channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(bits))
	for _, e := range extra {
		b.Write(e)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, dataSize)
	return b.Bytes()
}

func le16(vs ...int16) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes()
}

func readAll(t *testing.T, d *Reader) ([]float32, error) {
	t.Helper()
	var out []float32
	for range 10000 {
		p, err := d.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if len(p.Samples) == 0 {
			t.Fatalf("a piece without samples")
		}
		out = append(out, p.Samples...)
	}
	t.Fatalf("no end after 10000 pieces")
	return nil, nil
}

func TestReader(t *testing.T) {
	t.Parallel()
	list := append([]byte("LIST"), 3, 0, 0, 0, 'a', 'b', 'c', 0) // odd size: padded
	f32 := func(vs ...float32) []byte {
		var b bytes.Buffer
		for _, v := range vs {
			binary.Write(&b, binary.LittleEndian, math.Float32bits(v))
		}
		return b.Bytes()
	}
	tests := []struct {
		name    string
		data    []byte
		pcmRate int // raw PCM instead of WAV
		want    []float32
		rate    int
		wantErr error
	}{
		{name: "16-bit mono, size unknown", data: append(wavHeader(1, 1, 22050, 16, 0x7ffff000), le16(16384, -16384, 0)...),
			want: []float32{0.5, -0.5, 0}, rate: 22050},
		{name: "size 0xFFFFFFFF", data: append(wavHeader(1, 1, 24000, 16, 0xFFFFFFFF), le16(8192)...), want: []float32{0.25}, rate: 24000},
		{name: "size 0 means unknown", data: append(wavHeader(1, 1, 24000, 16, 0), le16(8192, 8192)...), want: []float32{0.25, 0.25}, rate: 24000},
		{name: "announced size stops the audio", data: append(wavHeader(1, 1, 8000, 16, 4), append(le16(16384, 16384), []byte("LIST\x00\x00\x00\x00")...)...),
			want: []float32{0.5, 0.5}, rate: 8000},
		{name: "stereo mixed down", data: append(wavHeader(1, 2, 16000, 16, 0xFFFFFFFF), le16(16384, 0, -16384, -16384)...),
			want: []float32{0.25, -0.5}, rate: 16000},
		{name: "8-bit", data: append(wavHeader(1, 1, 8000, 8, 0xFFFFFFFF), 128, 192, 64), want: []float32{0, 0.5, -0.5}, rate: 8000},
		{name: "24-bit", data: append(wavHeader(1, 1, 48000, 24, 0xFFFFFFFF), 0, 0, 0x40, 0, 0, 0xC0), want: []float32{0.5, -0.5}, rate: 48000},
		{name: "32-bit float", data: append(wavHeader(3, 1, 24000, 32, 0xFFFFFFFF), f32(0.25, -2)...), want: []float32{0.25, -1}, rate: 24000},
		{name: "metadata before the data", data: append(wavHeader(1, 1, 22050, 16, 0xFFFFFFFF, list), le16(16384)...), want: []float32{0.5}, rate: 22050},
		{name: "raw PCM", data: le16(16384, -32768), pcmRate: 24000, want: []float32{0.5, -1}, rate: 24000},
		{name: "ends before the announced data", data: append(wavHeader(1, 1, 8000, 16, 8), le16(1, 2)...), want: []float32{1.0 / 32768, 2.0 / 32768}, rate: 8000, wantErr: io.ErrUnexpectedEOF},
		{name: "ends inside a frame", data: append(wavHeader(1, 1, 8000, 16, 0xFFFFFFFF), 1, 0, 7), want: []float32{1.0 / 32768}, rate: 8000, wantErr: io.ErrUnexpectedEOF},
		{name: "ends inside the header", data: wavHeader(1, 1, 8000, 16, 0)[:30], wantErr: io.ErrUnexpectedEOF},
		{name: "not WAV", data: []byte("ID3\x04\x00\x00\x00\x00\x00\x00\x00\x00 an mp3"), wantErr: ErrAudio},
		{name: "format before data missing", data: append([]byte("RIFF\xff\xff\xff\xffWAVEdata\x04\x00\x00\x00"), le16(1, 2)...), wantErr: ErrAudio},
		{name: "compressed format", data: append(wavHeader(0x55, 1, 8000, 16, 0), le16(1)...), wantErr: ErrAudio},
		{name: "bad frame size", data: append(wavHeader(1, 2, 8000, 12, 0), le16(1)...), wantErr: ErrAudio},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var src io.Reader = bytes.NewReader(tt.data)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			d := NewWAVReader(src)
			if tt.pcmRate > 0 {
				d = NewPCMReader(src, tt.pcmRate)
			}
			got, err := readAll(t, d)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("%s (one byte at a time: %v): error %v, want %v", tt.name, oneByte, err, tt.wantErr)
				}
			} else if err != nil {
				t.Errorf("%s (one byte at a time: %v): %v", tt.name, oneByte, err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("%s (one byte at a time: %v): samples %v, want %v", tt.name, oneByte, got, tt.want)
				continue
			}
			for i := range got {
				if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
					t.Errorf("%s: sample %d = %v, want %v", tt.name, i, got[i], tt.want[i])
				}
			}
			if tt.rate > 0 && d.Rate() != tt.rate {
				t.Errorf("%s: rate %d, want %d", tt.name, d.Rate(), tt.rate)
			}
			if _, again := d.Next(); (again == nil) || (err != nil && again.Error() != err.Error()) {
				t.Errorf("%s: Next after the end = %v, want the same end", tt.name, again)
			}
		}
	}
}

func TestReaderStamps(t *testing.T) {
	t.Parallel()
	at := time.Unix(100, 0)
	pr, pw := io.Pipe()
	d := NewPCMReader(pr, 24000)
	d.Now = func() time.Time { at = at.Add(time.Second); return at }
	go func() {
		pw.Write(le16(1, 2))
		pw.Write(le16(3))
		pw.Close()
	}()
	p1, err := d.Next()
	if err != nil || len(p1.Samples) != 2 || !p1.At.Equal(time.Unix(101, 0)) || p1.Rate != 24000 {
		t.Fatalf("first piece %+v, %v; want 2 samples at 101 s", p1, err)
	}
	p2, err := d.Next()
	if err != nil || len(p2.Samples) != 1 || !p2.At.Equal(time.Unix(102, 0)) {
		t.Fatalf("second piece %+v, %v; want 1 sample at 102 s", p2, err)
	}
}

func TestReaderHugeChunk(t *testing.T) {
	t.Parallel()
	big := append([]byte("junk"), 0, 0, 0, 0x40) // 1 GiB of metadata announced
	d := NewWAVReader(bytes.NewReader(wavHeader(1, 1, 8000, 16, 0, big)))
	if _, err := d.Next(); !errors.Is(err, ErrAudio) {
		t.Fatalf("error %v, want ErrAudio for a 1 GiB chunk before the audio", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add(append(wavHeader(1, 1, 22050, 16, 0x7ffff000), le16(16384, -16384, 0)...), false)
	f.Add(append(wavHeader(3, 2, 24000, 32, 8), 1, 2, 3, 4, 5, 6, 7, 8, 9), false)
	f.Add(le16(1, 2, 3), true)
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"), false)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		d := NewWAVReader(bytes.NewReader(data))
		if raw {
			d = NewPCMReader(bytes.NewReader(data), 24000)
		}
		n := 0
		for range len(data) + 2 {
			p, err := d.Next()
			if err != nil {
				return
			}
			if len(p.Samples) == 0 {
				t.Fatalf("a piece without samples")
			}
			n += len(p.Samples)
			if n > len(data) {
				t.Fatalf("%d samples from %d bytes", n, len(data))
			}
			for _, v := range p.Samples {
				if !(v >= -1 && v <= 1) {
					t.Fatalf("sample %v out of range", v)
				}
			}
		}
		t.Fatalf("no end after %d pieces of %d bytes", len(data)+2, len(data))
	})
}
