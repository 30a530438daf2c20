"""Monitor: reports a LiveKit Agents (Python) voice pipeline to ``underrun monitor``.

Written and read against livekit-agents 1.8.9 and livekit-plugins-openai 1.8.9
(cmd/underrun/docs/livekit-python.md says where in their code). What it
reports, per turn, a turn being one LiveKit speech (its ``speech_id``):

- ``turn_start`` when LiveKit calls the LLM's ``chat()`` for the speech, each
  text delta of the ``LLMStream`` as a ``chunk`` as LiveKit takes it, and
  ``turn_end`` when the stream ends (``cancelled`` when LiveKit closes it
  first, ``error`` when it fails), with the stream's usage;
- a tool call (a chunk carrying ``delta.tool_calls``) as ``tool_call``; the
  session's ``function_tools_executed`` event as ``tool_result``. LiveKit runs
  the tools and calls the LLM again under the same speech: that stream goes on
  as the same turn;
- each text the ``tts.StreamAdapter``'s sentence tokenizer hands to a TTS
  without streaming input (its ``synthesize()`` calls) as ``speech``, and once
  its audio is whole a ``tts`` fact (its text and audio length);
- each audio frame reaching the paced player (``Monitor.player``) as
  ``audio``, with the sentence it belongs to, and the player's ``playout``
  (its first audio and the gaps it heard) once the turn is played out;
- what the app says while the turn waits for its tool (``session.say``, or
  LiveKit's ``RunContext.with_filler``, which calls it) as a filler: its
  frames are ``audio`` with ``filler: true``, heard but not the LLM's speech.

Which speech a call belongs to is LiveKit's own: its speech tasks carry the
``SpeechHandle`` in a context variable (``voice/agent_activity.py``
``_SpeechHandleContextVar``), which every task they start inherits. Nothing here
raises into, blocks or grows inside the agent: messages leave through the
shared MonitorClient (pipeline/monitor/pyclient: a bounded queue that drops
with a count, connect, send and close timeouts, each failure of the connection
reported once), and an error inside the adapter is reported once through
``on_error`` (kind ``adapter``) and the agent goes on.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from underrun_monitor import MonitorClient, MonitorError

logger = logging.getLogger("underrun_livekit")

try:  # LiveKit's own record of which speech a task works for
    from livekit.agents.voice.agent_activity import _SpeechHandleContextVar as _speech_var
except Exception:  # pragma: no cover - another livekit-agents layout
    _speech_var = None

#: The most turns the adapter keeps at once (the oldest is dropped past it).
MAX_TURNS = 64
#: A turn's most speech texts kept (more are not reported).
MAX_SPEECH = 4096


def _warn(e: MonitorError) -> None:
    logger.warning("underrun monitor: %s", e)


def _now_ms() -> float:
    return time.perf_counter() * 1000.0


@dataclass
class HeardGap:
    """A silence the player played inside a turn's speech: from ``start_ms``
    (since the turn's LLM request) for ``duration_ms``."""

    start_ms: float
    duration_ms: float


@dataclass
class Heard:
    """What the player heard of a turn: its first audio (ms since the turn's
    LLM request) and the gaps inside its speech."""

    start_ms: float
    gaps: list[HeardGap]


@dataclass
class _Turn:
    id: str
    begin: float  # perf_counter, ms
    chunks: int = 0
    output_tokens: int = 0  # the usage of its streams that ended
    stream_tokens: int = 0  # the usage of the stream now running
    speech: list[str] = field(default_factory=list)
    audio: deque = field(default_factory=deque)  # [sentence, seconds] synthesized, not yet at the player
    tool: str | None = None  # its LLM stream stopped for this tool call
    tool_returned: bool = False
    waiting: bool = False  # its stream ended at a tool call: the reply goes on as this turn
    ended: bool = False
    held: Any = None  # the player's segment, carried over a tool call or a filler
    played: bool = False

    def ms(self, at: float | None = None) -> float:
        return max((at if at is not None else _now_ms()) - self.begin, 0.0)

    def sentence_of(self, seconds: float) -> int:
        """The sentence of the audio that reaches the player next, seconds
        long: the synthesized audio is taken in order."""
        last = max(len(self.speech) - 1, 0)
        if not self.audio:
            return last
        sentence = self.audio[0][0]
        while seconds > 1e-9 and self.audio:
            head = self.audio[0]
            take = min(seconds, head[1])
            head[1] -= take
            seconds -= take
            if head[1] <= 1e-9:
                self.audio.popleft()
        return sentence


class _Watched:
    """An LLMStream or ChunkedStream as LiveKit uses it (``async with``,
    ``async for``, ``aclose``), each item shown to ``item`` as LiveKit takes
    it and its end to ``end`` (None, the exception, or ``"cancelled"``) once;
    everything else is the stream's own."""

    def __init__(self, stream, item: Callable[[Any], None], end: Callable[[Any], None], fail):
        self._stream = stream
        self._item = item
        self._end = end
        self._fail = fail
        self._over = False

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _finish(self, why) -> None:
        if self._over:
            return
        self._over = True
        try:
            self._end(why)
        except Exception as e:
            self._fail("stream end", e)

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            self._finish(None)
            raise
        except BaseException as e:
            self._finish(e)
            raise
        try:
            self._item(item)
        except Exception as e:
            self._fail("stream item", e)
        return item

    async def __aenter__(self):
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        self._finish("cancelled")
        return await self._stream.__aexit__(*exc)

    async def aclose(self):
        self._finish("cancelled")
        return await self._stream.aclose()


class Monitor:
    """Reports a LiveKit ``AgentSession`` to ``underrun monitor`` at ``url``
    (``ws://HOST:PORT``), one monitor session per Monitor::

        monitor = Monitor("ws://127.0.0.1:8765", session="kitchen")
        await monitor.ready()
        session = AgentSession(llm=monitor.wrap_llm(openai.LLM()),
                               tts=monitor.wrap_tts(openai.TTS()))
        monitor.attach(session)
        await session.start(agent=agent)
        session.output.audio = monitor.player()

    ``on_playout(turn_id, heard)``, when given, is told what the player heard
    of each turn. ``on_error(e)`` (an underrun_monitor.MonitorError) is told
    each kind of failure once, of the connection and of the adapter itself
    (kind ``adapter``); by default it is a warning on the ``underrun_livekit``
    logger. It and the connection's options (``token``, ``queue_size``,
    ``connect_timeout``, ``send_timeout``, ``close_timeout``, ``on_message``)
    go to the MonitorClient it makes, or pass a ``client``.
    """

    def __init__(
        self,
        url: str,
        *,
        session: str | None = None,
        client: MonitorClient | None = None,
        on_error: Callable[[MonitorError], Any] | None = None,
        on_playout: Callable[[str, Heard], Any] | None = None,
        **client_options,
    ):
        self._on_error = on_error if on_error is not None else _warn
        self.client = client or MonitorClient(url, session=session, on_error=self._on_error, **client_options)
        self.on_playout = on_playout
        self._failed: set[str] = set()
        self._players: weakref.WeakSet = weakref.WeakSet()  # the players it made
        self._turns: dict[str, _Turn] = {}  # by turn id
        self._by_speech: dict[str, _Turn] = {}  # speech id -> its turn
        self._fillers: dict[str, _Turn] = {}  # speech id of a filler -> the turn it fills
        self._current: _Turn | None = None  # the turn whose LLM stream started last
        self._created: str | None = None  # the speech LiveKit created last
        self._counter = 0

    # -- the app's side

    async def ready(self, timeout: float | None = None) -> bool:
        """Connect; True once connected (False: the monitor cannot be reached,
        which has been reported, and the agent goes on unmonitored). The
        monitor times a turn from its turn_start's arrival: await this before
        the first turn."""
        return await self.client.ready(timeout)

    async def close(self, timeout: float = 2.0) -> None:
        """Lets the players play out what they hold (a room's output may have
        said it finished first), ends what is left (a turn still waiting for
        its tool, a filler that was played last), lets what is buffered leave
        (within the connection's close timeout) and closes the connection;
        timeout bounds the wait for the players."""
        for p in list(self._players):
            try:
                await p.played_out(timeout)
            except Exception as e:
                self._fail("close", e)
        for t in list(self._turns.values()):
            self._settle(t)
        await self.client.close()

    def attach(self, session):
        """Follows a ``voice.AgentSession``: the speeches it creates (turn ids,
        fillers said while a tool runs) and the tools it has run. Returns the
        session."""
        session.on("speech_created", self._guard("speech_created", self._speech_created))
        session.on("function_tools_executed", self._guard("function_tools_executed", self._tools_executed))
        return session

    def wrap_llm(self, llm):
        """Reports the streams of llm (an ``llm.LLM``, e.g. ``openai.LLM``);
        returns llm."""
        chat = llm.chat

        def monitored_chat(*args, **kwargs):
            stream = chat(*args, **kwargs)
            try:
                turn = self._begin_turn()
            except Exception as e:
                self._fail("chat", e)
                return stream
            return _Watched(stream, lambda c: self._chunk(turn, c), lambda why: self._stream_end(turn, why), self._fail)

        llm.chat = monitored_chat
        return llm

    def wrap_tts(self, tts):
        """Reports what a TTS without streaming input (e.g. ``openai.TTS``,
        which LiveKit drives through ``tts.StreamAdapter`` and its sentence
        tokenizer) is given and the audio it returns; a ``tts.StreamAdapter``
        you built is followed through the TTS it wraps. Returns tts."""
        inner = getattr(tts, "_wrapped_tts", None)
        target = inner if inner is not None and hasattr(inner, "synthesize") else tts
        synthesize = target.synthesize

        def monitored_synthesize(text, *args, **kwargs):
            stream = synthesize(text, *args, **kwargs)
            try:
                return self._synthesis(stream, text)
            except Exception as e:
                self._fail("synthesize", e)
                return stream

        target.synthesize = monitored_synthesize
        return tts

    def player(self, *, sample_rate: int | None = 24000, next_in_chain=None, period: float = 0.005):
        """A paced player for ``session.output.audio``: it plays each frame in
        real time from when it arrived, as a room's audio track does, counts
        the silence it has to play inside a turn's speech, and reports it.
        With ``next_in_chain`` (the room's output) the frames go on there too,
        and that output says when playback finished."""
        from .player import PacedAudioOutput

        return PacedAudioOutput(self, sample_rate=sample_rate, next_in_chain=next_in_chain, period=period)

    # -- failures

    def _fail(self, where: str, e: BaseException) -> None:
        """Reports a failure of the adapter's own, once per place."""
        if where in self._failed:
            return
        self._failed.add(where)
        try:
            self._on_error(MonitorError("adapter", f"underrun_livekit failed in {where} ({e!r}); the agent goes on"))
        except Exception:
            pass

    def _guard(self, where: str, f):
        def guarded(*args):
            try:
                f(*args)
            except Exception as e:
                self._fail(where, e)

        return guarded

    def _send(self, m: dict) -> None:
        self.client.send(m)

    # -- LiveKit's speeches

    @staticmethod
    def _speech_id() -> str | None:
        """The speech the running task works for, as LiveKit records it."""
        if _speech_var is None:
            return None
        handle = _speech_var.get(None)
        return getattr(handle, "id", None) if handle is not None else None

    def _speech_created(self, ev) -> None:
        handle = ev.speech_handle
        self._created = handle.id
        waiting = next((t for t in self._turns.values() if t.waiting or (t.tool and not t.ended)), None)
        if getattr(ev, "source", None) == "say" and waiting is not None:
            # said while a tool runs: a filler of that turn
            self._fillers[handle.id] = waiting
        handle.add_done_callback(self._guard("speech done", self._speech_done))

    def _speech_done(self, handle) -> None:
        self._fillers.pop(handle.id, None)
        turn = self._by_speech.pop(handle.id, None)
        if turn is not None:
            self._settle(turn)

    def _settle(self, t: _Turn) -> None:
        """Ends t where it still waits (its tool got no reply) and reports
        what the player held of it (a segment before a tool call or a filler
        with nothing after it)."""
        if not t.ended:
            self._end(t, "ok")
        if t.held is not None and not t.played:
            held, t.held = t.held, None
            self._playout(t, Heard(held.start_ms, held.gaps))
        self._turns.pop(t.id, None)

    def _tools_executed(self, ev) -> None:
        t = self._by_speech.get(self._speech_id() or "") or next((x for x in self._turns.values() if x.tool and not x.ended), None)
        if t is not None and t.tool and not t.tool_returned:
            t.tool_returned = True
            self._send({"type": "tool_result", "turn": t.id, "t_ms": t.ms()})

    # -- the LLM

    def _begin_turn(self) -> _Turn:
        sid = self._speech_id()
        if sid is None:
            sid, self._created = self._created, None
        t = self._by_speech.get(sid) if sid else None
        if t is not None and t.waiting and not t.ended:
            # the reply to its tool call: the same turn goes on
            if not t.tool_returned:
                self._send({"type": "tool_result", "turn": t.id, "t_ms": t.ms()})
            t.tool, t.tool_returned, t.waiting = None, False, False
            self._current = t
            return t
        for w in [x for x in self._turns.values() if x.waiting and not x.ended and x is not t]:
            self._end(w, "ok")  # no reply to its tool came
        self._counter += 1
        tid = sid or f"turn-{self._counter}"
        if tid in self._turns:
            tid = f"{tid}#{self._counter}"  # a second LLM call of one speech
        t = _Turn(tid, _now_ms())
        while len(self._turns) >= MAX_TURNS:
            old = next(iter(self._turns.values()))
            self._settle(old)
        self._turns[tid] = t
        if sid:
            self._by_speech[sid] = t
        self._current = t
        self._send({"type": "turn_start", "turn": tid})
        return t

    def _chunk(self, t: _Turn, chunk) -> None:
        if t.ended:
            return
        usage = getattr(chunk, "usage", None)
        if usage is not None and getattr(usage, "completion_tokens", 0):
            t.stream_tokens = usage.completion_tokens  # this stream's; a turn across a tool call has more
        delta = getattr(chunk, "delta", None)
        if delta is None:
            return
        calls = getattr(delta, "tool_calls", None) or []
        if calls and t.tool is None:
            # the LLM's reply stops here for a tool call
            t.tool = ",".join(c.name for c in calls)[:256]
            self._send({"type": "tool_call", "turn": t.id, "name": t.tool, "t_ms": t.ms()})
        text = getattr(delta, "content", None)
        if not text:
            return
        t.chunks += 1
        self._send({"type": "chunk", "turn": t.id, "text": text, "tokens": 1, "t_ms": t.ms()})

    def _stream_end(self, t: _Turn, why) -> None:
        t.output_tokens += t.stream_tokens
        t.stream_tokens = 0
        if t.ended:
            return
        if why is None and t.tool:
            t.waiting = True  # the reply's stream goes on as this turn
            return
        if why is None:
            self._end(t, "ok")
        elif why == "cancelled":
            self._end(t, "cancelled")
        elif isinstance(why, BaseException) and not isinstance(why, Exception):
            self._end(t, "cancelled")  # CancelledError: LiveKit stopped the speech
        else:
            self._end(t, "error", repr(why))

    def _end(self, t: _Turn, status: str, error: str | None = None) -> None:
        if t.ended:
            return
        t.ended = True
        t.waiting = False
        m = {"type": "turn_end", "turn": t.id, "status": status}
        if t.output_tokens:
            m["output_tokens"] = t.output_tokens
        if error:
            m["error"] = error[:512]
        self._send(m)

    # -- the TTS

    def _synthesis(self, stream, text: str):
        sid = self._speech_id()
        if sid is not None and sid in self._fillers:
            return stream  # a filler: its frames are told apart at the player
        t = self._by_speech.get(sid) if sid else self._current
        if t is None or t.played or len(t.speech) >= MAX_SPEECH:
            return stream
        index = len(t.speech)
        t.speech.append(text)
        self._send({"type": "speech", "turn": t.id, "text": text, "t_ms": t.ms()})
        got = [0.0]

        def frame(audio) -> None:
            f = getattr(audio, "frame", None)
            if f is None or not f.sample_rate:
                return
            seconds = f.samples_per_channel / f.sample_rate
            got[0] += seconds
            if t.audio and t.audio[-1][0] == index:
                t.audio[-1][1] += seconds
            else:
                t.audio.append([index, seconds])

        def end(why) -> None:
            if got[0] > 0 and text.strip():
                self._send({"type": "tts", "turn": t.id, "text": text, "audio_ms": got[0] * 1000})

        return _Watched(stream, frame, end, self._fail)

    # -- the player's side

    def _frame(self, seconds: float):
        """The turn, sentence and filler mark of a frame of seconds reaching
        the player now: (turn or None, sentence, filler)."""
        sid = self._speech_id()
        if sid is not None and sid in self._fillers:
            return self._fillers[sid], -1, True
        t = self._by_speech.get(sid) if sid else self._current
        if t is None or t.played:
            return None, 0, False
        return t, t.sentence_of(seconds), False

    def _audio(self, t: _Turn, speech: int, at: float, seconds: float, filler: bool) -> None:
        m = {"type": "audio", "turn": t.id, "audio_ms": seconds * 1000, "t_ms": t.ms(at)}
        if filler:
            m["filler"] = True
        else:
            m["speech"] = speech
        self._send(m)

    def _barge_in(self, t: _Turn, at: float) -> None:
        if t.played:
            return
        t.played = t.ended = True
        self._send({"type": "barge_in", "turn": t.id, "t_ms": t.ms(at)})
        self._turns.pop(t.id, None)

    def _playout(self, t: _Turn, heard: Heard) -> None:
        if t.played:
            return
        t.played = True
        self._send(
            {
                "type": "playout",
                "turn": t.id,
                "start_ms": heard.start_ms,
                "gaps": [{"start_ms": g.start_ms, "duration_ms": g.duration_ms} for g in heard.gaps[:1024]],
            }
        )
        self._turns.pop(t.id, None)
        if self.on_playout is not None:
            try:
                self.on_playout(t.id, heard)
            except Exception as e:
                self._fail("on_playout", e)
