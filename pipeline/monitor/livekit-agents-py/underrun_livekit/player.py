"""PacedAudioOutput: a player for ``session.output.audio`` that plays as a room's
audio track does and counts the silences inside a turn's speech.

Each frame is stamped when it arrives. Every ``period`` seconds the player
plays what is due: the frames back to back, each no earlier than its arrival,
so a silence starts where the audio ran out and ends where the next frame
arrived. LiveKit ends a segment (one speech, or the part of it before a tool
call) with ``flush()``; once a segment has played out the player reports the
turn's first audio and its gaps (``playout``), unless the turn goes on: a
segment before a tool call, or a filler said while the tool ran, is held and
the next segment of the turn continues it, the silence between heard as a gap.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from livekit.agents.voice import io

from .monitor import Heard, HeardGap, _now_ms


@dataclass
class _Piece:
    at: float  # arrival, perf_counter ms
    rest: float  # ms still to play
    turn: object
    speech: int  # -1: a filler


_FLUSH = object()  # the end of a segment, in the queue


@dataclass
class _Segment:
    turn: object
    cursor: float  # how far it has played, perf_counter ms
    start_ms: float
    gaps: list = field(default_factory=list)
    spoke: bool = False  # some of it was the LLM's speech (not only a filler)
    played: float = 0.0  # ms of audio played


@dataclass
class _Held:
    start_ms: float
    gaps: list
    cursor: float


class PacedAudioOutput(io.AudioOutput):
    """Plays frames in real time from their arrival and reports what it heard
    of each turn to the Monitor (see the module's doc). Made by
    ``Monitor.player()``."""

    def __init__(self, monitor, *, sample_rate: int | None, next_in_chain=None, period: float = 0.005):
        super().__init__(
            label="underrun.PacedAudioOutput",
            capabilities=io.AudioOutputCapabilities(pause=False),
            next_in_chain=next_in_chain,
            sample_rate=sample_rate,
        )
        self._monitor = monitor
        self._next = self.next_in_chain  # (LiveKit's proxy around next_in_chain)
        self._period = period
        self._queue: deque = deque()
        self._seg: _Segment | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._idle = asyncio.Event()  # nothing queued, nothing playing
        self._idle.set()
        monitor._players.add(self)

    async def played_out(self, timeout: float) -> bool:
        """Waits (at most timeout seconds) until what the player holds has
        played; True if it has."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def capture_frame(self, frame) -> None:
        """Takes a frame: stamped, reported with its turn and sentence, queued
        to be played."""
        at = _now_ms()
        await super().capture_frame(frame)
        try:
            seconds = frame.samples_per_channel / frame.sample_rate if frame.sample_rate else 0.0
            turn, speech, filler = self._monitor._frame(seconds)
            # (a streaming TTS, which wrap_tts does not follow, has no speech
            # messages: its frames are played and counted, not reported)
            if turn is not None and seconds > 0 and (turn.speech or filler):
                self._monitor._audio(turn, speech, at, seconds, filler)
            self._queue.append(_Piece(at, seconds * 1000, turn, -1 if filler else speech))
            self._idle.clear()
            self._tick()
        except Exception as e:
            self._monitor._fail("capture_frame", e)
        if self._next is not None:
            await self._next.capture_frame(frame)

    def flush(self) -> None:
        """Ends the segment: once it has played out, it is reported."""
        super().flush()
        self._queue.append(_FLUSH)
        self._idle.clear()
        try:
            self._tick()
        except Exception as e:
            self._monitor._fail("flush", e)
        if self._next is not None:
            self._next.flush()

    def clear_buffer(self) -> None:
        """The user interrupted: what is queued is dropped, the turn playing
        is reported as barged in."""
        now = _now_ms()
        turns = ([self._seg.turn] if self._seg is not None else []) + [p.turn for p in self._queue if p is not _FLUSH]
        self._queue.clear()
        seg, self._seg = self._seg, None
        self._idle.set()
        try:
            for t in dict.fromkeys(x for x in turns if x is not None):
                self._monitor._barge_in(t, now)
        except Exception as e:
            self._monitor._fail("clear_buffer", e)
        if self._next is not None:
            self._next.clear_buffer()
        elif seg is not None:
            self.on_playback_finished(playback_position=seg.played / 1000, interrupted=True)

    def _finished(self, seg_played: float) -> None:
        if self._next is None:  # else the room's output says when it finished
            self.on_playback_finished(playback_position=seg_played / 1000, interrupted=False)

    def _tick(self) -> None:
        """Plays everything due by now and schedules the next period."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = _now_ms()
        while self._queue:
            head = self._queue[0]
            if self._seg is None:
                if head is _FLUSH:
                    self._queue.popleft()  # a segment without audio: nothing to finish
                    continue
                turn = head.turn
                held = getattr(turn, "held", None)
                if held is not None:
                    # the turn goes on after its tool call or a filler: the
                    # silence since is heard in it
                    turn.held = None
                    self._seg = _Segment(turn, held.cursor, held.start_ms, held.gaps)
                else:
                    begin = getattr(turn, "begin", head.at)
                    self._seg = _Segment(turn, head.at, head.at - begin)
                if self._next is None:
                    self.on_playback_started(created_at=time.time())
            seg = self._seg
            if seg.cursor >= now:
                break
            if head is _FLUSH:
                # the segment is over: the silence after it waited for no audio
                self._queue.popleft()
                self._seg = None
                t = seg.turn
                if t is not None and (not t.ended or not seg.spoke):
                    t.held = _Held(seg.start_ms, seg.gaps, seg.cursor)
                elif t is not None:
                    self._monitor._playout(t, Heard(seg.start_ms, seg.gaps))
                self._finished(seg.played)
                continue
            if head.at > seg.cursor:
                # nothing to play from the cursor until this frame arrived
                begin = getattr(seg.turn, "begin", 0.0)
                seg.gaps.append(HeardGap(seg.cursor - begin, head.at - seg.cursor))
                seg.cursor = head.at
            if head.speech >= 0:
                seg.spoke = True
            take = min(head.rest, now - seg.cursor)
            head.rest -= take
            seg.cursor += take
            seg.played += take
            if head.rest <= 1e-9:
                self._queue.popleft()
            else:
                break
        if self._seg is not None or self._queue:
            self._timer = asyncio.get_running_loop().call_later(self._period, self._safe_tick)
        else:
            self._idle.set()

    def _safe_tick(self) -> None:
        self._timer = None
        try:
            self._tick()
        except Exception as e:
            self._monitor._fail("player", e)
