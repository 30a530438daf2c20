package tts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hajimehoshi/go-mp3"
	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
)

// MaxRecording is the longest FLAC or MP3 recording DecodeRecording
// decodes into memory: a compressed file of a few kilobytes can hold hours
// of silence. OpenRecording streams any length.
const MaxRecording = 4 * time.Hour

// maxRate is the highest sample rate a recording may have.
const maxRate = 768000

// maxEmptyReads is how many reads in a row a decoder may return nothing
// (an MP3 frame of no samples, say) before the file is taken as broken.
const maxEmptyReads = 1 << 12

// ErrRecordingFormat reports a recording that cannot be read.
var ErrRecordingFormat = errors.New("unreadable recording")

// RecordingReader streams the samples of a recording as they are decoded:
// one channel of it, or the mean of its channels, as float32 in [-1, 1].
// Its memory does not grow with the recording's length.
type RecordingReader struct {
	rate, channels int
	format         string
	channel        int
	read           func(p, ref []float32) (int, error)
	err            error
}

// OpenRecording reads the header of a recording of speech from r, telling
// its format from its content: WAV (integer PCM of 8, 16, 24 or 32 bits,
// 32 or 64-bit float, G.711 A-law or mu-law, plain or extensible; a data
// chunk with no real size is read to the end), FLAC (mewkiz/flac) or MP3
// (hajimehoshi/go-mp3). It keeps channel (numbered from 1) or the mean of
// all (MixChannels). An MP3 is decoded as two channels, mono or not.
func OpenRecording(r io.Reader, channel int) (*RecordingReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(12)
	switch {
	case isRIFF(head):
		br.Discard(12)
		w, err := openWAV(br, channel)
		if err != nil {
			return nil, err
		}
		return &RecordingReader{rate: int(w.f.rate), channels: w.f.channels, channel: channel, format: "wav", read: w.read}, nil
	case len(head) >= 4 && string(head[:4]) == "fLaC":
		return openFLAC(br, channel)
	case isMP3(head):
		return openMP3(br, channel)
	}
	return nil, fmt.Errorf("%w: not WAV (RIFF), FLAC (fLaC) or MP3 (an ID3 tag or an MPEG audio frame) at its start", ErrRecordingFormat)
}

// Rate is the recording's sample rate.
func (r *RecordingReader) Rate() int { return r.rate }

// Channels is how many channels the recording has.
func (r *RecordingReader) Channels() int { return r.channels }

// Format names the recording's format: wav, flac or mp3.
func (r *RecordingReader) Format() string { return r.format }

// Read decodes up to len(p) samples into p and returns how many. It
// returns io.EOF (and no samples) once the recording has ended, and an
// error wrapping ErrRecordingFormat for a recording that turns out
// unreadable (the samples before it stand). A panic inside a third-party
// decoder on a damaged file is returned as such an error.
func (r *RecordingReader) Read(p []float32) (int, error) { return r.ReadWithReference(p, nil) }

// HasReference reports whether the recording has channels besides the one
// read: the other side of a call, whose voice may bleed into it.
func (r *RecordingReader) HasReference() bool { return r.channel != MixChannels && r.channels > 1 }

// ReadWithReference reads as Read does and, where ref is not nil (it must
// be as long as p), fills ref with the mean of the other channels, sample
// for sample (zeros where HasReference is false).
func (r *RecordingReader) ReadWithReference(p, ref []float32) (n int, err error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if ref != nil {
		ref = ref[:len(p)]
		if !r.HasReference() {
			clear(ref)
			ref = nil
		}
	}
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, fmt.Errorf("%w: %s: the decoder failed on the file: %v", ErrRecordingFormat, r.format, v)
		}
		if err != nil {
			r.err = err
		}
	}()
	for tries := 0; n == 0 && err == nil; tries++ {
		if tries == maxEmptyReads {
			return 0, fmt.Errorf("%w: %s: the decoder gives no samples and no end", ErrRecordingFormat, r.format)
		}
		n, err = r.read(p, ref)
	}
	return n, err
}

