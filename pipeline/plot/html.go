package plot

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/speech-pipeline/underrun/pipeline"
)

// DefaultTableRows is how many turns the HTML report's per-turn table
// lists (worst first) unless Page.TableRows says otherwise.
const DefaultTableRows = 1000

// Page is the content of an HTML report: one self-contained file with
// the text summary, the plots as inline SVG and the per-turn table.
type Page struct {
	// Title heads the page.
	Title string
	// Report is the run's report; WriteHTML closes it. Its per-turn lines
	// (ReportOptions.PerTurn) fill the table, its underrun list
	// (KeepUnderruns) the list of underruns.
	Report *pipeline.Report
	// Timelines are drawn one after the other (worst first, as a
	// Collector returns them).
	Timelines []Timeline
	// Tail, Fleet and Sweeps are drawn when set; the fleet view only
	// with more than one turn.
	Tail   *Tail
	Fleet  *Fleet
	Sweeps []Sweep
	// TableRows caps the per-turn table and the underrun list (0:
	// DefaultTableRows).
	TableRows int
}

// NewPage returns the page of a report and what a Collector gathered.
func NewPage(title string, r *pipeline.Report, c *Collector) Page {
	return Page{Title: title, Report: r, Timelines: c.Timelines(), Tail: c.Tail, Fleet: &c.Fleet}
}

type htmlFigure struct {
	ID, Caption string
	SVG         template.HTML
}

type htmlData struct {
	Title, Verdict string
	Pass           bool
	Reasons        []string
	Answer         *pipeline.Answer
	Summary        string
	Figures        []htmlFigure
	Turns          []pipeline.TurnReport
	TurnsOmitted   int
	Underruns      []pipeline.UnderrunReport
	UnderrunsLeft  int
}

