"""A Pipecat voice pipeline without a room: OpenAILLMService and
OpenAITTSService (pointed at any OpenAI-compatible servers, such as
``underrun mock --tts``), Pipecat's own sentence aggregation, and its
websocket server output transport, which paces the audio it sends as an
audio device would; a listener connects to that transport and plays what it
receives in real time. UnderrunObserver reports everything to ``underrun
monitor``.

  python example.py --llm http://127.0.0.1:8000/v1 --tts http://127.0.0.1:8000/v1 \\
    --monitor ws://127.0.0.1:8765 [--session NAME] [--turns N] [--out heard.json] \\
    [--tool NAME [--tool-ms MS]] [--trace spans.json]

Each turn is a user turn (UserStartedSpeakingFrame, UserStoppedSpeakingFrame,
so that Pipecat's turn tracking numbers it) and a reply; the next turn starts
once the reply has been played out. --tool gives the LLM a function of that
name that runs for --tool-ms (default 500). --out writes, per turn, what the
listener heard (its first audio and every silence inside the reply, in ms
since the turn's LLM request); --trace turns Pipecat's tracing on and writes
its turn spans, with what the observer wrote on them, as JSON.

--releases FILE records instead what Pipecat's sentence aggregation hands to
the TTS: per reply, each text and the index of the LLM chunk whose
processing released it (-1: the end of the reply). The TTS processes the
chunks one at a time in order, so the recording does not depend on timing.
"""

import argparse
import asyncio
import json
import os
import socket
import sys
import time

from loguru import logger

logger.remove()
logger.add(sys.stderr, level="WARNING")

import websockets  # noqa: E402
from pipecat.adapters.schemas.function_schema import FunctionSchema  # noqa: E402
from pipecat.adapters.schemas.tools_schema import ToolsSchema  # noqa: E402
from pipecat.clocks.system_clock import SystemClock  # noqa: E402
from pipecat.frames.frames import (  # noqa: E402
    EndFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMMessagesAppendFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.runner import PipelineRunner  # noqa: E402
from pipecat.pipeline.task import PipelineParams, PipelineTask  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import (  # noqa: E402
    LLMContextAggregatorPair,
)
from pipecat.serializers.base_serializer import FrameSerializer  # noqa: E402
from pipecat.services.openai.llm import OpenAILLMService  # noqa: E402
from pipecat.services.openai.tts import OpenAITTSService  # noqa: E402
from pipecat.transports.websocket.server import (  # noqa: E402
    SingleClientWebsocketServerParams,
    SingleClientWebsocketServerTransport,
)

from underrun_pipecat import UnderrunObserver  # noqa: E402

RATE = 24000


class RawAudio(FrameSerializer):
    """Sends the transport's audio as raw 16-bit PCM, one binary message a frame."""

    async def serialize(self, frame):
        return frame.audio if isinstance(frame, OutputAudioRawFrame) else None

    async def deserialize(self, data):
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Listener:
    """A client of the transport that plays what it receives in real time:
    each frame is stamped on arrival and played back to back, from its
    arrival at the earliest; the silences between frames of a turn are what
    the listener heard. It runs as a process of its own (listener.py), as
    a client on the far side of a transport does, so
    that the pipeline's work does not delay its stamps; they are
    time.monotonic_ns(), the clock Pipecat's SystemClock counts from."""

    def __init__(self, clock):
        self.clock = clock
        self.frames = []  # (arrival on the pipeline clock, ns; seconds)
        self.proc = None

    async def start(self, port):
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "listener.py"),
            str(port),
            str(RATE),
            stdout=asyncio.subprocess.PIPE,
        )

    async def stop(self):
        """Reads the frames the listener received, once the transport closed."""
        try:
            out, _ = await asyncio.wait_for(self.proc.communicate(), 10)
        except TimeoutError:
            self.proc.kill()
            out, _ = await self.proc.communicate()
        origin = time.monotonic_ns() - self.clock.get_time()  # the pipeline clock's zero
        for line in out.decode().split("\n"):
            if line.strip():
                mono, secs = line.split()
                self.frames.append((int(mono) - origin, float(secs)))

    def heard(self, begin, until):
        """The first audio and gaps of the frames that arrived in [begin, until)."""
        start, end, gaps = None, 0.0, []
        for at, secs in self.frames:
            if at < begin or at >= until:
                continue
            t = (at - begin) / 1e6
            if start is None:
                start, end = t, t + secs * 1000
                continue
            if t > end:
                gaps.append({"start_ms": end, "duration_ms": t - end})
            end = max(t, end) + secs * 1000
        return start, gaps


