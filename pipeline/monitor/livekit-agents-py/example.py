"""A LiveKit Agents (Python) voice pipeline without a LiveKit server: an
AgentSession with openai.LLM and openai.TTS (pointed at any OpenAI-compatible
servers, such as ``underrun mock --tts``), LiveKit's own StreamAdapter and
sentence tokenizer between them, its speech played by the adapter's paced
player, everything reported to ``underrun monitor``.

  python example.py --llm http://127.0.0.1:8000/v1 --tts http://127.0.0.1:8000/v1 \\
    --monitor ws://127.0.0.1:8765 [--session NAME] [--turns N] [--out heard.json] \\
    [--tool NAME [--tool-ms MS] [--say TEXT [--say-ms MS]] [--with-filler TEXT]] [--chain]

--tool gives the agent a function tool of that name, which runs for --tool-ms
(default 500): a mock turn with a tool call calls it, and the adapter reports
the call, its result and the silence between. --say makes the tool say a
filler phrase (session.say) --say-ms (default 0) after it starts, as an app
covers the wait; --with-filler has the tool run inside LiveKit's own
RunContext.with_filler(TEXT), which says it once the session is idle.

--chain puts a stand-in for a room's audio output after the player
(``next_in_chain``): it plays each segment in real time and says when it
finished, as LiveKit's room output does.

--out writes, per turn, what the adapter's player heard (its first audio and
every silence inside the turn's speech, in ms since the turn's LLM request).

--releases FILE records instead what LiveKit's sentence tokenizer hands to the
TTS (no pacing, no monitor): per turn, each text and the index of the last LLM
chunk that had arrived when it was handed over (-1: after the stream ended).
The chunks are let through one at a time, each once the pipeline has done all
it does with the one before (the tokenizer, and the synthesis of what it
released, since LiveKit's StreamAdapter synthesizes one sentence at a time),
so the recording does not depend on timing.
"""

import argparse
import asyncio
import json
import logging
import sys

logging.basicConfig(level=logging.ERROR, stream=sys.stderr)

from livekit.agents import llm as lkllm  # noqa: E402
from livekit.agents import voice  # noqa: E402
from livekit.agents.voice import io  # noqa: E402
from livekit.plugins import openai  # noqa: E402

from underrun_livekit import Monitor  # noqa: E402

RATE = 24000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llm", default="http://127.0.0.1:8000/v1")
    p.add_argument("--tts", default="http://127.0.0.1:8000/v1")
    p.add_argument("--monitor", default="ws://127.0.0.1:8765")
    p.add_argument("--session", default="livekit-agent")
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--releases")
    p.add_argument("--tool")
    p.add_argument("--tool-ms", type=float, default=500)
    p.add_argument("--say")
    p.add_argument("--say-ms", type=float, default=0)
    p.add_argument("--with-filler")
    p.add_argument("--chain", action="store_true")
    return p.parse_args()


def models(args):
    llm = openai.LLM(base_url=args.llm, api_key="unused", model="mock")
    tts = openai.TTS(base_url=args.tts, api_key="unused", model="tts-1", response_format="pcm")
    return llm, tts


class Sink(io.AudioOutput):
    """Takes frames as fast as they come (only the text matters for --releases)."""

    def __init__(self):
        super().__init__(label="sink", capabilities=io.AudioOutputCapabilities(pause=False), sample_rate=RATE)
        self._started = False

    async def capture_frame(self, frame):
        await super().capture_frame(frame)
        if not self._started:
            self._started = True
            self.on_playback_started(created_at=0.0)

    def flush(self):
        super().flush()
        if self._started:
            self._started = False
            asyncio.get_running_loop().call_soon(lambda: self.on_playback_finished(playback_position=0, interrupted=False))

    def clear_buffer(self):
        pass


class RoomOutput(io.AudioOutput):
    """Stands in for a room's audio output: plays what it is given in real
    time, each segment's end reported once its audio has played."""

    def __init__(self):
        super().__init__(label="room", capabilities=io.AudioOutputCapabilities(pause=False), sample_rate=RATE)
        self._end = 0.0  # when what it holds has played, loop time
        self._started = False
        self._done: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame):
        await super().capture_frame(frame)
        loop = asyncio.get_running_loop()
        if not self._started:
            self._started = True
            self.on_playback_started(created_at=0.0)
        self._end = max(self._end, loop.time()) + frame.samples_per_channel / frame.sample_rate

    def flush(self):
        super().flush()
        if self._started:
            self._started = False
            loop = asyncio.get_running_loop()
            self._done = loop.call_at(max(self._end, loop.time()), lambda: self.on_playback_finished(playback_position=0, interrupted=False))

    def clear_buffer(self):
        if self._done is not None:
            self._done.cancel()
        if self._started:
            self._started = False
            self.on_playback_finished(playback_position=0, interrupted=True)