// WriteHTML renders the page as one HTML file that needs no network.
func WriteHTML(w io.Writer, pg Page) error {
	if pg.Report == nil {
		return fmt.Errorf("plot: HTML report without a report")
	}
	r := pg.Report
	r.Close()
	rows := pg.TableRows
	if rows <= 0 {
		rows = DefaultTableRows
	}
	d := htmlData{Title: pg.Title, Verdict: r.Verdict.Result, Pass: r.Verdict.Pass(), Reasons: r.Verdict.Reasons, Answer: r.Answer}
	if d.Title == "" {
		d.Title = "underrun report"
	}
	// the summary without the answer, the verdict and the per-turn
	// table: the page has its own
	summary := *r
	summary.PerTurn = nil
	var b bytes.Buffer
	if err := summary.WriteBody(&b); err != nil {
		return err
	}
	d.Summary = b.String()
	add := func(id, caption string, f *Figure) {
		d.Figures = append(d.Figures, htmlFigure{ID: id, Caption: caption, SVG: template.HTML(f.SVG())})
	}
	if pg.Fleet != nil && len(pg.Fleet.Turns) > 1 {
		add("fleet", "Every turn as a row, worst first; each mark is an underrun, coloured by its cause.", pg.Fleet.Figure())
	}
	for i := range pg.Timelines {
		tl := &pg.Timelines[i]
		add("timeline-"+tl.Turn, "Turn "+tl.Turn+": why the listener heard silence. Hover a shaded band for the underrun's cause, ITL and tolerance.", tl.Figure())
	}
	if pg.Tail != nil && pg.Tail.Count() > 0 {
		add("tail", "The ITL distribution: the part right of a tolerance line is long enough to be heard where the tolerance is that low.", pg.Tail.Figure())
	}
	for i := range pg.Sweeps {
		f, err := pg.Sweeps[i].Figure()
		if err != nil {
			return err
		}
		add(fmt.Sprintf("sweep-%d", i+1), "How interruptions and speech goodput change with "+pg.Sweeps[i].Param+".", f)
	}
	turns := r.WorstFirst()
	if len(turns) > rows {
		d.TurnsOmitted = len(turns) - rows
		turns = turns[:rows]
	}
	d.Turns = turns
	d.Underruns = r.List
	if len(d.Underruns) > rows {
		d.UnderrunsLeft = len(d.Underruns) - rows
		d.Underruns = d.Underruns[:rows]
	}
	return pageTemplate.Execute(w, d)
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"ms": func(v *float64, prec int) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.*f", prec, *v)
	},
	"f": func(prec int, v float64) string { return fmt.Sprintf("%.*f", prec, v) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: 'Liberation Sans', Arial, Helvetica, sans-serif; margin: 24px auto; max-width: 1140px; color: #111; background: #fff; }
h1 { font-size: 24px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.verdict { display: inline-block; padding: 4px 12px; border-radius: 4px; font-weight: bold; color: #fff; }
.pass { background: #009e73; } .fail { background: #d55e00; }
ul.reasons { margin: 8px 0; }
pre { background: #f6f6f6; border: 1px solid #e2e2e2; padding: 12px; overflow-x: auto; font-size: 12px; line-height: 1.35; }
figure { margin: 16px 0; } figcaption { color: #444; font-size: 13px; margin: 4px 0 0 4px; }
svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 3px 6px; text-align: right; white-space: nowrap; }
th { background: #f2f2f2; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
tr.bad td { background: #fbe9de; }
.note { color: #555; font-size: 13px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="answer"><span class="verdict {{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}PASS{{else}}FAIL{{end}}</span> {{with .Answer}}{{.Text}}{{end}}</p>
{{with .Answer}}{{if .Findings}}<ul class="findings">{{range .Findings}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p class="note">Timing: {{.Timing.Text}}.</p>
{{if .Remedies}}<h2>What removes the interruptions of turn {{.RemediesFor}}, cheapest for the listener first</h2>
<ol class="remedies">{{range .Remedies}}{{if .Removes}}<li>{{.Text}}</li>{{end}}{{end}}</ol>
<ul class="reasons">{{range .Remedies}}{{if not .Removes}}<li>not: {{.Text}}</li>{{end}}{{end}}</ul>{{end}}{{end}}
{{if .Reasons}}<p class="note">Verdict {{if .Pass}}PASS{{else}}FAIL{{end}}:</p><ul class="reasons">{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Summary</h2>
<pre>{{.Summary}}</pre>
{{range .Figures}}<figure id="{{.ID}}">
{{.SVG}}<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}
{{if .Turns}}<h2>Turns, worst first</h2>
<table>
<thead><tr><th class="l">turn</th><th class="l">status</th><th>tokens</th><th>TTFT ms</th><th>TPOT ms</th><th>TTFA ms</th><th>speech ms</th><th>glitches</th><th>interruptions</th><th>silence ms</th><th>min tolerance ms</th><th>min pre-roll ms</th></tr></thead>
<tbody>
{{range .Turns}}<tr{{if .Interruptions.Count}} class="bad"{{end}}><td class="l">{{.Turn}}</td><td class="l">{{.Status}}</td><td>{{.Tokens}}</td><td>{{f 0 .TTFTMs}}</td><td>{{ms .TPOTMs 1}}</td><td>{{ms .TTFAMs 0}}</td><td>{{f 0 .SpeechMs}}</td><td>{{.Glitches.Count}}</td><td>{{.Interruptions.Count}}</td><td>{{f 0 .Underruns.TotalMs}}</td><td>{{ms .MinToleranceMs 0}}</td><td>{{f 0 .MinPrerollMs}}</td></tr>
{{end}}</tbody>
</table>
{{if .TurnsOmitted}}<p class="note">{{.TurnsOmitted}} more turns are left out of this table; the JSON report (--report json --per-turn) has them all.</p>{{end}}
{{end}}
{{if .Underruns}}<h2>Underruns</h2>
<table>
<thead><tr><th class="l">turn</th><th>start ms</th><th>length ms</th><th class="l">class</th><th class="l">cause</th><th class="l">where</th><th>token</th><th>ITL ms</th><th>tolerance ms</th></tr></thead>
<tbody>
{{range .Underruns}}<tr><td class="l">{{.Turn}}</td><td>{{f 1 .StartMs}}</td><td>{{f 1 .DurationMs}}</td><td class="l">{{.Class}}</td><td class="l">{{.Cause}}</td><td class="l">{{.Position}}</td><td>{{.Token}}</td><td>{{f 1 .ITLMs}}</td><td>{{f 1 .ToleranceMs}}</td></tr>
{{end}}</tbody>
</table>
{{if .UnderrunsLeft}}<p class="note">{{.UnderrunsLeft}} more underruns are left out of this list; every one is drawn in the fleet view.</p>{{end}}
{{end}}
<p class="note">Made by underrun. Colours: Okabe-Ito palette, readable with colour blindness.</p>
</body>
</html>
`))

// WriteFigureHTML writes one figure as a self-contained HTML page.
func WriteFigureHTML(w io.Writer, title string, f *Figure) error {
	return figureTemplate.Execute(w, struct {
		Title string
		SVG   template.HTML
	}{title, template.HTML(f.SVG())})
}

var figureTemplate = template.Must(template.New("figure").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body { font-family: 'Liberation Sans', Arial, Helvetica, sans-serif; margin: 24px auto; max-width: 1140px; } svg { max-width: 100%; height: auto; }</style>
</head>
<body>
{{.SVG}}
</body>
</html>
`))
