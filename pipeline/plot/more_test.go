package plot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestSafeLimit(t *testing.T) {
	t.Parallel()
	pts := []SweepPoint{{Value: 80, Goodput: 0.8}, {Value: 20, Goodput: 1}, {Value: 60, Goodput: 0.96}, {Value: 40, Goodput: 0.99}, {Value: 100, Goodput: 0.97}}
	for _, tc := range []struct {
		name       string
		slo        float64
		increasing bool
		want       float64
		ok         bool
	}{
		{"stops at the first miss", 0.95, false, 60, true},
		{"every value safe", 0.5, false, 100, true},
		{"none safe", 1.01, false, 0, false},
		{"increasing: from the top down", 0.95, true, 100, true},
		{"increasing: all", 0.5, true, 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := SafeLimit(pts, tc.slo, tc.increasing)
			if got != tc.want || ok != tc.ok {
				t.Errorf("SafeLimit = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSweepValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    Sweep
		want string
	}{
		{"no points", Sweep{}, "no points"},
		{"NaN value", Sweep{Points: []SweepPoint{{Value: math.NaN()}}}, "point 0: value"},
		{"goodput above 1", Sweep{Points: []SweepPoint{{Value: 1, Goodput: 1.5}}}, "speech goodput"},
		{"negative rate", Sweep{Points: []SweepPoint{{Value: 1, InterruptionsPerMinute: -1}}}, "interruptions per minute"},
		{"bad SLO", Sweep{GoodputSLO: 2, Points: []SweepPoint{{Value: 1}}}, "goodput SLO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.s.Figure()
			if !errors.Is(err, ErrSweep) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Figure error = %v, want ErrSweep mentioning %q", err, tc.want)
			}
		})
	}
}

// FuzzSweep feeds arbitrary sweep JSON to the sweep plot: it must render
// or return an error, never panic.
func FuzzSweep(f *testing.F) {
	f.Add([]byte(`{"param":"TPOT","unit":"ms","points":[{"value":20,"speech_goodput":1},{"value":60,"interruptions_per_minute":2,"speech_goodput":0.5}],"goodput_slo":0.9}`))
	f.Add([]byte(`{"points":[{"value":1}]}`))
	f.Add([]byte(`{"points":[{"value":1e308},{"value":-1e308}],"increasing":true}`))
	f.Add([]byte(`{"points":[{"value":1e16}]}`)) // its axis looped for ever, memory growing
	f.Add([]byte(`{"points":[{"value":5e-324},{"value":1.7976931348623157e308,"interruptions_per_minute":1.7976931348623157e308}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sweep
		if json.Unmarshal(data, &s) != nil {
			return
		}
		fig, err := s.Figure()
		if err != nil {
			return
		}
		if err := fig.WriteSVG(&bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTailCCDF(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	exact, binned := NewTail(0), NewTail(0)
	var values []float64
	for range exactLimit + 5000 {
		v := math.Exp(rng.NormFloat64()) * 40
		values = append(values, v)
		binned.AddITL(v)
	}
	for _, v := range values[:1000] {
		exact.AddITL(v)
	}
	if binned.bins == nil || exact.bins != nil {
		t.Fatal("the tail did not switch to bins past exactLimit")
	}
	for _, tc := range []struct {
		name string
		tail *Tail
		vals []float64
		tol  float64 // bins are 1/50 decade wide
	}{
		{"exact", exact, values[:1000], 0},
		{"binned", binned, values, 0.002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pts := tc.tail.CCDF()
			if pts[1] != 1 {
				t.Errorf("CCDF starts at %v, want 1", pts[1])
			}
			for i := 3; i < len(pts); i += 2 {
				if pts[i] > pts[i-2] || pts[i-1] < pts[i-3] {
					t.Fatalf("CCDF not monotone at point %d", i/2)
				}
			}
			for _, ms := range []float64{10, 40, 100, 300} {
				n := 0
				for _, v := range tc.vals {
					if v >= ms {
						n++
					}
				}
				want := float64(n) / float64(len(tc.vals))
				if got := tc.tail.Exceeding(ms); math.Abs(got-want) > tc.tol+0.01 {
					t.Errorf("Exceeding(%v) = %v, want %v", ms, got, want)
				}
			}
		})
	}
}

func TestTailTolerancePhases(t *testing.T) {
	t.Parallel()
	tail := NewTail(time.Second)
	turn := seededTurn("calm", 9, 60*time.Millisecond, nil)
	p := played(t, turn, pipeline.DefaultConfig())
	tail.Add(turn, p)
	if len(tail.StartTolerance) != 1 || len(tail.SteadyTolerance) != 1 {
		t.Fatalf("want one start and one steady tolerance, got %v and %v", tail.StartTolerance, tail.SteadyTolerance)
	}
	if !(tail.StartTolerance[0] < tail.SteadyTolerance[0]) {
		t.Errorf("start tolerance %v ms should be below steady %v ms: the buffer is thin at the start", tail.StartTolerance[0], tail.SteadyTolerance[0])
	}
	if got, want := tail.Count(), int64(len(turn.Chunks)-1); got != want {
		t.Errorf("Count = %d ITLs, want %d", got, want)
	}
}

func TestCollectorKeepsWorst(t *testing.T) {
	t.Parallel()
	_, r, c := fleetTurns(t, 12, pipeline.DefaultConfig())
	tls := c.Timelines()
	if len(tls) != DefaultTimelines {
		t.Fatalf("kept %d timelines, want %d", len(tls), DefaultTimelines)
	}
	silence := map[string]float64{}
	worst := 0.0
	for _, tr := range r.PerTurn {
		silence[tr.Turn] = tr.Interruptions.TotalMs
		worst = max(worst, tr.Interruptions.TotalMs)
	}
	if got := silence[tls[0].Turn]; got != worst {
		t.Errorf("first timeline %s has %v ms of interruptions, the worst turn %v", tls[0].Turn, got, worst)
	}
	for i := 1; i < len(tls); i++ {
		if silence[tls[i].Turn] > silence[tls[i-1].Turn] {
			t.Errorf("timelines not worst first: %s after %s", tls[i].Turn, tls[i-1].Turn)
		}
	}
}

func TestTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi float64
		n      int
		want   string
	}{
		{0, 10, 5, "[0 2 4 6 8 10]"},
		{0, 22.5, 10, "[0 2.5 5 7.5 10 12.5 15 17.5 20 22.5]"},
		{0, 1, 5, "[0 0.2 0.4 0.6 0.8 1]"},
	} {
		if got := fmt.Sprint(linTicks(tc.lo, tc.hi, tc.n)); got != tc.want {
			t.Errorf("linTicks(%v, %v, %d) = %s, want %s", tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
	if got, want := fmt.Sprint(logTicks(0.5, 2000)), "[1 10 100 1000]"; got != want {
		t.Errorf("logTicks = %s, want %s", got, want)
	}
	if got, want := percentTick(0.001), "0.1%"; got != want {
		t.Errorf("percentTick(0.001) = %q, want %q", got, want)
	}
}

func TestWriteHTML(t *testing.T) {
	t.Parallel()
	_, r, c := fleetTurns(t, 12, pipeline.DefaultConfig())
	pg := NewPage("seeded <fleet>", r, c)
	pg.TableRows = 5
	var b bytes.Buffer
	if err := WriteHTML(&b, pg); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		"<title>seeded &lt;fleet&gt;</title>", "underrun report: 12 turns", `<figure id="fleet">`,
		`<figure id="tail">`, `id="timeline-` + pg.Timelines[0].Turn + `"`, "7 more turns are left out",
		"Turns, worst first",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, banned := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("HTML refers to the network (%q)", banned)
		}
	}
	if err := WriteHTML(&b, Page{}); err == nil {
		t.Error("WriteHTML without a report gave no error")
	}
	// the header answers first, before the summary's tables: the answer's
	// line, its timing and the remedies of the worst turn
	r.Close()
	a := r.Answer
	head := html[:strings.Index(html, "<h2>Summary</h2>")]
	for _, want := range []string{
		`<p class="answer"><span class="verdict fail">FAIL</span> ` + template.HTMLEscapeString(a.Text) + "</p>",
		"Timing: " + template.HTMLEscapeString(a.Timing.Text),
		"<h2>What removes the interruptions of turn " + a.RemediesFor + ", cheapest for the listener first</h2>",
		"<li>" + template.HTMLEscapeString(a.Remedies[0].Text) + "</li>",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the HTML header lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(html, "<pre>FAIL:") || strings.Count(html, "verdict: FAIL") > 0 {
		t.Errorf("the summary repeats the answer or the verdict")
	}
}

// TestWordsCounted: figures count what they show in words that agree with
// the number ("1 pause of the voice", "10 pauses of the voice", "1
// underrun").
func TestWordsCounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		marks int
		want  string
	}{{1, "0 gaps, 1 pause of the voice"}, {10, "0 gaps, 10 pauses of the voice"}} {
		w := Waveform{Min: make([]float32, 100), Max: make([]float32, 100), Step: 10 * time.Millisecond, Duration: time.Second}
		for i := range tc.marks {
			w.Marks = append(w.Marks, WaveMark{Start: time.Duration(i) * 50 * time.Millisecond, End: time.Duration(i)*50*time.Millisecond + 20*time.Millisecond})
		}
		if svg := HeardFigure(w, nil, nil).SVG(); !strings.Contains(svg, tc.want) {
			t.Errorf("%d marks: the figure does not say %q", tc.marks, tc.want)
		}
	}
	if got := plural(1, "underrun"); got != "1 underrun" {
		t.Errorf("plural(1) = %q", got)
	}
}

// TestScreenshot renders the HTML report in headless Chromium and checks
// that the screenshot has the expected size and real content. Set
// UNDERRUN_SCREENSHOT_DIR to keep the screenshot.
func TestScreenshot(t *testing.T) {
	t.Parallel()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Skip("chromium is not installed; skipping the HTML screenshot test")
		}
		chromium = "/usr/bin/chromium"
	}
	if testing.Short() {
		t.Skip("screenshot skipped in -short mode")
	}
	_, r, c := fleetTurns(t, 12, pipeline.DefaultConfig())
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, NewPage("underrun report: seeded fleet", r, c)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1280,2000",
		"file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if keep := os.Getenv("UNDERRUN_SCREENSHOT_DIR"); keep != "" {
		if err := os.WriteFile(filepath.Join(keep, "report.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	size, colours, ink := pixelVariety(t, png)
	if size.X != 1280 || size.Y != 2000 {
		t.Errorf("screenshot is %v, want 1280x2000", size)
	}
	if len(png) < 50<<10 || colours < 30 || ink < 0.05 {
		t.Errorf("screenshot looks blank: %d bytes, %d colours, %.1f%% ink", len(png), colours, 100*ink)
	}
}

// TestEmptyInputs draws every plot of inputs with nothing in them: no
// panic, well-formed SVG.
func TestEmptyInputs(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	empty := &pipeline.Turn{ID: "empty"}
	thinking := &pipeline.Turn{ID: "thinking", Chunks: []pipeline.Chunk{{At: time.Second, Text: "hmm", Reasoning: true}}}
	c := NewCollector(0, 0)
	var figs []*Figure
	for _, turn := range []*pipeline.Turn{empty, thinking} {
		p := played(t, turn, cfg)
		c.Add(turn, p)
		tl := NewTimeline(turn, p)
		figs = append(figs, tl.Figure())
	}
	c.Add(&pipeline.Turn{ID: "unplayed"}, nil)
	var fl Fleet
	figs = append(figs, c.Tail.Figure(), c.Fleet.Figure(), NewTail(0).Figure(), fl.Figure())
	for i, f := range figs {
		b := svgOf(t, f)
		if err := xmlWellFormed(b); err != nil {
			t.Errorf("figure %d: %v", i, err)
		}
	}
}
