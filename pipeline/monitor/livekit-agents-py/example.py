"""A LiveKit Agents (Python) voice pipeline without a LiveKit server: an
AgentSession with openai.LLM and openai.TTS (pointed at any OpenAI-compatible
servers, such as ``underrun mock --tts``; the TTS asks for PCM), its speech
played by the adapter's paced player, everything reported to ``underrun
monitor``.

  python example.py --llm http://127.0.0.1:8000/v1 --tts http://127.0.0.1:8000/v1 \\
    --monitor ws://127.0.0.1:8765 [--session NAME] [--turns N] [--out heard.json] \\
    [--tool NAME [--tool-ms MS]]

--tool gives the agent a function tool of that name that runs for --tool-ms
(default 500). --out writes, per turn, what the adapter's player heard.

--releases FILE records instead what LiveKit's sentence tokenizer hands over
for synthesis: per turn, each sentence its stream emits and how many LLM
chunks had arrived then (each chunk let through once the one before it has
gone as far as it goes), with text transforms off. It is recorded where the
tokenizer emits it (BufferedTokenStream.push_text and flush, which emit
synchronously), not at synthesize(): Python's StreamAdapter calls
synthesize() for a sentence only once the sentence before it has all its
audio, so that call waits on the TTS.
"""

import argparse
import asyncio
import json
import logging

from livekit.agents import Agent, AgentSession, function_tool
from livekit.agents.tokenize import token_stream
from livekit.agents.voice import io
from livekit.agents.voice.agent_session import TurnHandlingOptions
from livekit.plugins import openai

from underrun_livekit import Monitor

logging.basicConfig(level=logging.ERROR)


class Sink(io.AudioOutput):
    """Takes the frames as fast as they come: only the text matters."""

    def __init__(self):
        super().__init__(label="sink", capabilities=io.AudioOutputCapabilities(pause=False), sample_rate=24000)

    async def capture_frame(self, frame):
        await super().capture_frame(frame)

    def flush(self):
        super().flush()
        asyncio.get_running_loop().call_soon(
            lambda: self.on_playback_finished(playback_position=0, interrupted=False)
        )

    def clear_buffer(self):
        pass


async def releases(args, llm, tts):
    replies = []
    chat = llm.chat

    class Gated:
        """The LLM stream, each chunk let through once the one before it has
        gone as far as it goes: the text path (llm_node, tts_node, the
        StreamAdapter's input) is tasks passing the text on through channels,
        with no timer or socket, so a hundred turns of the event loop carry
        it through however busy the machine is."""

        def __init__(self, s, r):
            self.s, self.r = s, r

        async def __aenter__(self):
            await self.s.__aenter__()
            return self

        async def __aexit__(self, *e):
            return await self.s.__aexit__(*e)

        def __aiter__(self):
            return self

        async def __anext__(self):
            for _ in range(100):
                await asyncio.sleep(0)
            try:
                c = await self.s.__anext__()
            except StopAsyncIteration:
                self.r["ended"] = True
                raise
            if c.delta is not None and c.delta.content:
                self.r["arrived"] += 1
            return c

        async def aclose(self):
            return await self.s.aclose()

        def __getattr__(self, n):
            return getattr(self.s, n)

    def gated(*a, **kw):
        r = {"arrived": 0, "ended": False, "chunks": []}
        replies.append(r)
        return Gated(chat(*a, **kw), r)

    llm.chat = gated

    def record(method, at_end):
        def wrapped(self, *a, **kw):
            send = self._event_ch.send_nowait
            r = replies[-1] if replies else None

            def recorded(ev):
                text = ev.token.strip()
                if r is not None and text:
                    r["chunks"].append({"text": text, "trigger": -1 if at_end or r["ended"] else r["arrived"] - 1})
                return send(ev)

            self._event_ch.send_nowait = recorded
            try:
                return method(self, *a, **kw)
            finally:
                self._event_ch.send_nowait = send

        return wrapped

    token_stream.BufferedTokenStream.push_text = record(token_stream.BufferedTokenStream.push_text, False)
    token_stream.BufferedTokenStream.flush = record(token_stream.BufferedTokenStream.flush, True)
    session = session_with(llm, tts, tts_text_transforms=[])
    session.output.audio = Sink()
    await session.start(agent=Agent(instructions="Answer."))
    for i in range(args.turns):
        await session.generate_reply(user_input=f"reply {i}").wait_for_playout()
    await session.aclose()
    with open(args.releases, "w") as f:
        for r in replies:
            f.write(json.dumps({"chunks": r["chunks"]}, separators=(",", ":")) + "\n")


def session_with(llm, tts, **kw):
    return AgentSession(llm=llm, tts=tts, turn_handling=TurnHandlingOptions(turn_detection="manual"), **kw)


async def run(args, llm, tts):
    monitor = Monitor(args.monitor, session=args.session)
    await monitor.ready()
    heard = []
    monitor.on_playout = lambda turn, start, gaps: heard.append(
        {"turn": turn, "startMs": start, "gaps": [{"startMs": g[0], "durationMs": g[1]} for g in gaps]}
    )
    session = session_with(monitor.wrap_llm(llm), monitor.wrap_tts(tts))
    monitor.attach(session)
    session.output.audio = monitor.player(sample_rate=tts.sample_rate)
    tools = []
    if args.tool:

        async def lookup() -> str:
            await asyncio.sleep(args.tool_ms / 1000)
            return "done"

        tools.append(function_tool(lookup, name=args.tool, description="Looks something up for the answer."))
    await session.start(agent=Agent(instructions="You are a helpful voice assistant.", tools=tools))
    for _ in range(args.turns):
        await session.generate_reply(user_input="Where is the room?").wait_for_playout()
    await session.aclose()
    await monitor.close()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(heard, f, indent=1)
    for h in heard:
        gaps = ", ".join(f"{g['durationMs']:.1f} ms at {g['startMs']:.1f} ms" for g in h["gaps"])
        print(f"{h['turn']}: first audio at {h['startMs']:.1f} ms; {len(h['gaps'])} gaps heard{': ' + gaps if gaps else ''}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llm", default="http://127.0.0.1:8000/v1")
    p.add_argument("--tts", default="http://127.0.0.1:8000/v1")
    p.add_argument("--monitor", default="ws://127.0.0.1:8765")
    p.add_argument("--session", default="livekit-agent")
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--releases")
    p.add_argument("--tool")
    p.add_argument("--tool-ms", type=float, default=500)
    args = p.parse_args()
    llm = openai.LLM(base_url=args.llm, api_key="unused", model="mock")
    tts = openai.TTS(base_url=args.tts, api_key="unused", response_format="pcm")
    asyncio.run(releases(args, llm, tts) if args.releases else run(args, llm, tts))


if __name__ == "__main__":
    main()
