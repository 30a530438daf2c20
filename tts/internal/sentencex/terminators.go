package sentencex

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// terminators are the characters other than . ! ? that end a sentence:
// sentencex's table (Unicode's Sentence_Break STerm and ATerm as its
// authors generated it, with the ideographic full stops added by hand).
var terminators = func() []rune {
	t := []rune{
		0x0589, 0x061D, 0x061E, 0x061F, 0x06D4, 0x0700, 0x0701, 0x0702, 0x07F9, 0x0837, 0x0839, 0x083D, 0x083E,
		0x0964, 0x0965, 0x104A, 0x104B, 0x1362, 0x1367, 0x1368, 0x166E, 0x1735, 0x1736, 0x1803, 0x1809, 0x1944,
		0x1945, 0x1AA8, 0x1AA9, 0x1AAA, 0x1AAB, 0x1B5A, 0x1B5B, 0x1B5E, 0x1B5F, 0x1B7D, 0x1B7E, 0x1C3B, 0x1C3C,
		0x1C7E, 0x1C7F, 0x2024, 0x203C, 0x203D, 0x2047, 0x2048, 0x2049, 0x2E2E, 0x2E3C, 0x2E53, 0x2E54, 0xA4FF,
		0xA60E, 0xA60F, 0xA6F3, 0xA6F7, 0xA876, 0xA877, 0xA8CE, 0xA8CF, 0xA92F, 0xA9C8, 0xA9C9, 0xAA5D, 0xAA5E,
		0xAA5F, 0xAAF0, 0xAAF1, 0xABEB, 0xFE52, 0xFE56, 0xFE57, 0xFF01, 0xFF0E, 0xFF1F, 0x10A56, 0x10A57,
		0x10F55, 0x10F56, 0x10F57, 0x10F58, 0x10F59, 0x10F86, 0x10F87, 0x10F88, 0x10F89, 0x11047, 0x11048,
		0x110BE, 0x110BF, 0x110C0, 0x110C1, 0x11141, 0x11142, 0x11143, 0x111C5, 0x111C6, 0x111CD, 0x111DE,
		0x111DF, 0x11238, 0x11239, 0x1123B, 0x1123C, 0x112A9, 0x1144B, 0x1144C, 0x115C2, 0x115C3, 0x115C9,
		0x115CA, 0x115CB, 0x115CC, 0x115CD, 0x115CE, 0x115CF, 0x115D0, 0x115D1, 0x115D2, 0x115D3, 0x115D4,
		0x115D5, 0x115D6, 0x115D7, 0x11641, 0x11642, 0x1173C, 0x1173D, 0x1173E, 0x11944, 0x11946, 0x11A42,
		0x11A43, 0x11A9B, 0x11A9C, 0x11C41, 0x11C42, 0x11EF7, 0x11EF8, 0x11F43, 0x11F44, 0x16A6E, 0x16A6F,
		0x16AF5, 0x16B37, 0x16B38, 0x16B44, 0x16E98, 0x1BC9F, 0x1DA88,
		0x3002, 0xFF61, // ideographic full stops
	}
	slices.Sort(t)
	return t
}()

// isTerminator reports whether r ends a sentence for sentencex.
func isTerminator(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '.' || r == '!' || r == '?'
	}
	_, found := slices.BinarySearch(terminators, r)
	return found
}

const ellipsis = '…'

// span is a byte range [start, end).
type span struct{ start, end int }

// terminatorAt returns the end of the run of sentence punctuation that
// starts at i, or false: three or more periods apart by spaces or tabs
// (". . ."), two or more of ! ? … apart by spaces or tabs ("! ?"), or
// terminators one after another ("?!", "..."). A lone … is no terminator.
func terminatorAt(text string, i int) (int, bool) {
	r, size := utf8.DecodeRuneInString(text[i:])
	switch r {
	case '.':
		if end, ok := spacedRun(text, i+size, func(r rune) bool { return r == '.' }, 3); ok {
			return end, true
		}
	case '!', '?', ellipsis:
		if end, ok := spacedRun(text, i+size, func(r rune) bool { return r == '!' || r == '?' || r == ellipsis }, 2); ok {
			return end, true
		}
	}
	if !isTerminator(r) {
		return 0, false
	}
	end := i + size
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !isTerminator(r) {
			break
		}
		end += size
	}
	return end, true
}

// spacedRun extends a run whose first member ends at end by members that
// follow after one or more spaces or tabs; it returns the run's end if it
// has least members.
func spacedRun(text string, end int, member func(rune) bool, least int) (int, bool) {
	n := 1
	for {
		k := end
		for k < len(text) && isBlank(text[k]) {
			k++
		}
		if k == end || k == len(text) {
			break
		}
		r, size := utf8.DecodeRuneInString(text[k:])
		if !member(r) {
			break
		}
		n++
		end = k + size
	}
	return end, n >= least
}

// terminatorRuns returns the runs of sentence punctuation in text, in
// order; a run of periods apart by blanks right after a ! ? or … run joins
// it ("Bravo ! .", "Happy! . . .").
func terminatorRuns(text string) []span {
	var out []span
	for i := 0; i < len(text); {
		end, ok := terminatorAt(text, i)
		if !ok {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		if n := len(out); n > 0 && joinsRun(text, out[n-1], span{i, end}) {
			out[n-1].end = end
		} else {
			out = append(out, span{i, end})
		}
		i = end
	}
	return out
}

func joinsRun(text string, prev, next span) bool {
	if r, _ := lastRune(text[prev.start:prev.end]); r != '!' && r != '?' && r != ellipsis {
		return false
	}
	run := text[next.start:next.end]
	if run[0] != '.' || strings.Trim(run, ". \t") != "" {
		return false
	}
	gap := text[prev.end:next.start]
	return gap != "" && strings.Trim(gap, " \t") == ""
}
