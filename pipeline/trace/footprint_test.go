package trace

import "github.com/speech-pipeline/underrun/pipeline"

// footprint sums the bytes a decoder holds on to between turns: its
// buffers and the turns it keeps open. Fuzz tests and the bad-input tests
// bound it, so that no input makes a reader hold memory out of proportion
// to it.
func footprint(d Decoder) int {
	n := 0
	sc := func(s *scanner) {
		if s != nil {
			n += cap(s.b) + cap(s.tmp)
		}
	}
	turn := func(t *pipeline.Turn) {
		n += cap(t.Chunks) * 48
		for _, c := range t.Chunks {
			n += len(c.Text)
		}
	}
	switch d := d.(type) {
	case *ColumnarReader:
		for _, s := range d.cur {
			sc(s)
		}
		n += cap(d.itl)*8 + cap(d.exact.itls)*8 + cap(d.keys)*24 + cap(d.ends)*8
	case *AIPerfReader:
		sc(d.s)
		n += cap(d.record.icl.values) * 8
	case *GenAIPerfReader:
		sc(d.s)
		sc(&d.ev)
		n += cap(d.stamps)*8 + cap(d.cb) + cap(d.rb)
		for _, r := range d.responses {
			n += len(r.content) + len(r.reasoning) + 64
		}
	case *LLMPerfReader:
		sc(d.s)
	case *GuideLLMReader:
		sc(d.s)
		n += cap(d.ends)*8 + len(d.rec.text)
		for _, s := range d.summary {
			n += len(s.Values) * 64
		}
	case *SummaryReader:
		sc(d.s)
		n += len(d.summary.Values) * 64
	case *NativeReader:
		n += d.lines.r.Size()
		for _, t := range d.turns.open {
			turn(t)
		}
	case *CaptureReader:
		n += d.lines.r.Size()
		for _, s := range d.streams.open {
			turn(&s.Turn)
			n += cap(s.parser.line) + cap(s.parser.data) + cap(s.body)
		}
	}
	return n
}
