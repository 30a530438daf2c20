// Package corpus makes the recordings heard is measured on, with their
// ground truth known to the sample: assistant answers spoken chunk by chunk
// by real synthesizers (espeak-ng, flite and festival voices at several
// rates), chunked as the frameworks chunk them, played back to back as a
// player plays them with silences of known start and length where the
// token stream stalled, and the trace of that stream; held out beside them,
// recordings at rates beyond those, and of several turns, one cut short by
// a barge-in. Conditions then make of each recording what users record:
// noise of three colours, a second speaker, babble and music, level
// changes, clipping and gain controls, mains hum and a DC offset, rooms,
// telephony's band, other rates, encodings and channels, lossy codecs
// (MP3, GSM 06.10, Opus) and packet-loss dropouts, alone and chained as
// calls chain them. Score matches what a detector found against the truth.
//
// The corpus is split for tuning and for reporting: Part says which voices,
// texts, kinds of recording and conditions a detector may be tuned on
// (Tune) and which are kept apart to report on (HeldOut).
//
// The package is for tests: it runs the engines as processes, and the
// recordings are made when a test runs, never stored.
package corpus
