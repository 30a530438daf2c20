"""MonitorClient against monitors that misbehave: never blocks, never raises
into the app, grows no further than its queue, and reports each failure
once. Run from pipeline/monitor/pyclient with an adapter's virtual
environment: ../pipecat/.venv/bin/python -m unittest discover -s tests (the
Go test TestPythonClientNeverBlocks in cmd/underrun does)."""

import asyncio
import json
import socket
import time
import unittest

import websockets
from websockets.asyncio.server import serve

from underrun_monitor import MonitorClient


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Errors(list):
    def __call__(self, e):
        self.append(e.kind)


def client(url, errors, **kw):
    opts = dict(connect_timeout=0.5, send_timeout=0.3, close_timeout=0.5, queue_size=64)
    opts.update(kw)
    return MonitorClient(url, session="s", on_error=errors, **opts)


async def send_many(c, n):
    """Sends n messages; returns the longest a send() took, in seconds."""
    worst = 0.0
    for i in range(n):
        t = time.perf_counter()
        c.send({"type": "chunk", "turn": "t1", "text": "x" * 100, "t_ms": i})
        worst = max(worst, time.perf_counter() - t)
        if i % 50 == 0:
            await asyncio.sleep(0)
    return worst


class TestMonitorClient(unittest.IsolatedAsyncioTestCase):
    async def test_unreachable(self):
        errors = Errors()
        c = client(f"ws://127.0.0.1:{free_port()}", errors)
        t = time.monotonic()
        self.assertFalse(await c.ready())
        self.assertLess(time.monotonic() - t, 1.5)
        worst = await send_many(c, 1000)
        await c.close()
        self.assertLess(worst, 0.1)  # never waits on the socket (send timeout 0.3 s)
        self.assertEqual(c.dropped, 1000)
        self.assertEqual(errors.count("unreachable"), 1, errors)

    async def test_handshake_never_answered(self):
        # a TCP server that accepts and says nothing
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        errors = Errors()
        c = client(f"ws://127.0.0.1:{port}", errors)
        t = time.monotonic()
        self.assertFalse(await c.ready())
        self.assertLess(time.monotonic() - t, 1.5)
        await send_many(c, 10)
        t = time.monotonic()
        await c.close()
        self.assertLess(time.monotonic() - t, 1.5)
        self.assertEqual(errors.count("unreachable"), 1, errors)
        server.close()

    async def test_monitor_never_reads(self):
        # the monitor accepts and then reads nothing: sends back up until
        # the send timeout, then the client gives up once, and its memory
        # stays at its queue
        stop = asyncio.Event()

        async def frozen(ws):
            ws.transport.pause_reading()
            await stop.wait()

        async with serve(frozen, "127.0.0.1", 0, max_size=None) as server:
            port = server.sockets[0].getsockname()[1]
            errors = Errors()
            c = client(f"ws://127.0.0.1:{port}", errors)
            self.assertTrue(await c.ready())
            worst = 0.0
            for _ in range(40):
                worst = max(worst, await send_many(c, 500))
                await asyncio.sleep(0.02)
            self.assertLessEqual(c._queue.qsize(), 64)
            t = time.monotonic()
            await c.close()
            self.assertLess(time.monotonic() - t, 2.0)
            stop.set()
        self.assertLess(worst, 0.1)  # never waits on the socket (send timeout 0.3 s)
        self.assertGreater(c.dropped, 0)
        self.assertEqual(errors.count("slow") + errors.count("queue_full") >= 1, True, errors)
        self.assertLessEqual(errors.count("slow"), 1, errors)
        self.assertLessEqual(errors.count("queue_full"), 1, errors)

    async def test_garbage_from_the_monitor(self):
        got = []

        async def garbage(ws):
            await ws.send("not json")
            await ws.send(b"\x00\x01binary")
            await ws.send("null")
            await ws.send("[1,2]")
            await ws.send(json.dumps({"type": "hello", "session": "s2"}))
            async for m in ws:
                got.append(json.loads(m))

        async with serve(garbage, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            errors = Errors()
            c = client(f"ws://127.0.0.1:{port}", errors)
            self.assertTrue(await c.ready())
            await send_many(c, 20)
            for _ in range(100):
                if len(got) == 20:
                    break
                await asyncio.sleep(0.01)
            await c.close()
        self.assertEqual(len(got), 20)
        self.assertEqual(errors, ["unreadable"])
        self.assertEqual(c.session, "s2")

    async def test_monitor_gone_mid_session(self):
        async def leave(ws):
            await ws.recv()
            await ws.close()

        async with serve(leave, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            errors = Errors()
            c = client(f"ws://127.0.0.1:{port}", errors)
            self.assertTrue(await c.ready())
            c.send({"type": "turn_start", "turn": "t1"})
            await asyncio.sleep(0.2)
            await send_many(c, 100)
            await asyncio.sleep(0.1)
            await c.close()
        self.assertEqual(errors.count("gone"), 1, errors)
        self.assertGreaterEqual(c.dropped, 100)

    async def test_refusal_reported_once(self):
        async def refuse(ws):
            async for _ in ws:
                await ws.send(json.dumps({"type": "error", "reason": "rejected", "error": "no"}))

        async with serve(refuse, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            errors = Errors()
            c = client(f"ws://127.0.0.1:{port}", errors)
            self.assertTrue(await c.ready())
            await send_many(c, 10)
            await asyncio.sleep(0.2)
            await c.close()
        self.assertEqual(errors, ["refused"])
        self.assertEqual(c.sent, 10)


if __name__ == "__main__":
    unittest.main()
