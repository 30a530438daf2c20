package pipeline

import (
	"math"
	"time"
)

// tolerance computes, for every streamed chunk k, the largest delay d of
// all chunks after k that adds no underrun time. Delaying them delays the
// release s_c of every speech chunk c released by a later chunk. The
// turn's silence is its last play end minus start and audio, and the last
// play end is the maximum over c of (first audio of c + its play time +
// the audio after it), so nothing is added when every delayed chunk's
// first audio R'_c stays at or before L_c, the latest first-audio time
// that keeps the last play end (with no gap after c, DESIGN.md's
// e_{c-1} - a_c). Every mode makes R'_c = max(s_c + d + l_c, R'_{c-1} +
// G_c), with l_c the chunk's latency (Playout.latency) and G_c the chain
// from the chunk before: its production time plus, in request mode, the
// time to first audio of the next request (D_{c-1} - R_{c-1} + TTFA); in
// stream mode its production time (D_{c-1} - R_{c-1}); in parallel mode
// no chain at all. Per first delayed chunk c0 this gives d <= min_{k >=
// c0} (M_k - l_k - s_k) with M_k = min(L_k, M_{k+1} - G_{k+1}): one
// backward pass, O(n). When the player has not started before c0 the start
// moves with the delay: the answer is Unbounded if no chunk waited for the
// synthesizer (and the start waited for no earlier chunk), and otherwise
// this bound, which is then conservative.
//
// A tool-call silence is no underrun (CauseTool), so it splits the turn
// into segments, each ended as its own turn: the player drained before
// the segment after it, which starts when its first chunk is ready. A
// delay from inside a segment must keep that segment's last play end; a
// delay from a segment's first chunk on moves the whole segment (the
// synthesizer was idle: its audio had all played) and only lengthens the
// tool-call silence. Unless a filler phrase holds the segment back
// (Config.Filler): its start then stays at the phrase's end while a delay
// is shorter than the hold, so the segment's first chunk is bounded as
// any other (its bound, when it reaches the hold, is none: beyond it the
// segment moves whole), and so is every chunk before it (heldCap).
func (p *Playout) tolerance() {
	n := len(p.at)
	C := len(p.Chunks)
	if cap(p.Tolerance) >= n {
		p.Tolerance = p.Tolerance[:n]
	} else {
		p.Tolerance = make([]time.Duration, n)
	}
	if C == 0 {
		for i := range p.Tolerance {
			p.Tolerance[i] = Unbounded
		}
		return
	}
	chunks, tol := p.Chunks, p.Tolerance
	startChunk := p.startChunk
	parallel := p.mode == modeParallel
	var chain time.Duration // besides production, between chunks: request mode's next time to first audio
	if p.mode == modeRequest {
		chain = p.cfg.Synth.TTFA
	}
	// the latency of a chunk that opens a stream (the first, the first
	// after a tool call in stream mode), and of every other
	lat0, latN := p.cfg.Synth.TTFA, p.cfg.Synth.TTFA
	if p.mode == modeStream {
		latN = p.cfg.Synth.Continuation
	}
	slow := p.cfg.Synth.RTF > 1 // frames can come late: allowance
	// Walking chunks backward, each step knows the tolerance next of the
	// streamed chunks whose first delayed speech chunk is the one after:
	// those from this chunk's Trigger on (a timer's release can have an
	// earlier Trigger than the release before it).
	next := Unbounded
	k := len(tol) - 1
	M := Unbounded
	T := Unbounded
	backlog := p.startHeld // some chunk >= c0 (or the start) waited
	end := chunks[C-1].PlayEnd
	var tail time.Duration // audio of the chunks after c
	c := C - 1
	// first is the first chunk of c's segment: the one that started the
	// player, or the one after a tool-call silence
	segs := p.toolChunks
	first := startChunk
	if n := len(segs); n > 0 {
		first = max(first, segs[n-1])
	}
	fast := first // the chunks after it pay latN
	if n := len(p.streams); n > 0 {
		fast = max(fast, p.streams[n-1])
	}
	heldCap := Unbounded // the bound of the held segments after c
	if !slow && !parallel {
		// the usual case, the chunks after the first of the last segment
		// (c > first >= 0: not the turn's first) and after the last stream
		// opened, alone, in a loop small enough to keep its state in
		// registers
		for ; c > fast; c-- {
			ch := &chunks[c]
			for ; k >= ch.Trigger; k-- {
				tol[k] = next
			}
			L := end - tail - ch.Audio
			tail += ch.Audio
			if M != Unbounded {
				M -= ch.Done - ch.Ready + chain
			}
			M = min(M, L)
			if M != Unbounded {
				T = min(T, M-latN-ch.Release)
			}
			backlog = backlog || ch.Ready > ch.Release+latN
			next = Unbounded
			if T != Unbounded {
				next = max(0, T)
			}
		}
	}
	for ; c >= 0; c-- {
		ch := &chunks[c]
		for v := min(next, heldCap); k >= ch.Trigger; k-- {
			tol[k] = v
		}
		n := len(segs)
		opens := n > 0 && c == segs[n-1] && c > startChunk // c opens a segment after a tool-call silence
		hold := time.Duration(0)
		if opens {
			hold = ch.PlayStart - ch.Ready // a filler phrase held it back
		}
		L := Unbounded
		if c > first || hold > 0 {
			// the latest first-audio time that keeps the turn's last
			// audio, and so its total silence, where it is
			L = end - tail - ch.Audio
			if slow {
				L -= p.allowance(ch)
			}
		}
		tail += ch.Audio
		// M holds M_{c+1}: follow the chain from chunk c to chunk c+1
		if M != Unbounded {
			M -= ch.Done - ch.Ready + chain
			if parallel {
				M = Unbounded
			}
		}
		M = min(M, L)
		l := latN
		if c == 0 || p.opensStream(c) {
			l = lat0
		}
		if M != Unbounded {
			T = min(T, M-l-ch.Release)
		}
		backlog = backlog || ch.Ready > ch.Release+l
		// the tolerance when c is the first chunk delayed
		next = Unbounded
		if T != Unbounded && (c > first || backlog || hold > 0) {
			next = max(0, T)
		}
		if opens {
			// a delay from here on moves the whole segment, the
			// synthesizer idle since the player drained: it only
			// lengthens the tool-call silence; unless the segment is
			// held back, then only one reaching the hold does
			if hold == 0 || next >= hold {
				next = Unbounded
			}
			heldCap = min(heldCap, next)
			// the segment before it: a turn of its own
			segs = segs[:n-1]
			first = startChunk
			if n > 1 {
				first = max(first, segs[n-2])
			}
			end, tail = chunks[c-1].PlayEnd, 0
			M, T, backlog = Unbounded, Unbounded, p.startHeld
		}
	}
	for v := min(next, heldCap); k >= 0; k-- {
		tol[k] = v
	}
}

