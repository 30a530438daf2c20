// Package sentencex splits English text into sentences as the Rust library
// sentencex 1.0.32 does with its English rules (github.com/wikimedia/sentencex,
// the `segment` function), which Pipecat asks from release 1.12.0 on whether
// a streamed sentence has ended (pipecat-ai 1.12.0 pins sentencex 1.0.31,
// 1.14.0 pins 1.0.32; their English rules are the same).
//
// The rules were reproduced by reading the library's source as published on
// PyPI (sentencex-1.0.32.tar.gz: src/languages/language.rs, quotes.rs,
// list_markers.rs, trailing_markers.rs, fronting.rs, en.rs, constants.rs);
// the word lists in english/ are the library's own English data (MIT
// licence, english/LICENSE). The tests hold Segment to what the library
// returns, run from Pipecat's virtual environment, on every text Pipecat
// asked it about on the chunking fixtures and on a corpus of varied texts
// (tts/testdata/chunking/expect/sentencex.jsonl).
//
// Where the Rust code depends on details of its regular-expression engine,
// the behaviour is written out by hand: Unicode word boundaries (\b, \B),
// leftmost-first alternation of the quote patterns, lazy repetition. Where
// the library looks up ranges by binary search in a list that is not
// always sorted, the same search is made (partitionPoint), as its result
// decides which quotation marks may pair.
package sentencex
