// Package tokens splits text into the pieces an LLM streams it in, and
// gives words to tokens whose text was not recorded. It is text, not
// simulation or speech: the simulator (sim) streams its texts in these
// pieces, the mock server (pipeline/openai) sends them and counts prompts
// with them, and `underrun speak` speaks filler words for text-less
// tokens of a recorded trace, as the mock streams them.
package tokens
