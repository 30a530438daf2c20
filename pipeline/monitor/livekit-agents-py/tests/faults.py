"""The adapter given what it does not expect, as a LiveKit plugin or a newer
LiveKit may give it: it never raises into the agent, passes LiveKit's own
errors through untouched, and reports each of its own failures once.
cmd/underrun's TestLiveKitPyAdapterFaults runs it and reads the JSON line it
prints: what reached the agent, the errors reported and the messages sent.
"""

import asyncio
import json
import os
import sys
from types import SimpleNamespace as NS

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from livekit import rtc  # noqa: E402

from underrun_livekit import Monitor  # noqa: E402


class Collect:
    """Stands in for the MonitorClient: keeps what would be sent."""

    def __init__(self):
        self.messages = []

    def send(self, m):
        self.messages.append(m)

    async def ready(self, timeout=None):
        return True

    async def close(self):
        pass


class Stream:
    """An LLMStream or ChunkedStream as LiveKit uses it, yielding items, then
    raising fail when given."""

    def __init__(self, items, fail=None):
        self._items = list(items)
        self._fail = fail

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return None

    async def aclose(self):
        pass

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._items:
            return self._items.pop(0)
        if self._fail is not None:
            raise self._fail
        raise StopAsyncIteration


class Model:
    """An LLM and a TTS whose next call returns the stream set."""

    def __init__(self):
        self.next = None

    def chat(self, **kw):
        return self.next

    def synthesize(self, text, **kw):
        return self.next


async def drain(stream):
    """Iterates stream as LiveKit does; returns what reached the agent."""
    got, err = [], None
    try:
        async with stream as s:
            async for item in s:
                got.append(item)
    except Exception as e:
        err = repr(e)
    return got, err


async def main():
    errors = []
    out = Collect()
    played = []

    def on_playout(turn, heard):
        played.append(turn)
        raise ValueError("the app's callback failed")

    monitor = Monitor("ws://127.0.0.1:1", client=out, on_error=lambda e: errors.append(f"{e.kind}: {e}"), on_playout=on_playout)
    llm, tts = Model(), Model()
    monitor.wrap_llm(llm)
    monitor.wrap_tts(tts)
    results = {}

    # a stream of odd chunks: no delta, a tool call without a name, text, a
    # chunk that is not a ChatChunk at all, then the provider's error
    odd_call = NS(delta=NS(content=None, tool_calls=[object()]), usage=None)
    llm.next = Stream(
        [NS(delta=None, usage=None), odd_call, NS(delta=NS(content="Hello.", tool_calls=[]), usage=None), "text", 42],
        fail=RuntimeError("the provider failed"),
    )
    got, err = await drain(llm.chat(chat_ctx=None))
    results["llm"] = {"items": len(got), "error": err}

    # a synthesis with odd items: no frame, a frame of no rate, a real frame
    llm.next = Stream([NS(delta=NS(content="It is sunny.", tool_calls=[]), usage=None)])
    await drain(llm.chat(chat_ctx=None))
    frame = rtc.AudioFrame(data=b"\0\0" * 2400, sample_rate=24000, num_channels=1, samples_per_channel=2400)
    tts.next = Stream([NS(), NS(frame=NS(sample_rate=0, samples_per_channel=10)), NS(frame=frame)])
    got, err = await drain(tts.synthesize("It is sunny."))
    results["tts"] = {"items": len(got), "error": err}

    # the player: a frame of no rate, then a real one and the segment's end;
    # the app's on_playout raises
    player = monitor.player()
    await player.capture_frame(NS(sample_rate=0, samples_per_channel=10, data=b"", num_channels=1, duration=0.0, userdata={}))
    await player.capture_frame(frame)
    player.flush()
    await asyncio.sleep(0.3)
    results["played"] = played
    await monitor.close()
    results["errors"] = errors
    results["messages"] = [m["type"] + ("/" + m["status"] if "status" in m else "") for m in out.messages]
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
