"""The listener of example.py, a process of its own: a websocket client of
Pipecat's websocket server transport (ws://127.0.0.1:PORT) that prints each
binary message's arrival (time.monotonic_ns(), the clock Pipecat's
SystemClock counts from) and its length in seconds of 16-bit mono audio at
RATE, until the transport closes the connection. It asks for the scheduling of
an audio thread (SCHED_FIFO, as sound servers run theirs; else nice -10;
else as it is) so that a busy machine does not delay its stamps.

  python listener.py PORT [RATE]
"""

import asyncio
import os
import sys
import time

import websockets


def audio_priority() -> None:
    """Runs this process as an audio thread is run, where it may."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.nice(-10)
    except OSError:
        pass


async def listen(port: int, rate: int) -> None:
    while True:
        try:
            ws = await websockets.connect(f"ws://127.0.0.1:{port}", max_size=None)
            break
        except OSError:
            await asyncio.sleep(0.02)
    async with ws:
        try:
            async for m in ws:
                if isinstance(m, bytes) and m:
                    sys.stdout.write(f"{time.monotonic_ns()} {len(m) / 2 / rate!r}\n")
                    sys.stdout.flush()
        except websockets.ConnectionClosed:
            pass


if __name__ == "__main__":
    audio_priority()
    asyncio.run(listen(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 24000))