// ReadAll reads the rest of the recording into memory, at most limit
// samples (0: no limit), checking ctx between blocks.
func (r *RecordingReader) ReadAll(ctx context.Context, limit int) (Audio, error) {
	a := Audio{Rate: r.rate}
	buf := make([]float32, 16<<10)
	for {
		if err := ctx.Err(); err != nil {
			return Audio{}, err
		}
		n, err := r.Read(buf)
		a.Samples = append(a.Samples, buf[:n]...)
		if limit > 0 && len(a.Samples) > limit {
			return Audio{}, fmt.Errorf("%w: %s: more than %d samples", ErrRecordingFormat, r.format, limit)
		}
		if errors.Is(err, io.EOF) {
			return a, nil
		}
		if err != nil {
			return Audio{}, err
		}
	}
}

// DecodeRecording decodes a whole recording held in memory, as
// OpenRecording reads it. A FLAC or MP3 is decoded up to MaxRecording, and
// to no more samples per byte of the file than its format can hold (a
// decoder gone wrong on it).
func DecodeRecording(b []byte, channel int) (Audio, error) {
	r, err := OpenRecording(bytes.NewReader(b), channel)
	if err != nil {
		return Audio{}, err
	}
	limit := 0
	switch r.format {
	case "flac": // a FLAC frame holds at most 65535 samples in no fewer than 8 bytes
		limit = min(int(MaxRecording.Seconds())*r.rate, 8192*len(b))
	case "mp3": // an MPEG audio frame holds 1152 samples in no fewer than 24 bytes
		limit = min(int(MaxRecording.Seconds())*r.rate, 48*len(b))
	}
	return r.ReadAll(context.Background(), limit)
}

// openFLAC reads a FLAC's STREAMINFO (skipping its other metadata blocks
// unread) and returns the reader of its frames.
func openFLAC(br *bufio.Reader, channel int) (rr *RecordingReader, err error) {
	defer func() {
		if v := recover(); v != nil {
			rr, err = nil, fmt.Errorf("%w: flac: the decoder failed on the file: %v", ErrRecordingFormat, v)
		}
	}()
	// the decoder parses the first metadata block and allocates what its
	// length fields claim: it must be the STREAMINFO of 34 bytes (the
	// others it skips unread)
	if h, _ := br.Peek(8); len(h) < 8 || h[4]&0x7f != 0 || h[5] != 0 || h[6] != 0 || h[7] != 34 {
		return nil, fmt.Errorf("%w: flac: the first metadata block is not a STREAMINFO of 34 bytes", ErrRecordingFormat)
	}
	s, err := flac.New(br)
	if err != nil {
		return nil, fmt.Errorf("%w: flac: %w", ErrRecordingFormat, err)
	}
	info := s.Info
	rate, chans, bps := int(info.SampleRate), int(info.NChannels), int(info.BitsPerSample)
	switch {
	case rate <= 0 || rate > maxRate:
		return nil, fmt.Errorf("%w: flac: sample rate %d", ErrRecordingFormat, rate)
	case chans < 1 || chans > 8:
		return nil, fmt.Errorf("%w: flac: %d channels, want 1 to 8", ErrRecordingFormat, chans)
	case bps < 4 || bps > 32:
		return nil, fmt.Errorf("%w: flac: %d bits per sample", ErrRecordingFormat, bps)
	case channel < MixChannels || channel > chans:
		return nil, fmt.Errorf("%w: flac: no channel %d: the file has %d", ErrRecordingFormat, channel, chans)
	}
	fr := &flacSource{s: s, channel: channel, chans: chans}
	return &RecordingReader{rate: rate, channels: chans, channel: channel, format: "flac", read: fr.read}, nil
}

// flacSource streams a FLAC's frames, one at a time.
type flacSource struct {
	s              *flac.Stream
	f              *frame.Frame
	at             int // the next sample of f
	channel, chans int
}