async def run(args):
    llm = OpenAILLMService(base_url=args.llm, api_key="unused", model="mock")
    tts = OpenAITTSService(base_url=args.tts, api_key="unused", sample_rate=RATE)
    port = free_port()
    transport = SingleClientWebsocketServerTransport(
        host="127.0.0.1",
        port=port,
        params=SingleClientWebsocketServerParams(
            serializer=RawAudio(),
            audio_out_enabled=True,
            audio_out_sample_rate=RATE,
            audio_out_end_silence_secs=0,
        ),
    )
    tools = None
    if args.tool:
        tools = ToolsSchema(
            standard_tools=[
                FunctionSchema(
                    name=args.tool,
                    description="Looks something up for the answer.",
                    properties={},
                    required=[],
                )
            ]
        )

        async def call(params):
            await asyncio.sleep(args.tool_ms / 1000)
            await params.result_callback("done")

        llm.register_function(args.tool, call)
    context = LLMContext([{"role": "user", "content": "Hello."}], **({"tools": tools} if tools else {}))
    aggregators = LLMContextAggregatorPair(context)
    turns = {}  # id -> begin ns
    played = {}  # id -> (start_ms, gaps) as the observer heard them
    done = asyncio.Queue()

    def on_playout(turn, start_ms, gaps):
        played[turn] = (start_ms, gaps)
        done.put_nowait(turn)

    observer = UnderrunObserver(
        args.monitor,
        session=args.session,
        on_playout=on_playout,
        on_turn_start=lambda turn, ns: turns.__setitem__(turn, ns),
    )
    clock = SystemClock()  # the pipeline's clock, which the listener stamps with too
    pipeline = Pipeline(
        [transport.input(), aggregators.user(), llm, tts, transport.output(), aggregators.assistant()]
    )
    task = PipelineTask(
        pipeline,
        params=PipelineParams(),
        observers=[observer],
        enable_tracing=bool(args.trace),
        idle_timeout_secs=None,
        clock=clock,
    )
    observer.attach(task)
    await observer.ready()
    listener = Listener(clock)
    await listener.start(port)
    order = []

    async def drive():
        await listener_ready.wait()
        for i in range(args.turns):
            await task.queue_frames([UserStartedSpeakingFrame(), UserStoppedSpeakingFrame()])
            await task.queue_frame(
                LLMMessagesAppendFrame([{"role": "user", "content": f"Question {i}?"}], run_llm=True)
            )
            turn = await asyncio.wait_for(done.get(), 120)
            order.append(turn)
            await asyncio.sleep(0.3)  # the listener gets the last frames
        await task.queue_frame(EndFrame())

    listener_ready = asyncio.Event()

    @transport.event_handler("on_client_connected")
    async def connected(transport, ws):
        listener_ready.set()

    runner = PipelineRunner(handle_sigint=False)
    driver = asyncio.create_task(drive())
    await runner.run(task)
    await driver
    await listener.stop()
    await observer.close()
    heard = []
    begins = sorted(turns.values())
    for turn in order:
        begin = turns[turn]
        later = [b for b in begins if b > begin]
        start, gaps = listener.heard(begin, later[0] if later else 1 << 62)
        seen = played.get(turn)
        observer_view = None
        if seen is not None:
            observer_view = {"start_ms": seen[0], "gaps": [vars(g) for g in seen[1]]}
        heard.append({"turn": turn, "start_ms": start, "gaps": gaps, "observer": observer_view})
        g = ", ".join(f"{x['duration_ms']:.1f} ms at {x['start_ms']:.1f} ms" for x in gaps)
        first = f"{start:.1f} ms" if start is not None else "never"
        print(f"{turn}: first audio at {first}; {len(gaps)} gaps heard{': ' + g if g else ''}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(heard, f, indent=1)
    print(f"monitor: {observer.client.sent} messages sent, {observer.client.dropped} dropped")


class RecordingTTS(OpenAITTSService):
    """OpenAITTSService that records each text its aggregation hands to
    run_tts, with the index of the LLM chunk being processed then."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.replies = []
        self.arrived = 0
        self.ended = False
        self.reply_done = asyncio.Event()

    async def process_frame(self, frame, direction):
        if isinstance(frame, LLMFullResponseStartFrame):
            self.replies.append([])
            self.arrived, self.ended = 0, False
        elif isinstance(frame, LLMTextFrame) and not frame.skip_tts:
            self.arrived += 1
        elif isinstance(frame, LLMFullResponseEndFrame):
            self.ended = True
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMFullResponseEndFrame):
            self.reply_done.set()

    async def run_tts(self, text, context_id):
        self.replies[-1].append({"text": text, "trigger": -1 if self.ended else self.arrived - 1})
        async for f in super().run_tts(text, context_id):
            yield f


async def releases(args):
    llm = OpenAILLMService(base_url=args.llm, api_key="unused", model="mock")
    tts = RecordingTTS(base_url=args.tts, api_key="unused", sample_rate=RATE)
    context = LLMContext([{"role": "user", "content": "Hello."}])
    aggregators = LLMContextAggregatorPair(context)
    task = PipelineTask(
        Pipeline([aggregators.user(), llm, tts]),
        params=PipelineParams(),
        idle_timeout_secs=None,
        enable_rtvi=False,
    )

    async def drive():
        await asyncio.sleep(0.2)
        for i in range(args.turns):
            tts.reply_done.clear()
            await task.queue_frame(
                LLMMessagesAppendFrame([{"role": "user", "content": f"Reply {i}."}], run_llm=True)
            )
            await asyncio.wait_for(tts.reply_done.wait(), 60)
        await task.queue_frame(EndFrame())

    driver = asyncio.create_task(drive())
    await PipelineRunner(handle_sigint=False).run(task)
    await driver
    with open(args.releases, "w") as f:
        for r in tts.replies:
            f.write(json.dumps({"chunks": r}, separators=(",", ":")) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llm", default="http://127.0.0.1:8000/v1")
    p.add_argument("--tts", default="http://127.0.0.1:8000/v1")
    p.add_argument("--monitor", default="ws://127.0.0.1:8765")
    p.add_argument("--session", default="pipecat")
    p.add_argument("--turns", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--tool")
    p.add_argument("--tool-ms", type=float, default=500)
    p.add_argument("--trace")
    p.add_argument("--releases")
    args = p.parse_args()
    if args.releases:
        asyncio.run(releases(args))
        return
    exporter = None
    if args.trace:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    t0 = time.monotonic()
    asyncio.run(run(args))
    if exporter is not None:
        spans = []
        for s in exporter.get_finished_spans():
            if s.name != "turn":
                continue
            spans.append(
                {
                    "name": s.name,
                    "trace_id": f"{s.context.trace_id:032x}",
                    "span_id": f"{s.context.span_id:016x}",
                    "attributes": dict(s.attributes),
                    "events": [{"name": e.name, "attributes": dict(e.attributes)} for e in s.events],
                }
            )
        with open(args.trace, "w") as f:
            json.dump(spans, f, indent=1)
    print(f"ran {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
