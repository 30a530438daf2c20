// Package trace reads and writes token traces: the native JSON Lines
// format (one record per line: header, turn, chunk, end), and, through
// Decoder, every other format underrun understands. Readers stream: memory
// is bounded by the turns open at once, not by the file.
package trace
