package pipeline

import (
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
	lat0, latN := p.latency(0), p.latency(1) // the first chunk's, every other's
	slow := p.cfg.Synth.RTF > 1              // frames can come late: allowance
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
	if !slow && !parallel {
		// the usual case, the chunks after the one that started the
		// player (c > startChunk >= 0: not the first) alone, in a loop
		// small enough to keep its state in registers
		for ; c > startChunk; c-- {
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
		for ; k >= ch.Trigger; k-- {
			tol[k] = next
		}
		L := Unbounded
		if c > startChunk {
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
		if c == 0 {
			l = lat0
		}
		if M != Unbounded {
			T = min(T, M-l-ch.Release)
		}
		backlog = backlog || ch.Ready > ch.Release+l
		// the tolerance when c is the first chunk delayed
		next = Unbounded
		if T != Unbounded && (c > startChunk || backlog) {
			next = max(0, T)
		}
	}
	for ; k >= 0; k-- {
		tol[k] = next
	}
}

// minPreroll finds the smallest pre-roll with no underrun: the player must
// start no earlier than S* = max_c(ready_c + allowance_c - audio before
// c). The player holds audio in order, so what it has buffered at a time
// is the audio of the chunks whole by then and the frames ready of the
// next; any pre-roll above what it holds just before S* starts it at S*
// or later. MinPreroll is the smallest whole millisecond above that, a
// value that works when passed back as Config.Preroll (or --preroll).
func (p *Playout) minPreroll() {
	p.MinPreroll = 0
	if len(p.Chunks) == 0 {
		return
	}
	S := p.earliestStart // max over the chunks, as they were released
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
		frames := time.Duration(float64(S-c.Ready) / (float64(p.frame) * p.cfg.Synth.RTF))
		for frames > 0 && p.frameOffset(frames-1) >= S-c.Ready {
			frames--
		}
		for p.frameOffset(frames) < S-c.Ready && frames*p.frame < c.Audio {
			frames++
		}
		ready += min(c.Audio, frames*p.frame)
		if frames*p.frame < c.Audio {
			break // the chunks after it wait behind it
		}
	}
	if ready == 0 {
		return
	}
	p.MinPreroll = (ready/time.Millisecond + 1) * time.Millisecond
}
