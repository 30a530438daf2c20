"""Drives the shared MonitorClient (pipeline/monitor/pyclient, as the LiveKit
adapter uses it) against a monitor, real or hostile, as an agent would, and
says how the client behaved: cmd/underrun's TestLiveKitPyClient* tests run it
against servers that misbehave, in the adapter's virtual environment.

  python tests/probe.py --url ws://127.0.0.1:PORT [--messages N] [--size BYTES]
    [--seconds S] [--queue N] [--connect-timeout S] [--send-timeout S] [--close-timeout S]

It prints "ready true|false" once ready() returns, sends a turn_start and
--messages chunk messages of --size bytes of text spread over --seconds, closes, and prints
one JSON line: what ready() said and how long it took, the longest send()
took, the longest the event loop was kept from running, how long close()
took, the counts (sent, dropped, most_buffered), the errors reported (their
kinds, in order), the session the monitor named, and how much the process's
peak memory grew while sending (KiB).
"""

import argparse
import asyncio
import json
import resource
import time

from underrun_monitor import MonitorClient


async def main(a):
    errors = []
    c = MonitorClient(
        a.url,
        session="probe",
        queue_size=a.queue,
        connect_timeout=a.connect_timeout,
        send_timeout=a.send_timeout,
        close_timeout=a.close_timeout,
        on_error=lambda e: errors.append(e.kind),
    )
    loop = asyncio.get_running_loop()
    lag = 0.0
    ticking = True

    async def ticker():
        # how late the event loop runs a 5 ms timer: the agent's own tasks wait as long
        nonlocal lag
        while ticking:
            t = loop.time()
            await asyncio.sleep(0.005)
            lag = max(lag, loop.time() - t - 0.005)

    tick = asyncio.create_task(ticker())
    t = time.monotonic()
    ok = await c.ready()
    ready_s = time.monotonic() - t
    print(f"ready {'true' if ok else 'false'}", flush=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = "x" * a.size
    worst = 0.0
    most = 0
    batch = max(1, a.messages // max(1, int(a.seconds / 0.01)))
    start = time.monotonic()
    c.send({"type": "turn_start", "turn": "t1"})
    for i in range(a.messages):
        s = time.perf_counter()
        c.send({"type": "chunk", "turn": "t1", "text": text, "t_ms": i})
        worst = max(worst, time.perf_counter() - s)
        if c._queue is not None:  # (the client's own queue: its bound is the point)
            most = max(most, c._queue.qsize())
        if i % batch == batch - 1:
            # the agent's pace: a batch every 10 ms
            await asyncio.sleep(max(0.0, start + (i + 1) / a.messages * a.seconds - time.monotonic()))
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    t = time.monotonic()
    await c.close()
    close_s = time.monotonic() - t
    ticking = False
    await tick
    print(
        json.dumps(
            {
                "ready": ok,
                "ready_s": ready_s,
                "send_worst_s": worst,
                "lag_worst_s": lag,
                "close_s": close_s,
                "sent": c.sent,
                "dropped": c.dropped,
                "most_buffered": most,
                "errors": errors,
                "session": c.session,
                "grew_kib": grew,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--queue", type=int, default=64)
    p.add_argument("--connect-timeout", type=float, default=0.5)
    p.add_argument("--send-timeout", type=float, default=0.3)
    p.add_argument("--close-timeout", type=float, default=0.5)
    asyncio.run(main(p.parse_args()))