async def releases(args):
    """Records LiveKit's release points (see the module's doc)."""
    llm, tts = models(args)
    replies = []
    state = {"arrived": 0, "ended": False, "synthesizing": 0}
    chat = llm.chat

    def gated_chat(*a, **kw):
        stream = chat(*a, **kw)
        state.update(arrived=0, ended=False)
        replies.append([])
        return Gate(stream)

    class Gate:
        # lets each chunk through once everything the one before set off is done
        def __init__(self, stream):
            self._stream = stream

        def __getattr__(self, name):
            return getattr(self._stream, name)

        async def __aenter__(self):
            await self._stream.__aenter__()
            return self

        async def __aexit__(self, *exc):
            return await self._stream.__aexit__(*exc)

        def __aiter__(self):
            return self

        async def __anext__(self):
            quiet = 0
            while quiet < 3:  # three idle milliseconds in a row, no synthesis running
                await asyncio.sleep(0.001)
                quiet = quiet + 1 if state["synthesizing"] == 0 else 0
            try:
                chunk = await self._stream.__anext__()
            except StopAsyncIteration:
                state["ended"] = True
                raise
            if chunk.delta is not None and chunk.delta.content:
                state["arrived"] += 1
            return chunk

    synthesize = tts.synthesize

    def recorded_synthesize(text, *a, **kw):
        replies[-1].append({"text": text, "trigger": -1 if state["ended"] else state["arrived"] - 1})
        return Counted(synthesize(text, *a, **kw))

    class Counted:
        # a synthesis, counted as running from its call to its end
        def __init__(self, stream):
            self._stream = stream
            state["synthesizing"] += 1
            self._open = True

        def __getattr__(self, name):
            return getattr(self._stream, name)

        def _done(self):
            if self._open:
                self._open = False
                state["synthesizing"] -= 1

        async def __aenter__(self):
            await self._stream.__aenter__()
            return self

        async def __aexit__(self, *exc):
            self._done()
            return await self._stream.__aexit__(*exc)

        def __aiter__(self):
            return self

        async def __anext__(self):
            try:
                return await self._stream.__anext__()
            except BaseException:
                self._done()
                raise

    llm.chat = gated_chat
    tts.synthesize = recorded_synthesize
    # no text transforms: the tokenizer sees the LLM's text as it is
    session = voice.AgentSession(llm=llm, tts=tts, turn_handling={"turn_detection": "manual"}, tts_text_transforms=None)
    await session.start(agent=voice.Agent(instructions="Answer."))
    session.output.audio = Sink()
    for i in range(args.turns):
        await session.generate_reply(user_input=f"reply {i}")
    await session.aclose()
    with open(args.releases, "w") as f:
        for r in replies:
            f.write(json.dumps({"chunks": r}) + "\n")


async def run(args):
    llm, tts = models(args)
    heard = []
    monitor = Monitor(
        args.monitor,
        session=args.session,
        on_error=lambda e: print(f"underrun monitor: {e}", file=sys.stderr, flush=True),
        on_playout=lambda turn, h: heard.append(
            {
                "turn": turn,
                "startMs": h.start_ms,
                "gaps": [{"startMs": g.start_ms, "durationMs": g.duration_ms} for g in h.gaps],
            }
        ),
    )
    await monitor.ready()
    session = voice.AgentSession(
        llm=monitor.wrap_llm(llm),
        tts=monitor.wrap_tts(tts),
        turn_handling={"turn_detection": "manual"},
    )
    monitor.attach(session)
    tools = []
    if args.tool:

        async def tool(ctx: voice.RunContext) -> str:
            if args.say:
                asyncio.get_running_loop().call_later(args.say_ms / 1000, lambda: ctx.session.say(args.say))
            if args.with_filler:
                async with ctx.with_filler(args.with_filler):
                    await asyncio.sleep(args.tool_ms / 1000)
            else:
                await asyncio.sleep(args.tool_ms / 1000)
            return "done"

        tools.append(lkllm.function_tool(tool, name=args.tool, description="Looks something up for the answer."))
    await session.start(agent=voice.Agent(instructions="You are a helpful voice assistant.", tools=tools))
    session.output.audio = monitor.player(sample_rate=RATE, next_in_chain=RoomOutput() if args.chain else None)
    for _ in range(args.turns):
        await session.generate_reply(user_input="Where is the room?")
    await session.aclose()
    await monitor.close()
    c = monitor.client
    print(f"monitor: {c.sent} messages sent, {c.dropped} dropped", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(heard, f, indent=1)
    for h in heard:
        gaps = ", ".join(f"{g['durationMs']:.1f} ms at {g['startMs']:.1f} ms" for g in h["gaps"])
        print(f"{h['turn']}: first audio at {h['startMs']:.1f} ms; {len(h['gaps'])} gaps heard{': ' + gaps if gaps else ''}")


def main():
    args = parse_args()
    asyncio.run(releases(args) if args.releases else run(args))


if __name__ == "__main__":
    main()
