package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rms is the root mean square of s.
func rms(s []float32) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(max(1, len(s))))
}

// FLAC is lossless: the same samples as the WAV it was made from; MP3 is
// the same speech at the same rate and length (its encoder delay and
// padding aside); the channels are kept apart and mixed as asked.
func TestDecodeRecordingFormats(t *testing.T) {
	t.Parallel()
	read := func(name string, channel int) Audio {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeRecording(b, channel)
		if err != nil {
			t.Fatalf("%s channel %d: %v", name, channel, err)
		}
		return a
	}
	for _, ch := range []int{MixChannels, 1, 2} {
		wav, fl := read("call.wav", ch), read("call.flac", ch)
		if fl.Rate != 16000 || len(fl.Samples) != len(wav.Samples) {
			t.Fatalf("flac channel %d: %d samples at %d Hz, want the WAV's %d at 16000", ch, len(fl.Samples), fl.Rate, len(wav.Samples))
		}
		for i := range wav.Samples {
			if math.Abs(float64(wav.Samples[i]-fl.Samples[i])) > 1e-6 {
				t.Fatalf("flac channel %d: sample %d is %v, the WAV's %v", ch, i, fl.Samples[i], wav.Samples[i])
			}
		}
		mp := read("call.mp3", ch)
		if mp.Rate != 16000 || math.Abs(float64(len(mp.Samples)-len(wav.Samples))) > 3000 {
			t.Errorf("mp3 channel %d: %d samples at %d Hz, want about the WAV's %d at 16000", ch, len(mp.Samples), mp.Rate, len(wav.Samples))
		}
		if r, w := rms(mp.Samples), rms(wav.Samples); math.Abs(r-w) > 0.1*w {
			t.Errorf("mp3 channel %d: level %.4f, the WAV's %.4f", ch, r, w)
		}
	}
	left, right := rms(read("call.flac", 1).Samples), rms(read("call.flac", 2).Samples)
	// the other channel read beside one: the right beside the left
	for _, name := range []string{"call.wav", "call.flac", "call.mp3"} {
		b, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := OpenRecording(bytes.NewReader(b), 1)
		if err != nil || !r.HasReference() {
			t.Fatalf("%s: %v, reference %v", name, err, r != nil && r.HasReference())
		}
		var got, others []float32
		p, q := make([]float32, 1000), make([]float32, 1000)
		for {
			n, err := r.ReadWithReference(p, q)
			got, others = append(got, p[:n]...), append(others, q[:n]...)
			if err != nil {
				break
			}
		}
		if ratio := rms(others) / rms(got); math.Abs(ratio-0.5) > 0.02 {
			t.Errorf("%s: the other channel at %.3f of the one read, want 0.5", name, ratio)
		}
		if mono, _ := OpenRecording(bytes.NewReader(b), MixChannels); mono.HasReference() {
			t.Errorf("%s: the mix has a reference", name)
		}
	}
	if math.Abs(right/left-0.5) > 0.01 {
		t.Errorf("flac: right channel at %.3f of the left, want 0.5", right/left)
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "recording", "call.flac"))
	if _, err := DecodeRecording(b, 3); !errors.Is(err, ErrRecordingFormat) {
		t.Errorf("channel 3 of a stereo FLAC: %v, want ErrRecordingFormat", err)
	}
	for _, bad := range [][]byte{nil, []byte("hello"), []byte("fLaC"), append([]byte("fLaC"), b[4:200]...), []byte("ID3\x04\x00")} {
		if _, err := DecodeRecording(bad, MixChannels); err == nil {
			t.Errorf("%q: no error", bad[:min(len(bad), 8)])
		}
	}
}

// FuzzDecodeRecording: any bytes give audio or an error, never a panic.
func FuzzDecodeRecording(f *testing.F) {
	for _, name := range []string{"call.flac", "call.mp3", "call.wav"} {
		b, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)], 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, channel int) {
		a, err := DecodeRecording(b, channel%3)
		if err == nil && a.Rate <= 0 {
			t.Fatalf("decoded at rate %d with no error", a.Rate)
		}
	})
}