// minPreroll finds the smallest pre-roll with no underrun: the player must
// start no earlier than S* = max_c(ready_c + allowance_c - audio before
// c). The player holds audio in order, so what it has buffered at a time
// is the audio of the chunks whole by then and the frames ready of the
// next; any pre-roll above what it holds just before S* starts it at S*
// or later. MinPreroll is the smallest whole millisecond above that, a
// value that works when passed back as Config.Preroll (or --preroll).
//
// The pre-roll holds the player's start, so it decides the gaps up to the
// first tool-call silence only: the player drains there whatever it held,
// and the chunks after it start again when the first of them is ready.
func (p *Playout) minPreroll() {
	p.MinPreroll = 0
	if len(p.Chunks) == 0 {
		return
	}
	S := p.earliestStart // max over the chunks, as they were released
	if len(p.toolChunks) > 0 {
		S = math.MinInt64
		var before time.Duration
		for i := range p.toolChunks[0] {
			c := &p.Chunks[i]
			S = max(S, c.Ready+p.allowance(c)-before)
			before += c.Audio
		}
	}
	var ready time.Duration
	for i := range p.Chunks {
		c := &p.Chunks[i]
		if c.Ready >= S {
			break
		}
		if p.cfg.Synth.RTF == 0 {
			ready += c.Audio
			continue
		}
		// frames k with Ready + frameOffset(k) < S
		n := p.frames(c)
		frames := p.framesBefore(S-c.Ready, n)
		if frames < n {
			ready += frames * p.frame
			break // the chunks after it wait behind it
		}
		ready += c.Audio
	}
	if ready == 0 {
		return
	}
	p.MinPreroll = (ready/time.Millisecond + 1) * time.Millisecond
}

// framesBefore counts the frames k of a chunk of n frames that are ready
// less than d after its first: frameOffset grows with k, so a binary
// search finds the first frame at d or later in log2(n) steps, whatever
// the chunk's length.
func (p *Playout) framesBefore(d, n time.Duration) time.Duration {
	lo, hi := time.Duration(0), n // the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if p.frameOffset(mid) < d {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// toolSegments notes the chunks that come after a tool-call silence (the
// gap before them is CauseTool), after the turn's gaps are classified.
func (p *Playout) toolSegments() {
	p.toolChunks = p.toolChunks[:0]
	if len(p.tools) == 0 {
		return
	}
	for i := range p.Underruns {
		u := &p.Underruns[i]
		if u.Cause != CauseTool || u.Chunk < 1 {
			continue
		}
		if n := len(p.toolChunks); n == 0 || p.toolChunks[n-1] < u.Chunk {
			p.toolChunks = append(p.toolChunks, u.Chunk)
		}
	}
}
