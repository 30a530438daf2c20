package loadgen

import (
	"container/heap"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// streamed is what stream did: the messages sent, the turns started,
// the send lags, and how the senders ran.
type streamed struct {
	sent, turns int64
	lags        lagHistogram
	senders     int
	priority    string
	paced       time.Duration
}

// stream sends opts' schedule over conns from start until opts.Duration
// has passed: opts.Senders senders (one per CPU the process may use by
// default), each with a schedule of many sessions (a goroutine per
// session, or per message, would make the load generator's own
// scheduling the bottleneck). The first sender's error cancels the
// others.
func stream(ctx context.Context, start time.Time, opts Options, conns []*loadConn) (streamed, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interval := time.Duration(float64(time.Second) / opts.Rate)
	senders, dedicated := planSenders(opts, runtime.GOMAXPROCS(0))
	st := streamed{priority: PriorityNormal, paced: time.Millisecond}
	switch {
	case opts.Realtime && !dedicated:
		st.priority += " (real-time wants a P to spare besides the senders: GOMAXPROCS is 1)"
	case dedicated && precisePacing:
		st.paced = paceQuantum
	}
	workers := min(len(conns), senders)
	st.senders = workers
	plans := make([]sendPlan, workers)
	for i, c := range conns {
		// spread the sessions over one interval
		ls := &loadSession{c: c, i: i, k: -1, first: opts.TurnChunks,
			next: int64(time.Duration(i) * interval / time.Duration(len(conns)))}
		if !opts.Aligned {
			ls.first = 1 + i*opts.TurnChunks/len(conns)
		}
		plans[i%workers] = append(plans[i%workers], ls)
	}
	sched := loadSchedule{opts: opts, interval: int64(interval), stop: int64(opts.Duration)}
	lagAll := make([]lagHistogram, workers)
	priorities := make([]string, workers)
	var nsent, nturns atomic.Int64
	var sendErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range plans {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if dedicated {
				var release func()
				priorities[w], release = lockSender()
				defer release()
			}
			if err := sendLoad(ctx, start, plans[w], sched, dedicated, &lagAll[w], &nsent, &nturns); err != nil {
				sendErr.CompareAndSwap(nil, &err)
				cancel()
			}
		}(w)
	}
	wg.Wait()
	for i := range lagAll {
		st.lags.merge(&lagAll[i])
	}
	if dedicated {
		st.priority = priorities[0]
	}
	st.sent, st.turns = nsent.Load(), nturns.Load()
	var err error
	if p := sendErr.Load(); p != nil {
		err = *p
	}
	return st, err
}

// loadSession is one session of a load run and where its stream stands.
type loadSession struct {
	c    *loadConn
	i    int
	next int64 // when its next message is due, in nanoseconds from the start
	turn int
	k    int // -1: turn_start is next; 0..TurnChunks-1: that chunk; TurnChunks: turn_end
	// first is the length of the first turn, in chunks
	first int
}

// loadSchedule is the pattern every session of a load run streams.
type loadSchedule struct {
	opts           Options
	interval, stop int64 // nanoseconds
}

// advance schedules the message after the one just sent; false when the
// session is done.
func (s *loadSession) advance(sc loadSchedule) bool {
	n := sc.opts.TurnChunks
	if s.turn == 0 {
		n = s.first
	}
	chunk := func(j int) {
		if j < n && s.next < sc.stop {
			s.next += sc.interval
			if j == sc.opts.StallAfter && sc.opts.Stall > 0 {
				s.next += int64(sc.opts.Stall)
			}
			s.k = j
			return
		}
		s.k = sc.opts.TurnChunks // the turn ends one interval later
		s.next += sc.interval
	}
	switch {
	case s.k < 0:
		chunk(0)
	case s.k < sc.opts.TurnChunks:
		chunk(s.k + 1)
	default:
		// the next turn starts at once, while there is time
		s.turn++
		s.k = -1
		return s.next < sc.stop
	}
	return true
}

// loadChunk is every chunk a load session sends.
var loadChunk = pipeline.Chunk{Text: " tok", Tokens: 1}

