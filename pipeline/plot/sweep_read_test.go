package plot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
)

// sweepJSON writes a sweep of n runs over TPOT 20-120 ms as a sweep file.
func sweepJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"param":"TPOT","unit":"ms","goodput_slo":0.99,"points":[`)
	for i := range n {
		v := 20 + 100*float64(i)/float64(n)
		g, r := 1.0, 0.0
		if v > 60 {
			g, r = 1-(v-60)/200, (v-60)*0.05
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"value":%.6f,"interruptions_per_minute":%.6f,"speech_goodput":%.6f}`, v, r, g)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestSweepOfManyPointsBounded: a sweep of 300,000 runs (issue 45: 2
// million, a 158 MB file, ran out of memory) is read point by point and
// drawn as each line's lowest and highest run per pixel column: what it
// allocates grows with the runs by a few dozen bytes each, the SVG is as
// large as for 3,000 runs, and the safe limit is the exact one. Not
// parallel: it measures allocation.
func TestSweepOfManyPointsBounded(t *testing.T) {
	var sizes []int
	for _, n := range []int{3000, 300_000} {
		in := sweepJSON(n)
		var svg bytes.Buffer
		var s *Sweep
		var err error
		mem := memtest.Allocated(func() {
			if s, err = ReadSweep(bytes.NewReader(in)); err != nil {
				return
			}
			var f *Figure
			if f, err = s.Figure(); err == nil {
				err = f.WriteSVG(&svg)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Points) != n {
			t.Fatalf("%d points read, want %d", len(s.Points), n)
		}
		perPoint := float64(mem) / float64(n)
		t.Logf("%d runs: %.0f bytes allocated a run, SVG %d bytes", n, perPoint, svg.Len())
		if n > maxMarkedPoints && perPoint > 400 {
			t.Errorf("%d runs: %.0f bytes allocated a run (the file is %d a run); want a few dozen", n, perPoint, len(in)/n)
		}
		want, _ := SafeLimit(s.Points, 0.99, false)
		if !strings.Contains(svg.String(), fmt.Sprintf("largest safe TPOT: %.4g ms", want)) {
			t.Errorf("%d runs: the plot does not mark the safe limit %.4g", n, want)
		}
		sizes = append(sizes, svg.Len())
	}
	if sizes[1] > 2*sizes[0] {
		t.Errorf("the SVG of 300,000 runs is %d bytes, of 3,000 runs %d: want no larger", sizes[1], sizes[0])
	}
}

// TestReadSweepErrors: what is not a sweep is refused with the field or
// point named.
func TestReadSweepErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`[]`, "want a JSON object"},
		{`{"points":[{"value":1,"colour":2}]}`, `point 0: json: unknown field "colour"`},
		{`{"points":{}}`, `want an array of points for "points"`},
		{`{"param":3}`, `field "param"`},
		{`{"extra":1}`, `unknown field "extra"`},
		{`{"points":[{"value":1}`, "want"},
	} {
		if _, err := ReadSweep(strings.NewReader(tc.in)); !errors.Is(err, ErrSweep) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrSweep saying %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReadSweep: any input is read or refused, never a panic; what is
// read is what encoding/json reads from it, and it draws.
func FuzzReadSweep(f *testing.F) {
	f.Add(sweepJSON(3))
	f.Add([]byte(`{"param":"TPOT","unit":"ms","points":[{"value":20,"speech_goodput":1}],"goodput_slo":0.9,"increasing":true,"safe":3,"has_safe":true}`))
	f.Add([]byte(`{"points":[{"value":1e16}]}`))
	f.Add([]byte(`{"points":[1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSweep(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrSweep) {
				t.Fatalf("error %v is not ErrSweep", err)
			}
			return
		}
		var want Sweep
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&want) == nil && len(want.Points) != len(s.Points) {
			t.Fatalf("read %d points, encoding/json %d", len(s.Points), len(want.Points))
		}
		if fig, err := s.Figure(); err == nil {
			if err := fig.WriteSVG(&bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
