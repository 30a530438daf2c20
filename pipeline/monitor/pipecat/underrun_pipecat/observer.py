"""UnderrunObserver: reports a Pipecat pipeline to ``underrun monitor``.

Written against pipecat-ai 1.14.0 (``observers/base_observer.py``
``BaseObserver``/``FramePushed``, ``services/tts_service.py``
``TTSService.on_tts_request``, ``transports/base_output.py``
``MediaSender._audio_task_handler``, ``observers/turn_tracking_observer.py``,
``utils/tracing/turn_trace_observer.py``). What it reports, turn by turn (a
turn is one bot reply, named by Pipecat's turn number):

- ``turn_start`` when an LLM service pushes ``LLMFullResponseStartFrame``
  (the request is sent right after), and the reply's ``LLMTextFrame``\\s as
  ``chunk`` messages; ``turn_end`` at its ``LLMFullResponseEndFrame``;
- a function call (``FunctionCallsStartedFrame``) as ``tool_call`` and its
  ``FunctionCallResultFrame`` as ``tool_result``: the LLM's reply to the
  result goes on as the same turn;
- each text the TTS service's sentence aggregation hands to synthesis (its
  ``on_tts_request`` event) as ``speech``, and, once its audio is whole, a
  ``tts`` fact (its text and audio length);
- each audio frame the output transport sent (the frames it pushes on after
  writing them) as ``audio``, with the sentence it belongs to;
- ``playout`` once the transport has sent the reply's last audio.

All times are the pipeline clock's (``FramePushed.timestamp``), so the
observer's own queue does not move them. Nothing here blocks or raises into
the pipeline: messages go through MonitorClient's bounded queue, and an
error in the observer is reported once and then ignored.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from loguru import logger
from pipecat.frames.frames import (
    AggregatedTextFrame,
    FunctionCallResultFrame,
    FunctionCallsStartedFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.observers.base_observer import BaseObserver, FrameProcessed, FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.tts_service import TTSService
from pipecat.transports.base_output import BaseOutputTransport

from underrun_monitor import MonitorClient, MonitorError

#: A silence of at least this length inside a turn is an interruption (as
#: underrun grades them); shorter ones are glitches.
INTERRUPTION_MS = 150.0


def _ms(ns: int) -> float:
    return ns / 1e6


def _seconds(frame) -> float:
    """The length of an audio frame, in seconds."""
    width = 2 * max(frame.num_channels, 1)
    return len(frame.audio) / width / frame.sample_rate if frame.sample_rate else 0.0


@dataclass
class HeardGap:
    """A silence the listener hears inside a turn: from ``start_ms`` (since
    the turn's LLM request) for ``duration_ms``."""

    start_ms: float
    duration_ms: float


@dataclass
class _Turn:
    id: str
    begin: int  # pipeline clock, ns
    span: Any = None
    chunks: int = 0
    speech: list[str] = field(default_factory=list)
    tool: bool = False  # its LLM stream stopped for a function call
    tool_returned: bool = False
    ended: bool = False
    tts_done: bool = False  # the TTS pushed the reply's LLMFullResponseEndFrame
    contexts: int = 0  # TTS contexts started and not yet stopped at the transport
    tts_speech: int = -1  # the sentence the TTS's audio now belongs to
    tts_audio: float = 0.0  # seconds of that sentence's audio
    played: bool = False
    # what the listener hears: the transport's frames back to back
    start_ms: float | None = None
    end_ms: float = 0.0
    gaps: list[HeardGap] = field(default_factory=list)

    def ms(self, ns: int) -> float:
        return max(_ms(ns - self.begin), 0.0)


class UnderrunObserver(BaseObserver):
    """Reports a Pipecat pipeline's LLM text, the text its TTS is given, the
    audio its output transport sends and its function calls to ``underrun
    monitor`` (``url``, e.g. ``ws://127.0.0.1:8765``), one session per
    observer. Pass it in ``PipelineTask(observers=[...])`` and call
    ``attach(task)`` for Pipecat's turn numbers and turn spans.

    ``on_gap(turn_id, gap)`` and ``on_playout(turn_id, start_ms, gaps)``, when
    given, are told what the listener hears (the transport's frames played
    back to back, each from when it was sent); ``on_turn_start(turn_id,
    begin_ns)`` when a turn begins (the pipeline clock's time).
    """

    def __init__(
        self,
        url: str,
        *,
        session: str | None = None,
        token: str | None = None,
        client: MonitorClient | None = None,
        on_error=None,
        on_gap=None,
        on_playout=None,
        on_turn_start=None,
        **kwargs,
    ):
        # every push: the frames that matter are those the TTS and the
        # output transport pass on, not only where they were first pushed
        super().__init__(observe_every_push=True, **kwargs)
        self.client = client or MonitorClient(url, session=session, token=token, on_error=on_error)
        self._on_gap = on_gap
        self._on_playout = on_playout
        self._on_turn_start = on_turn_start
        self._on_error = on_error if on_error is not None else (lambda e: logger.warning(f"underrun monitor: {e}"))
        self._failed: set[str] = set()
        self._tts_services: set[int] = set()
        self._llm_turn: _Turn | None = None  # the turn whose LLM reply streams
        self._tts_turn: _Turn | None = None  # the turn whose reply the TTS speaks
        self._fifo: deque = deque()  # [turn, sentence, seconds, pushed ns] of TTS audio not yet sent
        self._last_push: int | None = None  # when the transport pushed on its last frame
        self._by_frame: dict[int, list] = {}  # TTS audio frame id -> its _fifo entry, until the transport takes it
        self._pending: list[_Turn] = []  # turns not yet played out, in order
        self._counter = 0
        self._pipecat_turn: int | None = None
        self._pipecat_span = None
        self._per_turn: dict[int, int] = {}
        self._trace_observer = None
        self._clock = None

    # -- the app's side

    def attach(self, task) -> UnderrunObserver:
        """Follow task's turn tracking (``PipelineTask.turn_tracking_observer``):
        turns are named ``turn-N`` by Pipecat's turn number, and with tracing
        on (``enable_tracing=True``) each turn's heard gaps are written onto
        Pipecat's own turn span, whose trace context the turn_start carries."""
        tracker = getattr(task, "turn_tracking_observer", None)
        self._trace_observer = getattr(task, "turn_trace_observer", None)
        if tracker is not None:
            tracker.add_event_handler("on_turn_started", self._turn_started)
        try:
            self._follow_pipeline(getattr(task, "pipeline", None))
        except Exception as e:
            self._fail("attach", e)
        return self

    async def ready(self, timeout: float | None = None) -> bool:
        """Connect to the monitor; True once connected (False: it cannot be
        reached, which has been reported; the pipeline goes on)."""
        return await self.client.ready(timeout)

    async def close(self) -> None:
        """Send what is left (within a timeout) and close the connection."""
        await self.client.close()

    async def cleanup(self):
        """Pipecat's end of the observer: closes the connection."""
        try:
            await self.client.close()
        except Exception as e:
            self._fail("cleanup", e)
        await super().cleanup()

    # -- Pipecat's side

    def _follow_tts(self, service: TTSService) -> None:
        """Hears from service each text it hands to synthesis."""
        self._tts_services.add(id(service))
        service.add_event_handler("on_tts_request", self._tts_request)

    def _follow_pipeline(self, processor, depth: int = 0) -> None:
        """Follows every TTS service inside processor (a pipeline)."""
        if isinstance(processor, TTSService) and id(processor) not in self._tts_services:
            self._follow_tts(processor)
        if depth < 8:
            for p in getattr(processor, "processors", None) or []:
                self._follow_pipeline(p, depth + 1)

    async def _turn_started(self, tracker, number: int):
        try:
            self._pipecat_turn = number
            obs = self._trace_observer
            # TurnTraceObserver has made the span already (its handler was
            # registered first): Pipecat gives a turn's SpanContext, not the
            # span, so the span is taken from where it keeps it
            self._pipecat_span = getattr(obs, "_current_span", None) if obs is not None else None
        except Exception as e:
            self._fail("turn", e)

    async def on_push_frame(self, data: FramePushed):
        """Reports the frames the monitor needs; never raises."""
        try:
            self._push(data)
        except Exception as e:
            self._fail(type(data.frame).__name__, e)

    async def on_process_frame(self, data: FrameProcessed):
        """The output transport taking a TTS audio frame in: when the frames
        it completes are queued to be written. Never raises."""
        try:
            f = data.frame
            if isinstance(f, TTSAudioRawFrame) and isinstance(data.processor, BaseOutputTransport):
                e = self._by_frame.pop(f.id, None)
                if e is not None:
                    e[3] = data.timestamp
        except Exception as e:
            self._fail("process", e)

    def _fail(self, where: str, e: Exception) -> None:
        if where in self._failed:
            return
        self._failed.add(where)
        try:
            self._on_error(MonitorError("observer", f"the observer failed on {where}: {e!r}; it goes on"))
        except Exception:
            pass

    def _push(self, data: FramePushed) -> None:
        f, src, ts = data.frame, data.source, data.timestamp
        if isinstance(f, (FunctionCallsStartedFrame, FunctionCallResultFrame, InterruptionFrame)):
            if not data.first_push:
                return
            if isinstance(f, FunctionCallsStartedFrame):
                self._tool_call(f, ts)
            elif isinstance(f, FunctionCallResultFrame):
                self._tool_result(ts)
            else:
                self._interrupted(ts)
            return
        for p in (src, data.destination):
            if isinstance(p, TTSService) and id(p) not in self._tts_services:
                self._follow_tts(p)
        if isinstance(f, StartFrame):
            self.client.start()
            return
        if isinstance(src, BaseOutputTransport) and data.direction == FrameDirection.DOWNSTREAM:
            if isinstance(f, TTSAudioRawFrame):
                self._sent(f, ts)
            elif isinstance(f, TTSStoppedFrame):
                self._stopped_at_transport()
            return
        if isinstance(src, LLMService) and data.direction == FrameDirection.DOWNSTREAM:
            if isinstance(f, LLMFullResponseStartFrame):
                self._response_start(ts)
            elif isinstance(f, LLMTextFrame):
                self._chunk(f, ts)
            elif isinstance(f, LLMFullResponseEndFrame):
                self._response_end()
            return
        if isinstance(src, TTSService) and data.direction == FrameDirection.DOWNSTREAM:
            self._from_tts(f, ts)

    def _send(self, m: dict) -> None:
        self.client.send(m)

    # -- the LLM

    def _response_start(self, ts: int) -> None:
        t = self._llm_turn
        if t is not None and t.tool and not t.ended:
            # the reply to a function call: the same turn goes on
            if not t.tool_returned:
                self._send({"type": "tool_result", "turn": t.id, "t_ms": t.ms(ts)})
            t.tool = t.tool_returned = False
            t.tts_done = False
            return
        if t is not None and not t.ended:
            self._end(t, "cancelled")
        if self._pipecat_turn is not None:
            n = self._pipecat_turn
            k = self._per_turn.get(n, 0) + 1
            self._per_turn[n] = k
            tid = f"turn-{n}" if k == 1 else f"turn-{n}#{k}"
        else:
            self._counter += 1
            tid = f"turn-{self._counter}"
        t = _Turn(tid, ts)
        span = self._pipecat_span
        if span is not None and self._per_turn.get(self._pipecat_turn) == 1 and span.is_recording():
            t.span = span
        self._llm_turn = t
        self._pending.append(t)
        m = {"type": "turn_start", "turn": tid}
        if t.span is not None:
            ctx = t.span.get_span_context()
            m["traceparent"] = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
            t.span.set_attribute("underrun.turn", tid)
        self._send(m)
        if self._on_turn_start is not None:
            self._on_turn_start(tid, ts)

    def _chunk(self, f: LLMTextFrame, ts: int) -> None:
        t = self._llm_turn
        if t is None or t.ended:
            return
        t.chunks += 1
        self._send({"type": "chunk", "turn": t.id, "text": f.text, "tokens": 1, "t_ms": t.ms(ts)})

    def _tool_call(self, f: FunctionCallsStartedFrame, ts: int) -> None:
        t = self._llm_turn
        if t is None or t.ended or t.tool:
            return
        t.tool = True
        names = ",".join(c.function_name for c in f.function_calls)
        self._send({"type": "tool_call", "turn": t.id, "name": names[:256], "t_ms": t.ms(ts)})

    def _tool_result(self, ts: int) -> None:
        t = self._llm_turn
        if t is None or not t.tool or t.tool_returned:
            return
        t.tool_returned = True
        self._send({"type": "tool_result", "turn": t.id, "t_ms": t.ms(ts)})

    def _response_end(self) -> None:
        t = self._llm_turn
        if t is None or t.ended or t.tool:
            return  # (a function call's reply goes on as the same turn)
        self._end(t, "ok")

    def _end(self, t: _Turn, status: str) -> None:
        t.ended = True
        self._send({"type": "turn_end", "turn": t.id, "status": status})
        self._maybe_played(t)

    def _interrupted(self, ts: int) -> None:
        for t in self._pending:
            if not t.played:
                t.played = t.ended = True
                self._send({"type": "barge_in", "turn": t.id, "t_ms": t.ms(ts)})
        self._pending.clear()
        self._fifo.clear()
        self._by_frame.clear()
        self._llm_turn = self._tts_turn = None

    # -- the TTS

    async def _tts_request(self, service, context_id, text):
        """TTSService's on_tts_request: text goes to synthesis now."""
        try:
            # the TTS aggregates the text of the reply the LLM streams
            t = self._llm_turn
            if t is None or t.played:
                return
            ts = service.get_clock().get_time()
            t.speech.append(text)
            self._send({"type": "speech", "turn": t.id, "text": text, "t_ms": t.ms(ts)})
        except Exception as e:
            self._fail("on_tts_request", e)

    def _from_tts(self, f, ts: int) -> None:
        if isinstance(f, LLMFullResponseStartFrame):
            # queued behind the audio before it: what follows is this reply's
            t = self._llm_turn
            if t is not None and t is not self._tts_turn:
                self._tts_fact(self._tts_turn)
                self._tts_turn = t
                t.tts_speech = -1
            return
        t = self._tts_turn
        if t is None or t.played:
            return
        if isinstance(f, AggregatedTextFrame) and not f.skip_tts:
            # announced just before its audio: the audio after it is its
            self._tts_fact(t)
            t.tts_speech += 1
        elif isinstance(f, TTSStartedFrame):
            t.contexts += 1
        elif isinstance(f, TTSAudioRawFrame):
            s = _seconds(f)
            t.tts_audio += s
            e = [t, max(t.tts_speech, 0), s, ts]
            self._fifo.append(e)
            self._by_frame[f.id] = e
            if len(self._by_frame) > 4096:  # (a transport that never took them)
                self._by_frame.pop(next(iter(self._by_frame)))
        elif isinstance(f, TTSStoppedFrame):
            self._tts_fact(t)
        elif isinstance(f, LLMFullResponseEndFrame):
            t.tts_done = not t.tool
            self._maybe_played(t)

    def _tts_fact(self, t: _Turn | None) -> None:
        """The sentence t's TTS spoke last is whole: its text and audio length."""
        if t is None or t.tts_audio <= 0 or not (0 <= t.tts_speech < len(t.speech)):
            return
        text = t.speech[t.tts_speech]
        if text.strip():
            self._send({"type": "tts", "turn": t.id, "text": text, "audio_ms": t.tts_audio * 1000})
        t.tts_audio = 0.0

    # -- the output transport

    def _sent(self, f: TTSAudioRawFrame, ts: int) -> None:
        """A frame the transport sent, pushed on at ts once written (and, for
        a transport that paces, once its time to play has come).

        The transport's audio task (MediaSender._audio_task_handler) writes a
        frame as soon as it has pushed the one before and the frame is in its
        queue, where it is put when the transport takes in the TTS audio that
        completes it (on_process_frame). Its sentence is that of its last
        sample."""
        need = _seconds(f)
        if need <= 0:
            return
        turn, speech, queued = None, 0, ts
        while need > 1e-9 and self._fifo:
            head = self._fifo[0]
            turn, speech, queued = head[0], head[1], head[3]
            take = min(need, head[2])
            head[2] -= take
            need -= take
            if head[2] <= 1e-9:
                self._fifo.popleft()
        # written right after the frame before was pushed on, if it was in
        # the queue by then; else when it came, and then it is pushed on at
        # once (a pacing transport sleeps only for frames queued ahead)
        last, self._last_push = self._last_push, ts
        written = last if last is not None and queued <= last else ts
        if turn is None:  # padding of the last frame, or audio not from a TTS we followed
            turn = self._tts_turn
            if turn is None or not turn.speech:
                return
            speech = max(turn.tts_speech, 0)
        if turn.played or not turn.speech:
            return
        at = turn.ms(written)
        length = _seconds(f) * 1000
        self._send({"type": "audio", "turn": turn.id, "audio_ms": length, "t_ms": at, "speech": min(speech, len(turn.speech) - 1)})
        # the listener plays the frames back to back, each from when it was sent
        if turn.start_ms is None:
            turn.start_ms, turn.end_ms = at, at + length
            return
        if at > turn.end_ms:
            gap = HeardGap(turn.end_ms, at - turn.end_ms)
            turn.gaps.append(gap)
            self._gap(turn, gap)
        turn.end_ms = max(at, turn.end_ms) + length

    def _gap(self, t: _Turn, gap: HeardGap) -> None:
        if t.span is not None and t.span.is_recording():
            cls = "interruption" if gap.duration_ms >= INTERRUPTION_MS else "glitch"
            t.span.add_event(
                "underrun",
                {"underrun.at_ms": gap.start_ms, "underrun.duration_ms": gap.duration_ms, "underrun.class": cls},
            )
        if self._on_gap is not None:
            self._on_gap(t.id, gap)

    def _stopped_at_transport(self) -> None:
        for t in self._pending:
            if t.contexts > 0:
                t.contexts -= 1
                self._maybe_played(t)
                return

    def _maybe_played(self, t: _Turn) -> None:
        """Sends t's playout once its reply ended and the transport sent its
        last audio."""
        if t.played or not t.ended or (t.speech and (not t.tts_done or t.contexts > 0)):
            return
        if any(e[0] is t for e in self._fifo):
            return
        t.played = True
        if t in self._pending:
            self._pending.remove(t)
        self._send({"type": "playout", "turn": t.id})
        if t.span is not None and t.span.is_recording():
            silence = sum(g.duration_ms for g in t.gaps)
            t.span.set_attribute("underrun.gaps", len(t.gaps))
            t.span.set_attribute(
                "underrun.interruptions", sum(1 for g in t.gaps if g.duration_ms >= INTERRUPTION_MS)
            )
            t.span.set_attribute("underrun.silence_ms", silence)
            if t.start_ms is not None:
                t.span.set_attribute("underrun.ttfa_ms", t.start_ms)
        if self._on_playout is not None:
            self._on_playout(t.id, t.start_ms, list(t.gaps))