func (fs *flacSource) read(p, ref []float32) (int, error) {
	for fs.f == nil || fs.at >= int(fs.f.BlockSize) {
		f, err := fs.s.ParseNext()
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, fmt.Errorf("%w: flac: %w", ErrRecordingFormat, err)
		}
		if len(f.Subframes) != fs.chans || f.BitsPerSample < 4 || f.BitsPerSample > 32 {
			return 0, fmt.Errorf("%w: flac: a frame of %d channels at %d bits in a stream of %d channels", ErrRecordingFormat, len(f.Subframes), f.BitsPerSample, fs.chans)
		}
		for _, sf := range f.Subframes {
			if len(sf.Samples) < int(f.BlockSize) {
				return 0, fmt.Errorf("%w: flac: a frame of %d samples holds %d", ErrRecordingFormat, f.BlockSize, len(sf.Samples))
			}
		}
		fs.f, fs.at = f, 0
	}
	f := fs.f
	scale := 1 / float32(int64(1)<<(f.BitsPerSample-1))
	n := min(len(p), int(f.BlockSize)-fs.at)
	if fs.channel != MixChannels {
		src := f.Subframes[fs.channel-1].Samples[fs.at : fs.at+n]
		for i, v := range src {
			p[i] = max(-1, min(1, float32(v)*scale))
		}
		if ref != nil {
			others := float32(len(f.Subframes) - 1)
			for i := range n {
				var v float32
				for c, sf := range f.Subframes {
					if c != fs.channel-1 {
						v += float32(sf.Samples[fs.at+i])
					}
				}
				ref[i] = max(-1, min(1, v*scale/others))
			}
		}
	} else {
		for i := range n {
			var v float32
			for _, sf := range f.Subframes {
				v += float32(sf.Samples[fs.at+i])
			}
			p[i] = max(-1, min(1, v*scale/float32(len(f.Subframes))))
		}
	}
	fs.at += n
	return n, nil
}

// openMP3 reads an MP3's first frame and returns the reader of its
// samples. go-mp3 decodes every file as two channels.
func openMP3(br *bufio.Reader, channel int) (rr *RecordingReader, err error) {
	defer func() {
		if v := recover(); v != nil {
			rr, err = nil, fmt.Errorf("%w: mp3: the decoder failed on the file: %v", ErrRecordingFormat, v)
		}
	}()
	if channel < MixChannels || channel > 2 {
		return nil, fmt.Errorf("%w: mp3: no channel %d: the file has 2", ErrRecordingFormat, channel)
	}
	// an io.Reader without Seek: the decoder then streams, rather than
	// scanning the whole file for its frames first
	d, err := mp3.NewDecoder(struct{ io.Reader }{br})
	if err != nil {
		return nil, fmt.Errorf("%w: mp3: %w", ErrRecordingFormat, err)
	}
	rate := d.SampleRate()
	if rate <= 0 || rate > maxRate {
		return nil, fmt.Errorf("%w: mp3: sample rate %d", ErrRecordingFormat, rate)
	}
	ms := &mp3Source{d: d, channel: channel}
	return &RecordingReader{rate: rate, channels: 2, channel: channel, format: "mp3", read: ms.read}, nil
}

// mp3Source streams an MP3's samples (16-bit stereo from go-mp3).
type mp3Source struct {
	d       *mp3.Decoder
	channel int
	buf     []byte
	keep    int // bytes of a partial frame kept at buf's start
}

func (m *mp3Source) read(p, ref []float32) (int, error) {
	need := 4 * len(p)
	if cap(m.buf) < need {
		nb := make([]byte, need)
		copy(nb, m.buf[:m.keep])
		m.buf = nb
	}
	m.buf = m.buf[:need]
	got, err := m.d.Read(m.buf[m.keep:])
	got += m.keep
	n := got / 4
	for i := range n {
		l := float32(int16(binary.LittleEndian.Uint16(m.buf[4*i:]))) / (1 << 15)
		r := float32(int16(binary.LittleEndian.Uint16(m.buf[4*i+2:]))) / (1 << 15)
		switch m.channel {
		case 1:
			p[i] = l
			if ref != nil {
				ref[i] = r
			}
		case 2:
			p[i] = r
			if ref != nil {
				ref[i] = l
			}
		default:
			p[i] = (l + r) / 2
		}
	}
	m.keep = copy(m.buf, m.buf[4*n:got])
	if errors.Is(err, io.EOF) {
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
	if err != nil {
		return n, fmt.Errorf("%w: mp3: %w", ErrRecordingFormat, err)
	}
	return n, nil
}

// isMP3 reports whether b starts as an MP3 file: an ID3v2 tag, or the
// sync word of an MPEG audio frame.
func isMP3(b []byte) bool {
	if len(b) >= 3 && string(b[:3]) == "ID3" {
		return true
	}
	return len(b) >= 2 && b[0] == 0xff && b[1]&0xe0 == 0xe0
}