// OpenRecording streams what DecodeRecording decodes whole, whatever the
// size of the reads; a WAV's chunks before its data are skipped, a data
// chunk left open by a streaming writer is read to the end, and one that
// says its size stops there.
func TestOpenRecordingStreams(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"call.wav", "call.flac", "call.mp3"} {
		b, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range []int{MixChannels, 1, 2} {
			whole, err := DecodeRecording(b, ch)
			if err != nil {
				t.Fatal(err)
			}
			r, err := OpenRecording(bytes.NewReader(b), ch)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rate() != whole.Rate || r.Channels() != 2 || r.Format() != strings.TrimPrefix(filepath.Ext(name), ".") {
				t.Errorf("%s: rate %d, %d channels, format %s", name, r.Rate(), r.Channels(), r.Format())
			}
			var got []float32
			buf := make([]float32, 37)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			if !slices.Equal(got, whole.Samples) {
				t.Errorf("%s channel %d: %d samples streamed, %d decoded whole (or they differ)", name, ch, len(got), len(whole.Samples))
			}
		}
	}
	data := make([]byte, 0, 8)
	for _, v := range []int16{1000, -1000, 2000, -2000} {
		data = binary.LittleEndian.AppendUint16(data, uint16(v))
	}
	plain := wavOf(1, 1, 16, 8000, data)
	// a LIST chunk before the data, and a data chunk of size 0 (open)
	withList := append([]byte{}, plain[:36]...)
	withList = append(withList, "LIST\x05\x00\x00\x00abcde\x00"...)
	withList = append(withList, "data\x00\x00\x00\x00"...)
	withList = append(withList, data...)
	// a data chunk of 4 bytes with a chunk after it
	short := append([]byte{}, plain[:40]...)
	short = binary.LittleEndian.AppendUint32(short, 4)
	short = append(short, data[:4]...)
	short = append(short, "LIST\x04\x00\x00\x00abcd"...)
	for _, tt := range []struct {
		name string
		b    []byte
		want int
	}{{"plain", plain, 4}, {"open data with a LIST before", withList, 4}, {"sized data with a chunk after", short, 2}} {
		a, err := DecodeWAV(tt.b)
		if err != nil || len(a.Samples) != tt.want || math.Abs(float64(a.Samples[0])-1000.0/32768) > 1e-6 {
			t.Errorf("%s: %d samples %v (%v), want %d", tt.name, len(a.Samples), a.Samples, err, tt.want)
		}
	}
}

// A recording that ends inside its header, or whose frames turn out
// broken, is an error wrapping ErrRecordingFormat; the samples read before
// a broken frame stand.
func TestOpenRecordingBroken(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "recording", "call.flac"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{[]byte("RIFF\x00\x00\x00\x00WAVE"), []byte("RIFF\x00\x00\x00\x00WAVEfmt \xff\xff\xff\x00"), b[:30], []byte("ID3"),
		[]byte("fLaC\x84\x2c\x00\xf5\xff\xff\xff\xff"), // a Vorbis comment first, claiming 4 G entries
	} {
		if _, err := OpenRecording(bytes.NewReader(bad), MixChannels); !errors.Is(err, ErrRecordingFormat) {
			t.Errorf("%q: %v, want ErrRecordingFormat", bad[:min(len(bad), 12)], err)
		}
	}
	cut := slices.Clone(b[:len(b)/2])
	for i := len(cut) - 200; i < len(cut); i++ {
		cut[i] ^= 0x5a
	}
	r, err := OpenRecording(bytes.NewReader(cut), MixChannels)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.ReadAll(context.Background(), 0)
	if !errors.Is(err, ErrRecordingFormat) {
		t.Errorf("a FLAC broken half way: %d samples, %v; want ErrRecordingFormat", len(a.Samples), err)
	}
}

// FuzzOpenRecording: any bytes, read through the streaming reader in
// small pieces with the other channels beside, give samples in [-1, 1]
// and then io.EOF or an error, never a panic or a read that goes on
// forever.
func FuzzOpenRecording(f *testing.F) {
	for _, name := range []string{"call.flac", "call.mp3", "call.wav"} {
		b, err := os.ReadFile(filepath.Join("testdata", "recording", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)], 0, uint8(64))
	}
	f.Add(wavOf(7, 2, 8, 8000, []byte{1, 2, 3, 4, 5}), 2, uint8(3))
	f.Add(wavOf(3, 1, 64, 16000, make([]byte, 24)), 1, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, channel int, size uint8) {
		r, err := OpenRecording(bytes.NewReader(b), channel%3)
		if err != nil {
			return
		}
		if r.Rate() <= 0 || r.Channels() < 1 {
			t.Fatalf("rate %d, %d channels", r.Rate(), r.Channels())
		}
		buf := make([]float32, int(size)+1)
		ref := make([]float32, len(buf))
		total := 0
		for {
			// the other channels too, where the channel read has them
			n, err := r.ReadWithReference(buf, ref)
			for i, v := range buf[:n] {
				if math.IsNaN(float64(v)) || v < -1.0001 || v > 1.0001 || math.IsNaN(float64(ref[i])) || ref[i] < -1.0001 || ref[i] > 1.0001 {
					t.Fatalf("sample %d = %v (the others' %v)", total+i, v, ref[i])
				}
			}
			total += n
			// a few kilobytes of FLAC can hold hours of silence: enough of
			// it is read to see its samples are sound
			if err != nil || total > 1<<20 {
				break
			}
		}
	})
}
