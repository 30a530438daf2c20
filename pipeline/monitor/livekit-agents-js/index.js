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

// A Monitor is one ingest connection: one LiveKit session. Messages sent
// before the socket opened wait for it; a failed connection never stops the
// agent (errors go to onError).
export class Monitor {
  #ws;
  #queue = [];
  #open = false;
  #turns = new Map(); // speech id -> Turn
  #current = null; // the turn whose LLM stream started last
  #toolTurn = null; // the turn whose LLM stream stopped for a tool call, waiting for the reply
  #speechId = null; // the speech LiveKit created last (speech_created)
  #frames = new WeakMap(); // AudioFrame -> [turn, speech index, filler]
  #fillers = []; // texts said as fillers (say), not yet handed to the TTS
  #counter = 0;
  #closed;
  #ready;

  /**
   * @param {string} url the monitor, e.g. ws://127.0.0.1:8765 (its /ingest is used)
   * @param {{session?: string, token?: string, onError?: (e: Error) => void, onMessage?: (m: object) => void}} [opts]
   */
  constructor(url, opts = {}) {
    const u = new URL(url.replace(/^http/, 'ws'));
    u.pathname = '/ingest';
    if (opts.session) u.searchParams.set('session', opts.session);
    const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
    this.onError = opts.onError ?? ((e) => console.warn(`underrun monitor: ${e.message}`));
    this.#ws = new WebSocket(u, { headers });
    this.#ws.on('open', () => {
      this.#open = true;
      for (const m of this.#queue) this.#ws.send(m);
      this.#queue = [];
    });
    this.#ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.type === 'hello') this.session = m.session;
      if (m.type === 'error') this.onError(new Error(`${m.reason}: ${m.error}`));
      opts.onMessage?.(m);
    });
    this.#ws.on('error', (e) => this.onError(e));
    this.#closed = new Promise((resolve) => this.#ws.on('close', resolve));
    this.#ready = new Promise((resolve) => this.#ws.once('open', resolve).once('close', resolve));
  }

  /**
   * Resolves once the connection is open (or has failed). Await it before
   * the first turn: the monitor times a turn from its turn_start's arrival,
   * so a turn_start held back while the socket connects would start the
   * turn late.
   */
  ready() {
    return this.#ready;
  }

  #send(m) {
    const s = JSON.stringify(m);
    if (this.#open) this.#ws.send(s);
    else if (this.#ws.readyState === WebSocket.CONNECTING) this.#queue.push(s);
  }

  /** Resolves once every message sent so far has left, and closes the connection. */
  async close() {
    if (this.#ws.readyState === WebSocket.CONNECTING) {
      await new Promise((resolve) => this.#ws.once('open', resolve).once('error', resolve));
    }
    this.#ws.close(1000);
    await this.#closed;
  }

  /**
   * Follows a voice.AgentSession: each speech it creates names the turn of
   * the LLM stream that follows (LiveKit's speech_id).
   */
  attach(session) {
    session.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => {
      this.#speechId = ev.speechHandle.id;
    });
    // LiveKit has run the tools the LLM called (and played what was said
    // before them): the reply's LLM call comes next
    session.on(voice.AgentSessionEventTypes.FunctionToolsExecuted, () => {
      const turn = this.#toolTurn;
      if (turn && !turn.toolReturned) {
        turn.toolReturned = true;
        this.#send({ type: 'tool_result', turn: turn.id, t_ms: turn.ms() });
      }
    });
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
      const turn = this.#beginTurn(opts);
      const next = stream.next.bind(stream);
      stream.next = async () => {
        const r = await next();
        if (r.done) {
          turn.outputTokens += turn.streamTokens;
          turn.streamTokens = 0;
        }
        if (r.done && turn.toolCall) this.#toolTurn = turn; // the turn goes on in the reply's stream
        else if (r.done) this.#endTurn(turn, 'ok');
        else this.#chunk(turn, r.value);
        return r;
      };
      const close = stream.close.bind(stream);
      stream.close = () => {
        if (this.#toolTurn !== turn) this.#endTurn(turn, 'cancelled');
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
      const turn = this.#current;
      if (!turn) return stream;
      const f = this.#fillers.indexOf(text);
      if (f >= 0) {
        // the app's filler: played as the turn's audio, not its speech
        this.#fillers.splice(f, 1);
        const next = stream.next.bind(stream);
        stream.next = async () => {
          const r = await next();
          if (!r.done && r.value?.frame) this.#frames.set(r.value.frame, [turn, -1, true]);
          return r;
        };
        return stream;
      }
      const index = turn.speech++;
      this.#send({ type: 'speech', turn: turn.id, text, t_ms: turn.ms() });
      let audio = 0;
      const next = stream.next.bind(stream);
      stream.next = async () => {
        const r = await next();
        if (!r.done && r.value?.frame) {
          this.#frames.set(r.value.frame, [turn, index]);
          audio += r.value.frame.samplesPerChannel / r.value.frame.sampleRate;
        } else if (r.done && audio > 0 && text.trim() !== '') {
          this.#send({ type: 'tts', turn: turn.id, text, audio_ms: audio * 1000 });
        }
        return r;
      };
      return stream;
    };
    return tts;
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
    const [turn, speech, filler] = this.#monitor._frame(frame);
    const seconds = frame.samplesPerChannel / frame.sampleRate;
    // (a streaming TTS, which wrapTTS does not follow, has no speech messages:
    // its frames are played and counted, not reported one by one)
    if (turn && (turn.speech > 0 || filler)) this.#monitor._audio(turn, speech, at, seconds, filler);
    this.#queue.push({ at, rest: seconds * 1000, turn, speech: filler ? -1 : speech });
    this.#tick();
    await this.#next?.captureFrame(frame);
  }

  flush() {
    super.flush();
    this.#queue.push({ flush: true });
    this.#tick();
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
      this.#timer = setTimeout(() => this.#tick(), this.#period);
    }
  }
}
