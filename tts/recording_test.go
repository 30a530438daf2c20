package tts

import (
	"errors"
	"math"
	"os"
	"path/filepath"
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
