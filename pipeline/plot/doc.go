// Package plot draws what the playout engine found, so people can see why
// a listener heard silence: a turn timeline (token arrivals, chunk
// releases, synthesizer work, the buffered audio and every underrun with
// its cause), the ITL tail against the stall tolerance, a sweep of
// interruption rate and speech goodput against a swept setting, and a
// fleet view of many turns sorted by the worst.
//
// Every plot is built as a Figure, a list of drawing primitives in pixel
// coordinates, rendered as SVG (for documents and the HTML report) or PNG
// (for chat and tickets). Colours come from the Okabe-Ito palette, which
// stays distinguishable for colour-blind readers. Large inputs are
// downsampled per pixel, but no underrun is ever dropped: each one is
// drawn, alone or inside a mark that counts it.
//
// The package renders; it never prints, exits or reads flags.
package plot
