package corpus

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/speech-pipeline/underrun/tts"
)

// MP3Delay is the samples an MP3 decoder that ignores the encoder's
// gapless header (go-mp3, which heard reads MP3 with) puts before the
// sound: LAME's 576 samples of encoder delay and the 529 of the decoder's
// synthesis filter bank.
const MP3Delay = 1105

// mp3File encodes the audio at rate as a mono MP3 of kbps kilobits a
// second (sox's LAME encoder), first taking MP3Delay samples off its
// start (the recording's silence before the first token) so that the
// sound lies where it did in the file as heard reads it.
func mp3File(rate, kbps int) last {
	return func(ctx context.Context, in Input, a tts.Audio) (File, error) {
		a, err := Resample(ctx, a, rate, in.Dir)
		if err != nil {
			return File{}, err
		}
		a.Samples = a.Samples[min(MP3Delay, len(a.Samples)):]
		b, err := soxConvert(ctx, in.Dir, a, "mp3", "-C", strconv.Itoa(kbps))
		return File{Bytes: b, Ext: "mp3", Channel: tts.MixChannels}, err
	}
}

// gsm is a step that codes the audio as GSM 06.10 full rate (13 kbit/s,
// 8 kHz; sox's libgsm) and decodes it again, as a GSM call's recording
// is, at 8 kHz.
func gsm(ctx context.Context, in Input, a tts.Audio) (tts.Audio, error) {
	_, out, err := gsmCode(ctx, in.Dir, a)
	return out, err
}

// gsmCode returns the audio coded as GSM 06.10 (at 8 kHz), and decoded.
func gsmCode(ctx context.Context, dir string, a tts.Audio) ([]byte, tts.Audio, error) {
	a, err := Resample(ctx, a, 8000, dir)
	if err != nil {
		return nil, tts.Audio{}, err
	}
	coded, err := soxConvert(ctx, dir, a, "gsm")
	if err != nil {
		return nil, tts.Audio{}, err
	}
	name, err := tempFile(dir, "gsm-*.gsm", coded)
	if err != nil {
		return nil, tts.Audio{}, err
	}
	defer os.Remove(name)
	dst := name + ".wav"
	defer os.Remove(dst)
	if err := run(exec.CommandContext(ctx, Sox, "-D", name, "-e", "floating-point", "-b", "32", dst)); err != nil {
		return nil, tts.Audio{}, err
	}
	out, err := readWAV(dst)
	return coded, out, err
}

// opus is a step that codes the audio with Opus at kbps kilobits a
// second and decodes it (opusCode).
func opus(kbps int) step {
	return func(ctx context.Context, in Input, a tts.Audio) (tts.Audio, error) {
		_, out, err := opusCode(ctx, in.Dir, a, kbps)
		return out, err
	}
}

// opusCode returns the audio coded with Opus at a constant kbps kilobits
// a second in 20 ms frames (opus-tools' opusenc, libopus), as an Ogg
// file, and decoded at 16 kHz (opusdec, which takes the encoder's
// pre-skip off: the sound stays where it was).
func opusCode(ctx context.Context, dir string, a tts.Audio, kbps int) ([]byte, tts.Audio, error) {
	wav, err := WAV([][]float32{a.Samples}, a.Rate, Float32)
	if err != nil {
		return nil, tts.Audio{}, err
	}
	src, err := tempFile(dir, "opus-*.wav", wav)
	if err != nil {
		return nil, tts.Audio{}, err
	}
	name, decoded := src+".opus", src+".out.wav"
	defer os.Remove(src)
	defer os.Remove(name)
	defer os.Remove(decoded)
	if err := run(exec.CommandContext(ctx, OpusEnc.Program, "--quiet", "--hard-cbr", "--bitrate", strconv.Itoa(kbps), "--framesize", "20", src, name)); err != nil {
		return nil, tts.Audio{}, err
	}
	if err := run(exec.CommandContext(ctx, OpusDec.Program, "--quiet", "--rate", "16000", "--float", "--no-dither", name, decoded)); err != nil {
		return nil, tts.Audio{}, err
	}
	coded, err := os.ReadFile(name)
	if err != nil {
		return nil, tts.Audio{}, err
	}
	out, err := readWAV(decoded)
	return coded, out, err
}

// soxConvert writes the audio as a file of kind ext with sox (its output
// options opts), and returns the file.
func soxConvert(ctx context.Context, dir string, a tts.Audio, ext string, opts ...string) ([]byte, error) {
	wav, err := WAV([][]float32{a.Samples}, a.Rate, Float32)
	if err != nil {
		return nil, err
	}
	src, err := tempFile(dir, "sox-*.wav", wav)
	if err != nil {
		return nil, err
	}
	dst := src + "." + ext
	defer os.Remove(src)
	defer os.Remove(dst)
	args := append(append([]string{"-D", "-R", src}, opts...), dst)
	if err := run(exec.CommandContext(ctx, Sox, args...)); err != nil {
		return nil, err
	}
	return os.ReadFile(dst)
}

// tempFile writes b to a new file in dir named by pattern.
func tempFile(dir, pattern string, b []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("%s: %w", filepath.Base(f.Name()), err)
	}
	return f.Name(), f.Close()
}
