// Package corpus makes the recordings heard is measured on, with their
// ground truth known to the sample: assistant answers spoken chunk by chunk
// by real synthesizers (espeak-ng, flite and festival voices at several
// rates), chunked as the frameworks chunk them, played back to back as a
// player plays them with silences of known start and length where the
// token stream stalled, and the trace of that stream. Conditions then make
// of each recording what users record: noise of three colours, a second
// speaker, level changes, telephony, other rates, encodings and channels.
// Score matches what a detector found against the truth.
//
// The corpus is split for tuning and for reporting: Part says which voices,
// texts and conditions a detector may be tuned on (Tune) and which are kept
// apart to report on (HeldOut).
//
// The package is for tests: it runs the engines as processes, and the
// recordings are made when a test runs, never stored.
package corpus
