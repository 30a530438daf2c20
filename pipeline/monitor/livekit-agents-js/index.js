// underrun-livekit-agents: reports a LiveKit Agents (Node) voice pipeline to
// `underrun monitor` over its ingest websocket (README "Live monitor",
// "Protocol"; cmd/underrun/docs "Plug into LiveKit"): every LLM text chunk as
// it arrives, every text the StreamAdapter's sentence tokenizer hands to the
// TTS, every audio frame as it reaches the player, and what a paced player
// heard of each turn. Turns are named by LiveKit's speech ids. A tool call
// the LLM makes is a tool_call (when its call arrives) and a tool_result
// (when LiveKit has run the tools): the reply's LLM stream goes on as the
// same turn, and the player hears the silence between as a gap in it. A
// filler the app speaks while the tool runs (Monitor.say) is played and
// heard as part of the turn, but is not the LLM's speech: its frames are
// reported as filler audio, not as the turn's speech.
import { performance } from 'node:perf_hooks';
import { voice } from '@livekit/agents';
import WebSocket from 'ws';

// A Monitor is one ingest connection: one LiveKit session. It never
// throws into, blocks or grows inside the agent: messages sent before the
// socket opened wait for it, at most maxQueue of them; once open, a message
// the socket cannot take (more than maxBuffered bytes wait to leave: the
// monitor is not reading) is dropped; either way `dropped` counts them. The
// handshake times out after connectTimeout, and close() gives the messages
// sent so far closeTimeout to leave. Every failure goes to onError (a
// failed or lost connection once; a malformed message from the monitor
// each time, up to 10), never thrown: the agent goes on without the monitor.
export class Monitor {
  #ws = null;
  #queue = []; // messages sent before the socket opened
  #open = false;
  #failed = false; // the connection failed or was lost (reported)
  #closing = false;
  #dropWarned = false;
  #maxQueue;
  #maxBuffered;
  #closeTimeout;
  #turns = new Map(); // speech id -> Turn
  #current = null; // the turn whose LLM stream started last
  #toolTurn = null; // the turn whose LLM stream stopped for a tool call, waiting for the reply
  #speechId = null; // the speech LiveKit created last (speech_created)
  #frames = new WeakMap(); // AudioFrame -> [turn, speech index, filler]
  #fillers = []; // texts said as fillers (say), not yet handed to the TTS
  #counter = 0;
  #closed = Promise.resolve();
  #ready = Promise.resolve(false);

  /** Messages not sent: the queue or the socket's buffer was full, or the connection was gone. */
  dropped = 0;
  /** Messages from the monitor that were not JSON objects. */
  malformed = 0;

