package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// ErrAudio reports a byte stream that is not audio this package reads.
// Errors wrapping it say where in the stream and what was expected.
var ErrAudio = errors.New("invalid audio stream")

// MaxHeader bounds the bytes a WAV stream may carry before its samples
// (format, metadata chunks): more is an error, not a reason to buffer.
const MaxHeader = 1 << 20

// readSize is how much a Reader asks of its source at a time: 2,048
// samples of 16-bit mono, 85 ms at 24 kHz.
const readSize = 4096

// Reader decodes audio from a byte stream as the bytes come: a WAV stream
// (a RIFF header, then PCM samples; a data size that is 0 or at least
// 0x7FFFF000 means "until the stream ends", as streaming writers and
// espeak-ng put it) or raw 16-bit little-endian PCM at a known rate. WAV
// samples may be 8-, 16-, 24- or 32-bit integers or 32-bit floats, in up
// to 8 channels, which are mixed down to mono. Each Next returns the
// samples of one read of the source, stamped with when the read returned.
// A Reader is not safe for concurrent use.
type Reader struct {
	src      io.Reader
	wav      bool
	header   bool // the WAV header has been read (raw PCM: from the start)
	rate     int
	channels int
	bits     int
	float    bool
	frame    int   // bytes per frame (all channels)
	left     int64 // data bytes the header announced and not yet read; -1 until the end
	offset   int64 // bytes of the stream consumed so far
	pending  []byte
	buf      []byte
	err      error
	// Now stamps each piece (default time.Now).
	Now func() time.Time
}

// NewWAVReader returns a Reader of a WAV stream.
func NewWAVReader(r io.Reader) *Reader {
	return &Reader{src: r, wav: true, left: -1}
}

// NewPCMReader returns a Reader of raw signed 16-bit little-endian mono
// samples at rate (the "pcm" response format of OpenAI's speech API, at
// 24 kHz).
func NewPCMReader(r io.Reader, rate int) *Reader {
	return &Reader{src: r, header: true, rate: rate, channels: 1, bits: 16, frame: 2, left: -1}
}

// Rate returns the sample rate, or 0 while a WAV header has not been read.
func (d *Reader) Rate() int {
	if !d.header {
		return 0
	}
	return d.rate
}