// sendLoad sends the messages of plan's sessions, each when it is due
// (start + next), until every session is done or ctx ends, and counts how
// late each went out. It sleeps only when nothing is due (pace; precise
// when the sender has a thread and a P of its own); the write deadline of
// a connection is moved at most once a second. Every session sends the
// same messages (turn ids t0, t1, ... and the same chunk), so each is
// framed once, as a websocket.PreparedMessage, and written as it is to
// every connection: no copy into the connection's buffer, no masking per
// write, nothing allocated per message.
func sendLoad(ctx context.Context, start time.Time, plan sendPlan, sc loadSchedule, precise bool, lags *lagHistogram, sent, turns *atomic.Int64) error {
	heap.Init(&plan)
	var msgs preparedMessages
	var n int64
	defer func() { sent.Add(n) }()
	for plan.Len() > 0 {
		ls := plan[0]
		now := int64(time.Since(start))
		if d := ls.next - now; d > 0 {
			sent.Add(n) // the counts are read as the run goes
			n = 0
			if ctx.Err() != nil {
				return nil
			}
			pace(time.Duration(d), precise)
			continue
		}
		lags.add(now - ls.next)
		part := 1 // 0 turn_start, 1 chunk, 2 turn_end
		switch {
		case ls.k < 0:
			part = 0
			turns.Add(1)
		case ls.k >= sc.opts.TurnChunks:
			part = 2
		}
		if err := ls.c.send(&msgs, start, now, ls.turn, part); err != nil {
			return fmt.Errorf("load: session %d: %w", ls.i, err)
		}
		n++
		if ls.advance(sc) {
			heap.Fix(&plan, 0)
		} else {
			heap.Pop(&plan)
		}
	}
	return nil
}

// paceQuantum is the shortest wait of a precisely paced sender: a
// message due sooner waits for those due within the quantum, so that the
// sender sleeps at most 1/paceQuantum times a second (each sleep is a
// system call and a context switch; one per message would cost more than
// the message).
const paceQuantum = 200 * time.Microsecond

// paceCoarse is the longest wait a precisely paced sender sleeps through
// on its thread; a longer one parks the goroutine (so that the garbage
// collector need not wait for it) until paceCoarse is left.
const paceCoarse = 2 * time.Millisecond

// pace waits for d: through the runtime's timers (time.Sleep, which
// wakes at the millisecond at best) or, precise, on the sender's own
// thread within paceQuantum (waitPrecise).
func pace(d time.Duration, precise bool) {
	switch {
	case !precise:
		time.Sleep(d)
	case d > paceCoarse:
		time.Sleep(d - paceCoarse)
	default:
		waitPrecise(max(d, paceQuantum))
	}
}

// send writes the message of turn and part (preparedMessages.get) at now
// (nanoseconds from start): the prepared frame through the websocket, or
// WriteFloor's bare message. The write deadline is moved at most once a
// second.
func (c *loadConn) send(msgs *preparedMessages, start time.Time, now int64, turn, part int) error {
	if c.raw != nil {
		_, err := c.raw.Write(floorMessage)
		return err
	}
	pm, err := msgs.get(turn, part)
	if err != nil {
		return err
	}
	if now >= c.deadline {
		c.deadline = now + int64(time.Second)
		c.conn.SetWriteDeadline(start.Add(time.Duration(c.deadline) + monitor.DefaultWriteTimeout))
	}
	return c.conn.WritePreparedMessage(pm)
}

// preparedMessages holds a sender's framed messages: per turn number, its
// turn_start, its chunk and its turn_end.
type preparedMessages [][3]*websocket.PreparedMessage

// get returns the message of turn (ids t0, t1, ...) and part (0
// turn_start, 1 chunk, 2 turn_end), framing it the first time.
func (m *preparedMessages) get(turn, part int) (*websocket.PreparedMessage, error) {
	for len(*m) <= turn {
		*m = append(*m, [3]*websocket.PreparedMessage{})
	}
	if pm := (*m)[turn][part]; pm != nil {
		return pm, nil
	}
	id := "t" + strconv.Itoa(turn)
	var b []byte
	switch part {
	case 0:
		b = monitor.AppendMessage(nil, monitor.TypeTurnStart, id, nil, -1, "")
	case 1:
		b = monitor.AppendMessage(nil, monitor.TypeChunk, id, &loadChunk, -1, "")
	default:
		b = monitor.AppendMessage(nil, monitor.TypeTurnEnd, id, nil, -1, pipeline.StatusOK)
	}
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	(*m)[turn][part] = pm
	return pm, nil
}

// sendPlan is a sender's sessions, the one due first on top (a heap).
type sendPlan []*loadSession

func (p sendPlan) Len() int           { return len(p) }
func (p sendPlan) Less(i, j int) bool { return p[i].next < p[j].next }
func (p sendPlan) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *sendPlan) Push(x any)        { *p = append(*p, x.(*loadSession)) }
func (p *sendPlan) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}