  /**
   * @param {string} url the monitor, e.g. ws://127.0.0.1:8765 (its /ingest is used)
   * @param {{session?: string, token?: string, onError?: (e: Error) => void, onMessage?: (m: object) => void,
   *   connectTimeout?: number, closeTimeout?: number, maxQueue?: number, maxBuffered?: number}} [opts]
   *   connectTimeout: ms the websocket handshake may take (5000); closeTimeout: ms close() waits for the
   *   messages sent to leave and the monitor to answer (2000); maxQueue: messages held before the
   *   connection opens (10000); maxBuffered: bytes that may wait in the socket (1 MiB).
   */
  constructor(url, opts = {}) {
    this.onError = opts.onError ?? ((e) => console.warn(`underrun monitor: ${e.message}`));
    this.#maxQueue = opts.maxQueue ?? 10000;
    this.#maxBuffered = opts.maxBuffered ?? 1 << 20;
    this.#closeTimeout = opts.closeTimeout ?? 2000;
    let ws;
    try {
      const u = new URL(String(url).replace(/^http/, 'ws'));
      u.pathname = '/ingest';
      if (opts.session) u.searchParams.set('session', opts.session);
      const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
      ws = new WebSocket(u, { headers, handshakeTimeout: opts.connectTimeout ?? 5000 });
    } catch (e) {
      this.#fail(e);
      return;
    }
    this.#ws = ws;
    ws.on('open', () => {
      this.#open = true;
      const queued = this.#queue;
      this.#queue = [];
      for (const m of queued) this.#write(m);
    });
    ws.on('message', (data, isBinary) => this.#message(data, isBinary, opts.onMessage));
    ws.on('error', (e) => this.#fail(e));
    this.#closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.#open = false;
        if (!this.#closing) {
          const why = reason?.length ? `: ${reason}` : '';
          this.#fail(new Error(`the monitor's connection was lost (close code ${code}${why}); what the agent reports from now on is dropped`));
        }
        resolve();
      });
    });
    this.#ready = new Promise((resolve) => ws.once('open', () => resolve(true)).once('close', () => resolve(false)));
  }

  /**
   * Resolves once the connection is open (true) or has failed (false),
   * within connectTimeout; it never rejects. Await it before the first
   * turn: the monitor times a turn from its turn_start's arrival, so a
   * turn_start held back while the socket connects would start the turn
   * late.
   */
  ready() {
    return this.#ready;
  }

  // report hands an error to onError; an onError that throws is not the
  // agent's problem either
  #report(e) {
    try {
      this.onError(e instanceof Error ? e : new Error(String(e)));
    } catch {
      // nothing more to tell it with
    }
  }

  // fail reports the connection's failure, once
  #fail(e) {
    if (this.#failed) return;
    this.#failed = true;
    this.#open = false;
    this.#queue = [];
    this.#report(e);
  }

  // guard runs the adapter's own work inside the agent's callbacks: what
  // it throws goes to onError
  _guard(fn) {
    try {
      return fn();
    } catch (e) {
      this.#report(e);
      return undefined;
    }
  }

  #message(data, isBinary, onMessage) {
    const bad = (what) => {
      if (++this.malformed <= 10) {
        this.#report(new Error(`the monitor sent ${what}; want a JSON object${this.malformed === 10 ? ' (further ones are counted in malformed, not reported)' : ''}`));
      }
    };
    if (isBinary) {
      bad(`a binary message of ${data.length} bytes`);
      return;
    }
    const text = data.toString();
    const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      bad(`a message that is not JSON (${JSON.stringify(shown)})`);
      return;
    }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      bad(shown);
      return;
    }
    if (m.type === 'hello') this.session = m.session;
    if (m.type === 'error') this.#report(new Error(`${m.reason}: ${m.error}`));
    if (onMessage) this._guard(() => onMessage(m));
  }

  #send(m) {
    let s;
    try {
      s = JSON.stringify(m);
    } catch (e) {
      this.#report(e);
      return;
    }
    if (this.#open) this.#write(s);
    else if (!this.#failed && this.#ws?.readyState === WebSocket.CONNECTING && this.#queue.length < this.#maxQueue) this.#queue.push(s);
    else this.#drop();
  }

  // write sends s, unless the socket holds maxBuffered bytes already
  #write(s) {
    if (this.#ws.bufferedAmount > this.#maxBuffered) {
      this.#drop();
      return;
    }
    try {
      this.#ws.send(s);
    } catch (e) {
      this.dropped++;
      this.#fail(e);
    }
  }

  // drop counts a message not sent, and says once that the monitor is not
  // keeping up (a lost connection was said already)
  #drop() {
    this.dropped++;
    if (this.#failed || this.#dropWarned) return;
    this.#dropWarned = true;
    this.#report(new Error(`the monitor is not keeping up: dropping messages (the adapter holds ${this.#maxQueue} messages ` +
      `before the connection opens, ${this.#maxBuffered} bytes after); Monitor.dropped counts them`));
  }

  /**
   * Gives every message sent so far closeTimeout to leave, closes the
   * connection and resolves, within closeTimeout however the monitor
   * behaves (a frozen one is cut off); it never rejects.
   */
  async close() {
    const ws = this.#ws;
    if (!ws || this.#closing) return;
    const deadline = performance.now() + this.#closeTimeout;
    const until = (p) => {
      let timer;
      const left = Math.max(0, deadline - performance.now());
      return Promise.race([p, new Promise((resolve) => { timer = setTimeout(resolve, left); })]).finally(() => clearTimeout(timer));
    };
    if (ws.readyState === WebSocket.CONNECTING) await until(this.#ready);
    this.#closing = true;
    while (this.#open && ws.bufferedAmount > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const unsent = this.#open ? ws.bufferedAmount : 0;
    try {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000);
    } catch {
      // closing a socket that is going anyway
    }
    await until(this.#closed);
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate(); // cut off: its close event follows, not waited for
    if (unsent > 0 && !this.#failed) {
      this.#report(new Error(`closed with ${unsent} bytes the monitor did not take within ${this.#closeTimeout} ms`));
    }
  }

  /**
   * Follows a voice.AgentSession: each speech it creates names the turn of
   * the LLM stream that follows (LiveKit's speech_id).
   */
  attach(session) {
    session.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => this._guard(() => {
      this.#speechId = ev.speechHandle.id;
    }));
    // LiveKit has run the tools the LLM called (and played what was said
    // before them): the reply's LLM call comes next
    session.on(voice.AgentSessionEventTypes.FunctionToolsExecuted, () => this._guard(() => {
      const turn = this.#toolTurn;
      if (turn && !turn.toolReturned) {
        turn.toolReturned = true;
        this.#send({ type: 'tool_result', turn: turn.id, t_ms: turn.ms() });
      }
    }));
    return this;
  }

  /**
   * Speaks text on session (session.say) as a filler: what an app says
   * while a tool runs, which the player hears as part of the turn and the
   * adapter reports as filler audio, not as the LLM's speech. Returns the
   * SpeechHandle.
   */
  say(session, text, opts) {
    this.#fillers.push(text);
    return session.say(text, opts);
  }

  /** Reports the LLM streams of llm (an llm.LLM, e.g. openai.LLM): returns llm. */
  wrapLLM(llm) {
    const chat = llm.chat.bind(llm);
    llm.chat = (opts) => {
      const stream = chat(opts);
      const turn = this._guard(() => this.#beginTurn(opts));
      if (!turn) return stream;
      const next = stream.next.bind(stream);
      stream.next = async () => {
        const r = await next();
        this._guard(() => {
          if (r.done) {
            turn.outputTokens += turn.streamTokens;
            turn.streamTokens = 0;
          }
          if (r.done && turn.toolCall) this.#toolTurn = turn; // the turn goes on in the reply's stream
          else if (r.done) this.#endTurn(turn, 'ok');
          else this.#chunk(turn, r.value);
        });
        return r;
      };
      const close = stream.close.bind(stream);
      stream.close = () => {
        this._guard(() => {
          if (this.#toolTurn !== turn) this.#endTurn(turn, 'cancelled');
        });
        return close();
      };
      return stream;
    };
    return llm;
  }

  /**
   * Reports what a TTS without streaming input (e.g. openai.TTS, which
   * LiveKit drives through tts.StreamAdapter and its sentence tokenizer) is
   * given and what it returns: each text as a speech message, each frame
   * tagged so that the player reports it with its speech chunk, and a tts
   * fact per text once its audio is whole. Returns tts.
   */
  wrapTTS(tts) {
    const synthesize = tts.synthesize.bind(tts);
    tts.synthesize = (text, ...rest) => {
      const stream = synthesize(text, ...rest);
      this._guard(() => this.#followSynthesis(stream, text));
      return stream;
    };
    return tts;
  }

  // followSynthesis reports the synthesis of text as its stream yields
  // frames (see wrapTTS)
  #followSynthesis(stream, text) {
    const turn = this.#current;
    if (!turn) return;
    const next = stream.next.bind(stream);
    const f = this.#fillers.indexOf(text);
    if (f >= 0) {
      // the app's filler: played as the turn's audio, not its speech
      this.#fillers.splice(f, 1);
      stream.next = async () => {
        const r = await next();
        this._guard(() => {
          if (!r.done && r.value?.frame) this.#frames.set(r.value.frame, [turn, -1, true]);
        });
        return r;
      };
      return;
    }
    const index = turn.speech++;
    this.#send({ type: 'speech', turn: turn.id, text, t_ms: turn.ms() });
    let audio = 0;
    stream.next = async () => {
      const r = await next();
      this._guard(() => {
        if (!r.done && r.value?.frame) {
          this.#frames.set(r.value.frame, [turn, index]);
          audio += r.value.frame.samplesPerChannel / r.value.frame.sampleRate;
        } else if (r.done && audio > 0 && text.trim() !== '') {
          this.#send({ type: 'tts', turn: turn.id, text, audio_ms: audio * 1000 });
        }
      });
      return r;
    };
  }

  /**
   * A paced player for session.output.audio: it plays each frame in real
   * time from when it arrived and counts the silence it has to play inside
   * a turn's speech, as `underrun speak`'s player does; frames go on to
   * next (the room's output) when given. Options: sampleRate (24000).
   */
  player(opts = {}) {
    return new PacedAudioOutput(this, opts.sampleRate ?? 24000, opts.next, opts.period ?? 5);
  }

  #beginTurn(opts) {
    const waiting = this.#toolTurn;
    if (waiting) {
      this.#toolTurn = null;
      // the reply to a tool call carries the tool's output last: the LLM
      // stream of the same turn resumes, as underrun models a tool call
      if (opts?.chatCtx?.items?.at(-1)?.type === 'function_call_output') {
        if (!waiting.toolReturned) this.#send({ type: 'tool_result', turn: waiting.id, t_ms: waiting.ms() });
        waiting.toolCall = null;
        waiting.toolReturned = false;
        this.#speechId = null;
        this.#current = waiting;
        return waiting;
      }
      this.#endTurn(waiting, 'ok'); // no reply to the tool came
      if (waiting.held) this._playout(waiting, waiting.held);
    }
    const prev = this.#current;
    if (prev && prev !== waiting && prev.ended && prev.held) {
      // its speech ended with a filler and nothing after it
      const held = prev.held;
      prev.held = null;
      this._playout(prev, held);
    }
    let id = this.#speechId ?? `turn-${++this.#counter}`;
    this.#speechId = null;
    if (this.#turns.has(id)) id = `${id}#${++this.#counter}`; // a second LLM call of one speech (tool steps)
    const turn = new Turn(id);
    this.#turns.set(id, turn);
    this.#current = turn;
    this.#send({ type: 'turn_start', turn: id });
    return turn;
  }

  #chunk(turn, chunk) {
    if (turn.ended) return;
    const call = chunk?.delta?.toolCalls?.[0];
    if (call && !turn.toolCall) {
      // the LLM's reply stops for a tool call here
      turn.toolCall = call.name;
      this.#send({ type: 'tool_call', turn: turn.id, name: call.name, t_ms: turn.ms() });
    }
    const text = chunk?.delta?.content;
    if (chunk?.usage?.completionTokens) turn.streamTokens = chunk.usage.completionTokens; // this stream's; a turn across a tool call has two
    if (!text) return;
    turn.chunks++;
    this.#send({ type: 'chunk', turn: turn.id, text, tokens: 1, t_ms: turn.ms() });
  }

  #endTurn(turn, status) {
    if (turn.ended) return;
    turn.ended = true;
    const m = { type: 'turn_end', turn: turn.id, status };
    if (turn.outputTokens) m.output_tokens = turn.outputTokens;
    this.#send(m);
  }

  /** @internal the turn and speech chunk of a frame reaching the player. */
  _frame(frame) {
    const tag = this.#frames.get(frame);
    if (tag) return tag;
    const turn = this.#current;
    return turn ? [turn, Math.max(0, turn.speech - 1)] : [null, 0];
  }

  /** @internal a frame of the turn's speech chunk, or of a filler, reached the player */
  _audio(turn, speech, at, seconds, filler) {
    const m = { type: 'audio', turn: turn.id, audio_ms: seconds * 1000, t_ms: at - turn.begin };
    if (filler) m.filler = true;
    else m.speech = speech;
    this.#send(m);
  }

  /** @internal */
  _playout(turn, heard) {
    turn.heard = heard;
    this.#send({
      type: 'playout', turn: turn.id, start_ms: heard.startMs,
      gaps: heard.gaps.map((g) => ({ start_ms: g.startMs, duration_ms: g.durationMs })),
    });
    this.#turns.delete(turn.id);
    this.onPlayout?.(turn.id, heard);
  }
}

