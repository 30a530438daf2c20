package tts

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTransport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Transport
		wantErr string
	}{
		{in: "none"},
		{in: ""},
		{in: "LiveKit", want: Transports[1]},
		{in: "pipecat, idle=0, frame=20ms", want: func() Transport {
			tr := Transports[0]
			tr.Name, tr.Idle, tr.Frame = "pipecat,idle=0,frame=20ms", 0, 20*time.Millisecond
			return tr
		}()},
		{in: "websocket-raw,hold=true,pad=yes", wantErr: `pad: want true or false, got "yes"`},
		{in: "pipecat,frame=40", wantErr: `frame: want a duration such as 20ms, got "40"`},
		{in: "pipecat,jitter=20ms", wantErr: `unknown setting "jitter"`},
		{in: "pipecat,frame", wantErr: `setting "frame": want key=value`},
		{in: "pipecat,frame=15ms", wantErr: "frame 15ms must be a whole number of ticks (10ms)"},
		{in: "websocket-raw,lead=200ms", want: func() Transport {
			tr := Transports[3]
			tr.Name, tr.Lead = "websocket-raw,lead=200ms", 200*time.Millisecond
			return tr
		}()},
		{in: "pipecat,tick=-1ms", wantErr: "must not be negative"},
		{in: "websocket-raw,lead=-1ms", wantErr: "must not be negative"},
		{in: "none,frame=20ms", wantErr: "transport none takes no settings"},
		{in: "daily", wantErr: `unknown transport "daily" (known: none, pipecat, livekit, telephony-20ms, websocket-raw)`},
	}
	for _, tt := range tests {
		got, err := ParseTransport(tt.in)
		if tt.wantErr != "" {
			if err == nil || !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTransport(%q): error %v, want one with %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTransport(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestSender: frames as Pipecat's MediaSender cuts them (whole 40 ms
// frames, the rest held for the next audio, padded at the end) and as a
// drifting sender sends them.
func TestSender(t *testing.T) {
	t.Parallel()
	ms, us := time.Millisecond, time.Microsecond
	var got []Sent
	s := Transports[0].NewSender(func(f Sent) { got = append(got, f) })
	s.Add(50*ms, 0, 0)
	s.Add(25*ms, 10*ms, 1) // 35 ms held: less than a frame
	if d, ok := s.Deadline(); !ok || d != 3010*ms {
		t.Errorf("deadline %v %v, want 3.01s", d, ok)
	}
	s.End(0)
	want := []Sent{
		{Audio: 40 * ms, Length: 40 * ms, At: 0, From: 0, Chunk: 0},
		{Audio: 35 * ms, Length: 40 * ms, At: 10 * ms, From: 0, Chunk: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("pipecat: frames %+v, want %+v", got, want)
	}
	got = nil
	s = Transports[3].NewSender(func(f Sent) { got = append(got, f) })
	s.Add(50*ms, 0, 0)
	want = []Sent{
		{Audio: 20 * ms, Length: 20 * ms, At: 0},
		{Audio: 20 * ms, Length: 20 * ms, At: 20500 * us},
		{Audio: 10 * ms, Length: 10 * ms, At: 41 * ms},
	}
	if !slices.Equal(got, want) {
		t.Errorf("websocket-raw: frames %+v, want %+v", got, want)
	}
}

func FuzzParseTransport(f *testing.F) {
	for _, s := range []string{"pipecat", "livekit,idle=1s", "websocket-raw,overshoot=1ms,hold=true", "telephony-20ms,tick=0,frame=7ms", "websocket-raw,lead=20ms", "none", "x,=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTransport(s)
		if err != nil {
			if !errors.Is(err, ErrTransport) {
				t.Fatalf("ParseTransport(%q): error %v is not ErrTransport", s, err)
			}
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("ParseTransport(%q) returned an invalid transport: %v", s, err)
		}
		if !tr.None() {
			back, err := ParseTransport(tr.Name)
			if err != nil || back != tr {
				t.Fatalf("ParseTransport(%q) = %+v, but its name reads back as %+v, %v", s, tr, back, err)
			}
		}
	})
}
