"""Reports a LiveKit Agents (Python) voice pipeline to ``underrun monitor``:
every LLM text chunk as it arrives, every text the StreamAdapter's sentence
tokenizer hands to the TTS, every audio frame as it reaches the player, and
what a paced player heard of each turn, turn by LiveKit speech id. A tool
call the LLM makes is a tool_call, and a tool_result once LiveKit has run
the tools: the reply's LLM stream goes on as the same turn. (The Node
adapter's Monitor.say, a filler said while a tool runs, has no Python
counterpart yet.)

Written and tested against livekit-agents 1.8.9 and livekit-plugins-openai
1.8.9 (``voice/agent.py`` ``Agent.default.llm_node``/``tts_node``,
``tts/stream_adapter.py``, ``voice/io.py`` ``AudioOutput``,
``voice/events.py``); cmd/underrun/docs/livekit.md. It mirrors the Node
adapter (pipeline/monitor/livekit-agents-js), with one difference the
Python framework makes: the frames reaching the player are cut anew by the
TTS's AudioEmitter, so a frame's sentence is found by the audio before it,
not by the frame itself.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from livekit.agents.voice import io
from underrun_monitor import MonitorClient, MonitorError

__all__ = ["Monitor", "PacedAudioOutput", "MonitorError"]


def _now_ms() -> float:
    return time.perf_counter() * 1000


class _Turn:
    """One LLM response: a LiveKit speech."""

    def __init__(self, tid: str):
        self.id = tid
        self.begin = _now_ms()
        self.speech = 0  # speech messages sent
        self.output_tokens = 0
        self.stream_tokens = 0
        self.tool_call: str | None = None
        self.tool_returned = False
        self.ended = False
        self.held = None  # the player's segment, held across a tool call

    def ms(self) -> float:
        return _now_ms() - self.begin


class Monitor:
    """One ingest connection (one LiveKit session) to ``underrun monitor`` at
    url (e.g. ws://127.0.0.1:8765). Never blocks or raises into the agent:
    see underrun_monitor.MonitorClient."""

    def __init__(self, url: str, *, session: str | None = None, token: str | None = None, on_error=None):
        self.client = MonitorClient(url, session=session, token=token, on_error=on_error)
        self.on_playout = None  # (turn id, start_ms, gaps) once a turn is played out
        self._turns: dict[str, _Turn] = {}
        self._current: _Turn | None = None
        self._tool_turn: _Turn | None = None
        self._speech_id: str | None = None
        self._fifo: deque = deque()  # [turn, speech index, seconds] of TTS audio not yet played
        self._counter = 0

    async def ready(self, timeout: float | None = None) -> bool:
        """Connect; True once connected. Await it before the first turn: the
        monitor times a turn from its turn_start's arrival."""
        return await self.client.ready(timeout)

    async def close(self) -> None:
        """Send what is left (within a timeout) and close the connection."""
        await self.client.close()

    def _send(self, m: dict) -> None:
        self.client.send(m)

    def attach(self, session):
        """Follows an AgentSession: each speech it creates names the turn of
        the LLM stream that follows (LiveKit's speech_id)."""

        def created(ev):
            self._speech_id = ev.speech_handle.id

        def executed(ev):
            t = self._tool_turn
            if t is not None and not t.tool_returned:
                t.tool_returned = True
                self._send({"type": "tool_result", "turn": t.id, "t_ms": t.ms()})

        session.on("speech_created", created)
        session.on("function_tools_executed", executed)
        return self

    def wrap_llm(self, llm):
        """Reports the LLM streams of llm (an llm.LLM, e.g. openai.LLM); returns llm."""
        chat = llm.chat

        def wrapped(*args, **kw):
            stream = chat(*args, **kw)
            turn = self._begin_turn(kw.get("chat_ctx"))
            return _LLMStream(self, stream, turn)

        llm.chat = wrapped
        return llm

    def wrap_tts(self, tts):
        """Reports what a TTS without streaming input (e.g. openai.TTS, which
        LiveKit drives through tts.StreamAdapter and its sentence tokenizer)
        is given and returns; returns tts."""
        synthesize = tts.synthesize

        def wrapped(text, *args, **kw):
            stream = synthesize(text, *args, **kw)
            turn = self._current
            if turn is None:
                return stream
            index = turn.speech
            turn.speech += 1
            self._send({"type": "speech", "turn": turn.id, "text": text, "t_ms": turn.ms()})
            return _Synthesis(self, stream, turn, index, text)

        tts.synthesize = wrapped
        return tts

    def player(self, *, sample_rate: int = 24000, next_in_chain=None, period_ms: float = 5.0):
        """A paced player for session.output.audio."""
        return PacedAudioOutput(self, sample_rate, next_in_chain, period_ms)

    def _begin_turn(self, chat_ctx) -> _Turn:
        waiting = self._tool_turn
        if waiting is not None:
            self._tool_turn = None
            items = getattr(chat_ctx, "items", None) or []
            if items and getattr(items[-1], "type", None) == "function_call_output":
                # the reply to a tool call: the same turn's LLM stream resumes
                if not waiting.tool_returned:
                    self._send({"type": "tool_result", "turn": waiting.id, "t_ms": waiting.ms()})
                waiting.tool_call = None
                waiting.tool_returned = False
                self._speech_id = None
                self._current = waiting
                return waiting
            self._end_turn(waiting, "ok")
        tid = self._speech_id or f"turn-{self._counter + 1}"
        self._counter += 1
        self._speech_id = None
        if tid in self._turns:
            tid = f"{tid}#{self._counter}"
        t = _Turn(tid)
        self._turns[tid] = t
        self._current = t
        self._send({"type": "turn_start", "turn": tid})
        return t

    def _chunk(self, t: _Turn, chunk) -> None:
        if t.ended:
            return
        delta = getattr(chunk, "delta", None)
        calls = getattr(delta, "tool_calls", None) or []
        if calls and t.tool_call is None:
            t.tool_call = calls[0].name
            self._send({"type": "tool_call", "turn": t.id, "name": calls[0].name[:256], "t_ms": t.ms()})
        usage = getattr(chunk, "usage", None)
        if usage is not None and usage.completion_tokens:
            t.stream_tokens = usage.completion_tokens
        text = getattr(delta, "content", None)
        if text:
            self._send({"type": "chunk", "turn": t.id, "text": text, "tokens": 1, "t_ms": t.ms()})

    def _stream_done(self, t: _Turn) -> None:
        t.output_tokens += t.stream_tokens
        t.stream_tokens = 0
        if t.tool_call is not None:
            self._tool_turn = t  # the turn goes on in the reply's stream
        else:
            self._end_turn(t, "ok")

    def _end_turn(self, t: _Turn, status: str) -> None:
        if t.ended:
            return
        t.ended = True
        m = {"type": "turn_end", "turn": t.id, "status": status}
        if t.output_tokens:
            m["output_tokens"] = t.output_tokens
        self._send(m)

    def _frame(self, seconds: float):
        """The turn and sentence of a frame reaching the player: those of the
        TTS audio it plays, in order."""
        turn, speech = None, 0
        need = seconds
        while need > 1e-9 and self._fifo:
            head = self._fifo[0]
            turn, speech = head[0], head[1]
            take = min(need, head[2])
            head[2] -= take
            need -= take
            if head[2] <= 1e-9:
                self._fifo.popleft()
        if turn is None:
            turn = self._current
            speech = max(turn.speech - 1, 0) if turn is not None else 0
        return turn, speech

    def _audio(self, t: _Turn, speech: int, at: float, seconds: float) -> None:
        self._send({"type": "audio", "turn": t.id, "audio_ms": seconds * 1000, "t_ms": at - t.begin, "speech": speech})

    def _playout(self, t: _Turn, start_ms: float, gaps: list) -> None:
        self._send(
            {
                "type": "playout",
                "turn": t.id,
                "start_ms": start_ms,
                "gaps": [{"start_ms": g[0], "duration_ms": g[1]} for g in gaps],
            }
        )
        self._turns.pop(t.id, None)
        if self.on_playout is not None:
            self.on_playout(t.id, start_ms, gaps)


class _LLMStream:
    """An LLMStream, reported chunk by chunk as LiveKit reads it."""

    def __init__(self, monitor: Monitor, stream, turn: _Turn):
        self._m, self._s, self._t = monitor, stream, turn
        self._done = False

    async def __aenter__(self):
        await self._s.__aenter__()
        return self

    async def __aexit__(self, *exc):
        self._finish(cancelled=not self._done)
        return await self._s.__aexit__(*exc)

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            chunk = await self._s.__anext__()
        except StopAsyncIteration:
            self._done = True
            self._finish(cancelled=False)
            raise
        try:
            self._m._chunk(self._t, chunk)
        except Exception as e:  # never into the agent
            self._m.client._report("adapter", f"the adapter failed on a chunk: {e!r}")
        return chunk

    def _finish(self, cancelled: bool) -> None:
        if getattr(self, "_finished", False):
            return
        self._finished = True
        if cancelled and self._m._tool_turn is not self._t:
            self._m._end_turn(self._t, "cancelled")
        elif not cancelled:
            self._m._stream_done(self._t)

    async def aclose(self):
        self._finish(cancelled=not self._done)
        return await self._s.aclose()

    def __getattr__(self, name):
        return getattr(self._s, name)


class _Synthesis:
    """A ChunkedStream of one text: its audio goes on the monitor's queue of
    audio to be played, and a tts fact once it is whole."""

    def __init__(self, monitor: Monitor, stream, turn: _Turn, index: int, text: str):
        self._m, self._s, self._t, self._i, self._text = monitor, stream, turn, index, text
        self._audio = 0.0

    async def __aenter__(self):
        await self._s.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._s.__aexit__(*exc)

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            ev = await self._s.__anext__()
        except StopAsyncIteration:
            if self._i >= 0 and self._audio > 0 and self._text.strip():
                self._m._send({"type": "tts", "turn": self._t.id, "text": self._text, "audio_ms": self._audio * 1000})
            raise
        f = ev.frame
        seconds = f.samples_per_channel / f.sample_rate if f.sample_rate else 0.0
        if seconds > 0:
            self._audio += seconds
            self._m._fifo.append([self._t, self._i, seconds])
        return ev

    async def aclose(self):
        return await self._s.aclose()

    def __getattr__(self, name):
        return getattr(self._s, name)


class PacedAudioOutput(io.AudioOutput):
    """Plays what the session gives it at the sample rate, as a room's audio
    track does: every period it plays the audio due by then from the frames
    that had arrived by each moment (each stamped on arrival), so a silence
    starts where the audio ran out and ends where the next frame arrived. A
    segment (one speech, ended by flush) that is played out is reported: its
    first audio and every gap inside it."""

    def __init__(self, monitor: Monitor, sample_rate: int, next_in_chain, period_ms: float):
        super().__init__(
            label="underrun",
            capabilities=io.AudioOutputCapabilities(pause=False),
            next_in_chain=next_in_chain,
            sample_rate=sample_rate,
        )
        self._m = monitor
        self._next = next_in_chain
        self._period = period_ms / 1000
        self._queue: deque = deque()  # dict(at, rest ms, turn, speech) or dict(flush=True)
        self._seg = None
        self._timer = None

    async def capture_frame(self, frame) -> None:
        await super().capture_frame(frame)
        at = _now_ms()
        seconds = frame.samples_per_channel / frame.sample_rate
        turn, speech = self._m._frame(seconds)
        if turn is not None and turn.speech > 0:
            self._m._audio(turn, speech, at, seconds)
        self._queue.append({"at": at, "rest": seconds * 1000, "turn": turn, "speech": speech})
        self._tick()
        if self._next is not None:
            await self._next.capture_frame(frame)

    def flush(self) -> None:
        super().flush()
        self._queue.append({"flush": True})
        self._tick()
        if self._next is not None:
            self._next.flush()

    def clear_buffer(self) -> None:
        self._queue.clear()
        self._m._fifo.clear()
        if self._seg is not None:
            played = self._seg["played"] / 1000
            self._seg = None
            self.on_playback_finished(playback_position=played, interrupted=True)
        if self._next is not None:
            self._next.clear_buffer()

    def _tick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = _now_ms()
        while self._queue:
            head = self._queue[0]
            if self._seg is None:
                if head.get("flush"):
                    self._queue.popleft()  # a segment without audio
                    self.on_playback_finished(playback_position=0, interrupted=False)
                    continue
                t = head["turn"]
                held = t.held if t is not None else None
                if held is not None:
                    # the reply after a tool call goes on with its turn
                    t.held = None
                    self._seg = dict(held, turn=t, played=0.0)
                else:
                    begin = t.begin if t is not None else head["at"]
                    self._seg = {"turn": t, "cursor": head["at"], "start": head["at"] - begin, "gaps": [], "played": 0.0}
                self.on_playback_started(created_at=time.time())
            seg = self._seg
            if seg["cursor"] >= now:
                break
            if head.get("flush"):
                # the speech is over: silence waited for no audio, no underrun
                self._queue.popleft()
                self._seg = None
                t = seg["turn"]
                if t is not None and not t.ended:
                    # its LLM stream stopped for a tool call: the turn's speech
                    # goes on in the reply, after the silence
                    t.held = {"cursor": seg["cursor"], "start": seg["start"], "gaps": seg["gaps"]}
                elif t is not None:
                    self._m._playout(t, seg["start"], seg["gaps"])
                self.on_playback_finished(playback_position=seg["played"] / 1000, interrupted=False)
                continue
            if head["at"] > seg["cursor"]:
                begin = seg["turn"].begin if seg["turn"] is not None else 0
                seg["gaps"].append((seg["cursor"] - begin, head["at"] - seg["cursor"]))
                seg["cursor"] = head["at"]
            take = min(head["rest"], now - seg["cursor"])
            head["rest"] -= take
            seg["cursor"] += take
            seg["played"] += take
            if head["rest"] <= 1e-9:
                self._queue.popleft()
            else:
                break
        if self._seg is not None or self._queue:
            self._timer = asyncio.get_running_loop().call_later(self._period, self._tick)