// Next returns the samples of the next read, or io.EOF at the end of the
// stream (or of the data the WAV header announced). A stream that ends
// inside its header, inside a sample, or before the data its header
// announced is an error wrapping io.ErrUnexpectedEOF; other errors of the
// source are returned as they are. Errors are final.
func (d *Reader) Next() (Piece, error) {
	if d.err != nil {
		return Piece{}, d.err
	}
	if d.header && d.rate <= 0 {
		d.err = fmt.Errorf("%w: sample rate %d", ErrAudio, d.rate)
		return Piece{}, d.err
	}
	if d.buf == nil {
		d.buf = make([]byte, readSize)
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	for {
		if d.left == 0 {
			d.err = io.EOF
			return Piece{}, d.err
		}
		n, rerr := d.src.Read(d.buf)
		at := now()
		if n > 0 {
			d.pending = append(d.pending, d.buf[:n]...)
			if !d.header {
				if err := d.readHeader(); err != nil {
					d.err = err
					return Piece{}, err
				}
			}
			if d.header {
				if p, ok := d.decode(at); ok {
					return p, nil
				}
			}
		}
		if rerr == nil {
			continue
		}
		d.err = d.end(rerr)
		return Piece{}, d.err
	}
}

// end turns the source's final error into the Reader's.
func (d *Reader) end(err error) error {
	if err != io.EOF {
		return err
	}
	switch {
	case !d.header:
		return fmt.Errorf("%w: %w: the stream ended after %d bytes, inside its WAV header", ErrAudio, io.ErrUnexpectedEOF, d.offset+int64(len(d.pending)))
	case len(d.pending) > 0:
		return fmt.Errorf("%w: %w: the stream ended %d bytes into a %d-byte sample frame", ErrAudio, io.ErrUnexpectedEOF, len(d.pending), d.frame)
	case d.left > 0:
		return fmt.Errorf("%w: %w: the stream ended %d bytes before the end of the data its header announced", ErrAudio, io.ErrUnexpectedEOF, d.left)
	}
	return io.EOF
}

// decode turns the whole frames pending into a piece.
func (d *Reader) decode(at time.Time) (Piece, bool) {
	avail := len(d.pending)
	if d.left >= 0 && int64(avail) > d.left {
		avail = int(d.left) // bytes after the announced data are not audio
	}
	frames := avail / d.frame
	if frames == 0 {
		if d.left >= 0 && d.left < int64(d.frame) {
			d.left = 0
		}
		return Piece{}, false
	}
	n := frames * d.frame
	p := Piece{Samples: make([]float32, frames), Rate: d.rate, At: at}
	b := d.pending[:n]
	width := d.bits / 8
	for i := range frames {
		var sum float64
		for c := range d.channels {
			sum += d.sample(b[(i*d.channels+c)*width:])
		}
		p.Samples[i] = float32(sum / float64(d.channels))
	}
	d.offset += int64(n)
	if d.left >= 0 {
		d.left -= int64(n)
	}
	d.pending = append(d.pending[:0], d.pending[n:]...)
	if d.left == 0 {
		d.pending = d.pending[:0]
	}
	return p, true
}

// sample decodes one sample at the start of b.
func (d *Reader) sample(b []byte) float64 {
	switch {
	case d.float:
		v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		if math.IsNaN(v) {
			return 0
		}
		return max(-1, min(1, v))
	case d.bits == 8:
		return (float64(b[0]) - 128) / 128
	case d.bits == 16:
		return float64(int16(binary.LittleEndian.Uint16(b))) / (1 << 15)
	case d.bits == 24:
		v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
		return float64(v) / (1 << 23)
	}
	return float64(int32(binary.LittleEndian.Uint32(b))) / (1 << 31)
}

// unknownSize is the smallest data size taken as "until the stream ends".
const unknownSize = 0x7FFFF000

// readHeader parses as much of the WAV header as is pending; once it has
// reached the samples, header is set and pending holds only samples.
func (d *Reader) readHeader() error {
	b := d.pending
	if len(b) < 12 {
		return nil
	}
	if string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return fmt.Errorf("%w: not a RIFF/WAVE stream (it starts %q)", ErrAudio, printable(b[:12]))
	}
	off := 12
	for {
		if off > MaxHeader {
			return fmt.Errorf("%w: no audio data in the first %d bytes", ErrAudio, MaxHeader)
		}
		if len(b) < off+8 {
			return d.needMore(off + 8)
		}
		id := string(b[off : off+4])
		size := int64(binary.LittleEndian.Uint32(b[off+4 : off+8]))
		if id == "data" {
			if d.frame == 0 {
				return fmt.Errorf("%w: data chunk at byte %d before the format chunk", ErrAudio, off)
			}
			d.left = size
			if size == 0 || size >= unknownSize {
				d.left = -1
			}
			d.header = true
			d.offset = int64(off + 8)
			d.pending = append(d.pending[:0], b[off+8:]...)
			return nil
		}
		if size > MaxHeader {
			return fmt.Errorf("%w: %q chunk of %d bytes at byte %d, before any audio", ErrAudio, printable(b[off:off+4]), size, off)
		}
		end := off + 8 + int(size) + int(size%2)
		if id == "fmt " {
			if len(b) < off+8+int(size) {
				return d.needMore(end)
			}
			if err := d.format(b[off+8:off+8+int(size)], off); err != nil {
				return err
			}
		}
		off = end
	}
}

func (d *Reader) needMore(upTo int) error {
	if upTo > MaxHeader+8 {
		return fmt.Errorf("%w: no audio data in the first %d bytes", ErrAudio, MaxHeader)
	}
	return nil
}

// format reads a format chunk that starts at byte off.
func (d *Reader) format(body []byte, off int) error {
	if len(body) < 16 {
		return fmt.Errorf("%w: format chunk at byte %d has %d bytes, want at least 16", ErrAudio, off, len(body))
	}
	kind := binary.LittleEndian.Uint16(body[0:])
	channels := int(binary.LittleEndian.Uint16(body[2:]))
	rate := binary.LittleEndian.Uint32(body[4:])
	frame := int(binary.LittleEndian.Uint16(body[12:]))
	bits := int(binary.LittleEndian.Uint16(body[14:]))
	if kind == 0xFFFE && len(body) >= 26 {
		kind = binary.LittleEndian.Uint16(body[24:]) // the sub-format GUID starts with the format
	}
	float := kind == 3
	switch {
	case kind != 1 && kind != 3:
		return fmt.Errorf("%w: format %#x at byte %d, want PCM (1) or IEEE float (3)", ErrAudio, kind, off)
	case channels < 1 || channels > 8:
		return fmt.Errorf("%w: %d channels, want 1 to 8", ErrAudio, channels)
	case float && bits != 32, !float && bits != 8 && bits != 16 && bits != 24 && bits != 32:
		return fmt.Errorf("%w: %d-bit samples, want 8, 16, 24 or 32 (float: 32)", ErrAudio, bits)
	case frame != channels*bits/8:
		return fmt.Errorf("%w: %d bytes per frame, want %d channels x %d bits", ErrAudio, frame, channels, bits)
	case rate == 0 || rate > 1_000_000:
		return fmt.Errorf("%w: sample rate %d, want 1 to 1000000", ErrAudio, rate)
	}
	d.rate, d.channels, d.bits, d.float, d.frame = int(rate), channels, bits, float, frame
	return nil
}

// printable quotes bytes for an error message.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}
