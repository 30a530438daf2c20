package speak

import (
	"errors"
	"io"
	"iter"
	"sync"

	"github.com/speech-pipeline/underrun/tts/stream"
)

// driver drives the synthesizer through a turn's chunks as the timing
// mode says: speak is called for each speech chunk as it is released
// (with the turn locked: it must not block), close after the last; the
// driver hands every piece of audio to the player, in order, and calls
// Turn.finished when all of it is there.
type driver interface {
	speak(c *Timing)
	// endReply says a tool call ended the LLM's reply: the chunks after
	// it are the reply after the call (with the turn locked).
	endReply()
	close()
}

// queue is an unbounded queue of chunks, closed after the last.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*Timing
	closed bool
}

func newQueue() *queue {
	q := &queue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(c *Timing) {
	q.mu.Lock()
	q.items = append(q.items, c)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// pop returns the next chunk, waiting for one; false once closed and empty.
func (q *queue) pop() (*Timing, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	c := q.items[0]
	q.items = q.items[1:]
	return c, true
}

// all yields the chunks in order, waiting for each, until the queue is
// closed and empty.
func (q *queue) all() iter.Seq[*Timing] {
	return func(yield func(*Timing) bool) {
		for {
			c, ok := q.pop()
			if !ok || !yield(c) {
				return
			}
		}
	}
}

// play reads an utterance of chunk c to its end, handing its audio to the
// player.
func (t *Turn) play(c *Timing, u stream.Utterance) {
	defer u.Close()
	t.fail(c, stream.Each(u, func(p stream.Piece) { t.heard(c, p) }))
	t.over(c)
}

// requestDriver sends one request per chunk, one after another: a chunk's
// request goes out once the one before it has all its audio (request
// mode: LiveKit's StreamAdapter, Pipecat's HTTP services).
type requestDriver struct {
	t *Turn
	q *queue
}

func newRequestDriver(t *Turn) *requestDriver {
	d := &requestDriver{t: t, q: newQueue()}
	go d.run()
	return d
}

func (d *requestDriver) speak(c *Timing) { d.q.push(c) }
func (d *requestDriver) close()          { d.q.close() }
func (d *requestDriver) endReply()       {} // a request per chunk already

func (d *requestDriver) run() {
	t := d.t
	defer t.finished()
	for c := range d.q.all() {
		if t.ctx.Err() != nil {
			continue // stopped: what is left is not spoken
		}
		t.sent(c)
		u, err := t.p.cfg.Synthesizer.Synthesize(t.ctx, c.Text)
		if err != nil {
			t.fail(c, err)
			t.over(c)
			continue
		}
		t.play(c, u)
	}
}

// parallelDriver sends each chunk's request the moment it is released and
// plays the answers in order (parallel mode).
type parallelDriver struct {
	t       *Turn
	q       *queue // of chunks whose requests are out, in order
	mu      sync.Mutex
	answers map[*Timing]*answer
}

// answer is one request's audio, collected until its turn to play.
type answer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	pieces []stream.Piece
	err    error // io.EOF at the end
}

func newParallelDriver(t *Turn) *parallelDriver {
	d := &parallelDriver{t: t, q: newQueue(), answers: map[*Timing]*answer{}}
	go d.run()
	return d
}

func (d *parallelDriver) speak(c *Timing) {
	a := &answer{}
	a.cond = sync.NewCond(&a.mu)
	d.mu.Lock()
	d.answers[c] = a
	d.mu.Unlock()
	d.q.push(c)
	go d.fetch(c, a)
}

func (d *parallelDriver) close()    { d.q.close() }
func (d *parallelDriver) endReply() {} // a request per chunk already

// fetch runs chunk c's request, collecting its audio.
func (d *parallelDriver) fetch(c *Timing, a *answer) {
	t := d.t
	finish := func(err error) {
		a.mu.Lock()
		a.err = err
		a.mu.Unlock()
		a.cond.Broadcast()
	}
	t.sent(c)
	u, err := t.p.cfg.Synthesizer.Synthesize(t.ctx, c.Text)
	if err != nil {
		finish(err)
		return
	}
	defer u.Close()
	err = stream.Each(u, func(p stream.Piece) {
		a.mu.Lock()
		a.pieces = append(a.pieces, p)
		a.mu.Unlock()
		a.cond.Broadcast()
	})
	if err == nil {
		err = io.EOF
	}
	finish(err)
}

// run plays the answers in order, each piece as soon as it is there and
// the answers before it are over.
func (d *parallelDriver) run() {
	t := d.t
	defer t.finished()
	for c := range d.q.all() {
		d.mu.Lock()
		a := d.answers[c]
		delete(d.answers, c)
		d.mu.Unlock()
		next := 0
		for {
			a.mu.Lock()
			for next == len(a.pieces) && a.err == nil {
				a.cond.Wait()
			}
			pieces, err := a.pieces[next:], a.err
			next = len(a.pieces)
			a.mu.Unlock()
			for _, p := range pieces {
				t.heard(c, p)
			}
			if err != nil && next == len(a.pieces) {
				if !errors.Is(err, io.EOF) {
					t.fail(c, err)
				}
				break
			}
		}
		t.over(c)
	}
}

// contextDriver speaks every chunk of the turn into one synthesis context
// (stream mode: Pipecat's and LiveKit's websocket services). A context
// that fails is replaced by a new one for the chunks after the failure;
// its audio plays after the failed one's.
type contextDriver struct {
	t     *Turn
	synth stream.ContextSynthesizer
	cur   *contextRun
	last  chan struct{} // closed when the newest reader is done: all audio is in
}

// contextRun is one context and the chunks spoken into it, in order.
type contextRun struct {
	ctx    stream.Context
	mu     sync.Mutex
	chunks []*Timing
	dead   bool
}

func newContextDriver(t *Turn) *contextDriver {
	d := &contextDriver{t: t, synth: t.p.cfg.Synthesizer.(stream.ContextSynthesizer)}
	d.last = make(chan struct{})
	close(d.last) // nothing to wait for yet
	return d
}

// speak writes c into the turn's context, opening one when there is none
// (or the last one failed).
func (d *contextDriver) speak(c *Timing) {
	t := d.t
	if d.cur != nil {
		d.cur.mu.Lock()
		dead := d.cur.dead
		d.cur.mu.Unlock()
		if dead {
			d.cur = nil
		}
	}
	if d.cur == nil {
		sc, err := d.synth.OpenContext(t.ctx)
		if err != nil {
			go func() { t.fail(c, err); t.over(c) }()
			return
		}
		run := &contextRun{ctx: sc}
		before, done := d.last, make(chan struct{})
		d.last, d.cur = done, run
		go d.read(run, before, done)
	}
	run := d.cur
	run.mu.Lock()
	run.chunks = append(run.chunks, c)
	run.mu.Unlock()
	t.sentLocked(c)
	if err := run.ctx.Speak(c.Text); err != nil {
		run.mu.Lock()
		run.dead = true
		run.mu.Unlock()
		run.ctx.Abort()
	}
}

// endReply ends the input of the context: the reply after a tool call
// is spoken into a new one, as the frameworks synthesize it on a stream of
// its own (LiveKit a TTS stream per generation, Pipecat a new audio
// context at the reply's start); its audio plays after this one's.
func (d *contextDriver) endReply() {
	if d.cur != nil {
		d.cur.ctx.Close()
		d.cur = nil
	}
}

// close ends the input of the context, and finishes the turn once every
// context's audio is in.
func (d *contextDriver) close() {
	if d.cur != nil {
		d.cur.ctx.Close()
	}
	last := d.last
	go func() {
		<-last
		d.t.finished()
	}()
}

// read hands a context's audio to the player, once the context before it
// is done (before), and closes done at its end.
func (d *contextDriver) read(run *contextRun, before <-chan struct{}, done chan<- struct{}) {
	t := d.t
	defer close(done)
	defer run.ctx.Abort()
	var held []stream.Piece
	waiting := true
	current := -1 // index in run.chunks of the chunk audio last went to
	chunk := func(i int) *Timing {
		run.mu.Lock()
		defer run.mu.Unlock()
		if i < 0 || i >= len(run.chunks) {
			return nil
		}
		return run.chunks[i]
	}
	give := func(p stream.Piece) {
		for current < p.Text {
			if c := chunk(current); c != nil {
				t.over(c)
			}
			current++
		}
		if c := chunk(current); c != nil {
			t.heard(c, p)
		}
	}
	for {
		p, err := run.ctx.Next()
		if waiting {
			select {
			case <-before:
				waiting = false
				for _, h := range held {
					give(h)
				}
				held = nil
			default:
			}
		}
		if err != nil {
			if waiting {
				<-before
				for _, h := range held {
					give(h)
				}
			}
			run.mu.Lock()
			run.dead = true
			n := len(run.chunks)
			run.mu.Unlock()
			if !errors.Is(err, io.EOF) {
				// the chunks with no audio of their own yet lost it
				failed := max(current, 0)
				if c := chunk(failed); c != nil {
					t.fail(c, err)
				}
			}
			for ; current < n; current++ {
				if c := chunk(current); c != nil {
					t.over(c)
				}
			}
			return
		}
		if waiting {
			held = append(held, p)
			continue
		}
		give(p)
	}
}