// Turn is one LLM response: a LiveKit speech.
class Turn {
  constructor(id) {
    this.id = id;
    this.begin = performance.now();
    this.chunks = 0;
    this.outputTokens = 0; // the usage of its streams ended so far
    this.streamTokens = 0; // the usage of the stream now running
    this.speech = 0;
    this.ended = false;
  }
  ms() {
    return performance.now() - this.begin;
  }
}

// PacedAudioOutput plays what the session gives it at the sample rate, as a
// room's audio track does: every `period` ms it plays the audio due by then
// from the frames that had arrived by each moment (each frame stamped on
// arrival), so a silence starts where the audio ran out and ends where the
// next frame arrived. A segment (one speech, ended by flush) that is played
// out is reported: when its first audio played and every gap inside it.
export class PacedAudioOutput extends voice.AudioOutput {
  #monitor;
  #next;
  #period;
  #queue = []; // {at, rest (s), turn, speech} or {flush: true}
  #seg = null; // the segment playing: {turn, cursor (ms), started, startMs, gaps, gap}
  #timer = null;

  constructor(monitor, sampleRate, next, period) {
    super(sampleRate, next);
    this.#monitor = monitor;
    this.#next = next;
    this.#period = period;
  }

  async captureFrame(frame) {
    await super.captureFrame(frame);
    const at = performance.now();
    this.#monitor._guard(() => {
      const [turn, speech, filler] = this.#monitor._frame(frame);
      const seconds = frame.samplesPerChannel / frame.sampleRate;
      // (a streaming TTS, which wrapTTS does not follow, has no speech messages:
      // its frames are played and counted, not reported one by one)
      if (turn && (turn.speech > 0 || filler)) this.#monitor._audio(turn, speech, at, seconds, filler);
      this.#queue.push({ at, rest: seconds * 1000, turn, speech: filler ? -1 : speech });
      this.#tick();
    });
    await this.#next?.captureFrame(frame);
  }

  flush() {
    super.flush();
    this.#queue.push({ flush: true });
    this.#monitor._guard(() => this.#tick());
    this.#next?.flush();
  }

  clearBuffer() {
    this.#queue = [];
    if (this.#seg) {
      const pos = this.#seg.played / 1000;
      this.#seg = null;
      this.onPlaybackFinished({ playbackPosition: pos, interrupted: true });
    }
    this.#next?.clearBuffer();
  }

  // tick plays everything due by now and schedules the next period.
  #tick() {
    clearTimeout(this.#timer);
    this.#timer = null;
    const now = performance.now();
    for (;;) {
      const head = this.#queue[0];
      if (!head) break;
      if (!this.#seg) {
        if (head.flush) {
          this.#queue.shift(); // a segment without audio
          this.onPlaybackFinished({ playbackPosition: 0, interrupted: false });
          continue;
        }
        // the first audio plays as it arrives; the reply after a tool call
        // goes on with its turn, the silence since a gap heard in it
        const held = head.turn?.held;
        if (held) head.turn.held = null;
        this.#seg = held
          ? { turn: head.turn, cursor: held.cursor, startMs: held.startMs, gaps: held.gaps, spoke: false, played: 0 }
          : { turn: head.turn, cursor: head.at, startMs: head.at - (head.turn?.begin ?? head.at), gaps: [], spoke: false, played: 0 };
        this.onPlaybackStarted(Date.now());
      }
      const seg = this.#seg;
      if (seg.cursor >= now) break;
      if (head.flush) {
        // the speech is over: silence waited for no audio, no underrun
        this.#queue.shift();
        this.#seg = null;
        if (seg.turn && (!seg.turn.ended || !seg.spoke)) {
          // its LLM stream stopped for a tool call, or what played was a
          // filler before the reply: the turn's speech goes on in the
          // reply, heard after the silence
          seg.turn.held = { startMs: seg.startMs, gaps: seg.gaps, cursor: seg.cursor };
        } else if (seg.turn) this.#monitor._playout(seg.turn, { startMs: seg.startMs, gaps: seg.gaps });
        this.onPlaybackFinished({ playbackPosition: seg.played / 1000, interrupted: false });
        continue;
      }
      if (head.at > seg.cursor) {
        // nothing to play from the cursor until the frame arrives
        if (head.at > now) break; // (cannot happen: stamped on arrival)
        const begin = seg.turn?.begin ?? 0;
        seg.gaps.push({ startMs: seg.cursor - begin, durationMs: head.at - seg.cursor });
        seg.cursor = head.at;
      }
      if (head.speech >= 0) seg.spoke = true;
      const take = Math.min(head.rest, now - seg.cursor);
      head.rest -= take;
      seg.cursor += take;
      seg.played += take;
      if (head.rest <= 1e-9) this.#queue.shift();
      else break;
    }
    if (this.#seg || this.#queue.length > 0) {
      this.#timer = setTimeout(() => this.#monitor._guard(() => this.#tick()), this.#period);
    }
  }
}
