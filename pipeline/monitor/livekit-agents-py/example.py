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
"""

import argparse
import asyncio
import json
import logging

from livekit.agents import Agent, AgentSession, function_tool
from livekit.agents.voice.agent_session import TurnHandlingOptions
from livekit.plugins import openai

from underrun_livekit import Monitor

logging.basicConfig(level=logging.ERROR)


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
    p.add_argument("--tool")
    p.add_argument("--tool-ms", type=float, default=500)
    args = p.parse_args()
    llm = openai.LLM(base_url=args.llm, api_key="unused", model="mock")
    tts = openai.TTS(base_url=args.tts, api_key="unused", response_format="pcm")
    asyncio.run(run(args, llm, tts))


if __name__ == "__main__":
    main()
