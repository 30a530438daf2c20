package tts

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/neurosnap/sentences"
	"github.com/neurosnap/sentences/data"
)

// punkt splits text into sentences as NLTK's Punkt does with its English
// punkt_tab parameters, which Pipecat's match_endofsentence calls through
// nltk.sent_tokenize. The algorithm is github.com/neurosnap/sentences (the
// plain Punkt of that module, not its "english" variant, which adds rules
// NLTK does not have) over its English parameters, which hold NLTK's
// abbreviations, collocations and orthographic context; its sentence
// starters add "she", which punkt_tab lacks, so it is dropped. The tests
// hold it to every text Pipecat asked NLTK to split on the fixture corpus
// (testdata/chunking/expect/punkt.jsonl).
type punkt struct {
	tok *sentences.DefaultSentenceTokenizer
}

var (
	punktOnce    sync.Once
	punktEnglish *punkt
)

// englishPunkt returns the shared English Punkt, loaded on first use.
func englishPunkt() *punkt {
	punktOnce.Do(func() {
		b, err := data.Asset("data/english.json")
		if err != nil {
			panic("tts: neurosnap/sentences lacks its English data: " + err.Error())
		}
		training, err := sentences.LoadTraining(b)
		if err != nil {
			panic("tts: neurosnap/sentences English data: " + err.Error())
		}
		delete(training.SentStarters, "she")
		punktEnglish = &punkt{tok: sentences.NewSentenceTokenizer(training)}
	})
	return punktEnglish
}

// spans returns NLTK's sentences of text as byte ranges: the first from
// offset 0 (leading white space included, as NLTK keeps it), each ending at
// its last character that is not white space. It calls f for each.
//
// Two differences between neurosnap and NLTK are mended here, on a copy of
// the text the library sees: NLTK's English Punkt ends sentences only at
// . ? and ! (neurosnap also at the full-width 。！？ and splits words
// there), so those and the full-width ；：， become a CJK letter of the same
// width; and NLTK takes a period directly followed by '*' (the end of
// Markdown bold, "**Yes.**") as a candidate end with '*' as the next word,
// where neurosnap sees one word, so a space goes between them.
func (p *punkt) spans(text string, f func(start, end int)) {
	seen := text
	var inserted []int // offsets in seen of the spaces added
	if strings.ContainsAny(text, "。！？；：，*") {
		var b strings.Builder
		b.Grow(len(text) + 8)
		for i, r := range text {
			_, size := utf8.DecodeRuneInString(text[i:])
			switch r {
			case '。', '！', '？', '；', '：', '，':
				b.WriteRune('一') // the same three bytes wide
				continue
			case '*':
				if i > 0 && strings.ContainsRune(".?!", rune(text[i-1])) {
					inserted = append(inserted, b.Len())
					b.WriteByte(' ')
				}
			}
			b.WriteString(text[i : i+size]) // invalid UTF-8 kept as it is
		}
		seen = b.String()
	}
	back := func(off int) int {
		n := 0
		for n < len(inserted) && inserted[n] < off {
			n++
		}
		return off - n
	}
	first := true
	for _, s := range p.tok.Tokenize(seen) {
		body := strings.TrimRightFunc(s.Text, unicode.IsSpace)
		if strings.TrimSpace(body) == "" {
			continue
		}
		start := s.Start + len(s.Text) - len(strings.TrimLeftFunc(s.Text, unicode.IsSpace))
		if first {
			start, first = 0, false
		}
		f(back(start), back(s.Start+len(body)))
	}
}

// split returns the end of the first sentence of text, as a byte offset
// (the length of NLTK's first sentence, leading white space included), and
// how many sentences NLTK finds.
func (p *punkt) split(text string) (firstEnd, count int) {
	p.spans(text, func(_, end int) {
		if count == 0 {
			firstEnd = end
		}
		count++
	})
	return firstEnd, count
}

// sentences returns NLTK's sentences of text: the first with its leading
// white space, the others without, none with trailing white space.
func (p *punkt) sentences(text string) []string {
	var out []string
	p.spans(text, func(start, end int) { out = append(out, text[start:end]) })
	return out
}
