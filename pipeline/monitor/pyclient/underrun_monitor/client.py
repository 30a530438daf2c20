"""One ingest connection to ``underrun monitor``, which never blocks or breaks
the voice app that uses it.

Messages are put on a bounded queue and sent by a task of their own; when the
queue is full a message is dropped and counted. Connecting, sending and
closing have timeouts. A monitor that cannot be reached, is too slow, goes
away, or sends something unreadable is reported once through ``on_error``
(by default a warning on the ``underrun_monitor`` logger) and the app goes on: what would
have been sent is dropped and counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import websockets

logger = logging.getLogger("underrun_monitor")

#: How many messages may wait to be sent before new ones are dropped.
DEFAULT_QUEUE_SIZE = 4096
#: How long the websocket handshake may take, in seconds.
DEFAULT_CONNECT_TIMEOUT = 2.0
#: How long one message may wait to leave (the monitor reading too slowly).
DEFAULT_SEND_TIMEOUT = 1.0
#: How long close() waits for what is queued to leave.
DEFAULT_CLOSE_TIMEOUT = 2.0


class MonitorError(Exception):
    """A failure of the connection to the monitor, as given to ``on_error``.

    ``kind`` names it: ``unreachable``, ``slow``, ``gone``, ``queue_full``,
    ``unreadable`` (a message from the monitor that is not a JSON object),
    ``refused`` (the monitor's error answer to a message).
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def ingest_url(url: str, session: str | None, token: str | None) -> str:
    """Return the /ingest websocket address of the monitor at url."""
    u = urllib.parse.urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(u.scheme, u.scheme)
    query = dict(urllib.parse.parse_qsl(u.query))
    if session:
        query["session"] = session
    if token:
        query["token"] = token
    return urllib.parse.urlunsplit((scheme, u.netloc, "/ingest", urllib.parse.urlencode(query), ""))


class MonitorClient:
    """A connection to ``underrun monitor``'s ``/ingest`` for one session.

    ``send`` never blocks and never raises. Call ``start`` (or ``ready``) from
    the event loop the app runs on, and ``close`` at the end.
    """

    def __init__(
        self,
        url: str,
        *,
        session: str | None = None,
        token: str | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        on_error: Callable[[MonitorError], Any] | None = None,
        on_message: Callable[[dict], Any] | None = None,
    ):
        self.url = ingest_url(url, session, token)
        self.session = session
        #: Messages dropped: the queue was full, or the monitor could not take them.
        self.dropped = 0
        #: Messages that left.
        self.sent = 0
        self._queue_size = queue_size
        self._connect_timeout = connect_timeout
        self._send_timeout = send_timeout
        self._close_timeout = close_timeout
        self._on_error = on_error if on_error is not None else (lambda e: logger.warning("underrun monitor: %s", e))
        self._on_message = on_message
        self._reported: set[str] = set()
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._opened: asyncio.Event | None = None
        self._ws = None
        self._dead = False  # no more messages will leave
        self._closing = False

    def start(self) -> None:
        """Start connecting, on the running event loop (once)."""
        if self._task is not None:
            return
        self._queue = asyncio.Queue(maxsize=self._queue_size)
        self._opened = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def ready(self, timeout: float | None = None) -> bool:
        """Wait until the connection is open or has failed; True if open.

        The monitor times a turn from its turn_start's arrival, so wait for
        this before the first turn.
        """
        self.start()
        try:
            await asyncio.wait_for(self._opened.wait(), timeout or self._connect_timeout + 1)
        except TimeoutError:
            return False
        return self._ws is not None and not self._dead

    def send(self, message: dict) -> None:
        """Queue message to be sent; drops it (counted) when it cannot be."""
        try:
            if self._task is None:
                self.start()
            if self._dead or self._closing:
                self.dropped += 1
                return
            self._queue.put_nowait(message)
        except asyncio.QueueFull:
            self.dropped += 1
            self._report(
                "queue_full",
                f"{self._queue_size} messages are waiting to be sent; dropping new ones (see dropped)",
            )
        except Exception as e:  # no running loop, or anything else: never into the app
            self.dropped += 1
            self._report("unreachable", f"cannot queue a message: {e!r}")

    async def close(self) -> None:
        """Send what is queued (for at most the close timeout) and close."""
        if self._task is None:
            return
        self._closing = True
        try:
            await asyncio.wait_for(self._queue.join(), self._close_timeout)
        except TimeoutError:
            pass
        self._task.cancel()
        try:
            await self._task
        except BaseException:
            pass
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                await asyncio.wait_for(ws.close(), self._close_timeout)
            except BaseException:
                pass
        self._drain()
        if self.dropped:
            self._report("dropped", f"{self.dropped} messages were not sent")

    def _report(self, kind: str, message: str) -> None:
        if kind in self._reported:
            return
        self._reported.add(kind)
        try:
            self._on_error(MonitorError(kind, f"{message} ({self.url.split('?')[0]})"))
        except Exception:
            pass

    def _drain(self) -> None:
        """Drop (counted) everything queued."""
        if self._queue is None:
            return
        while True:
            try:
                self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            self.dropped += 1
            self._queue.task_done()

    def _die(self, kind: str, message: str) -> None:
        self._dead = True
        self._report(kind, message)
        self._drain()

    async def _run(self) -> None:
        try:
            ws = await websockets.connect(
                self.url,
                open_timeout=self._connect_timeout,
                close_timeout=self._close_timeout,
                max_size=1 << 20,
                ping_interval=None,
            )
        except asyncio.CancelledError:
            self._opened.set()
            raise
        except Exception as e:
            self._die("unreachable", f"cannot connect: {e!r}; the pipeline goes on unmonitored")
            self._opened.set()
            return
        self._ws = ws
        self._opened.set()
        reader = asyncio.get_running_loop().create_task(self._read(ws))
        try:
            while True:
                m = await self._queue.get()
                try:
                    if self._dead:
                        self.dropped += 1
                        continue
                    data = json.dumps(m, separators=(",", ":"), allow_nan=False)
                    t = time.monotonic()
                    await asyncio.wait_for(ws.send(data), self._send_timeout)
                    self.sent += 1
                except TimeoutError:
                    self.dropped += 1
                    self._die(
                        "slow",
                        f"a message waited over {self._send_timeout:g} s to leave "
                        f"({time.monotonic() - t:.1f} s); closing, and dropping what follows",
                    )
                    ws.transport.abort()
                except websockets.ConnectionClosed as e:
                    self.dropped += 1
                    self._die("gone", f"the connection closed ({e}); dropping what follows")
                except (TypeError, ValueError) as e:
                    self.dropped += 1
                    self._report("unencodable", f"a message could not be encoded: {e}")
                finally:
                    self._queue.task_done()
        finally:
            reader.cancel()

    async def _read(self, ws) -> None:
        """Reads the monitor's answers: hello, and error for a refused message."""
        try:
            async for data in ws:
                try:
                    m = json.loads(data) if isinstance(data, str) else None
                except ValueError:
                    m = None
                if not isinstance(m, dict):
                    self._report("unreadable", f"the monitor sent something that is not a JSON object: {str(data)[:80]!r}")
                    continue
                if m.get("type") == "hello" and isinstance(m.get("session"), str):
                    self.session = m["session"]
                elif m.get("type") == "error":
                    self._report("refused", f"the monitor refused a message: {m.get('reason')}: {m.get('error')}")
                if self._on_message is not None:
                    try:
                        self._on_message(m)
                    except Exception:
                        pass
        except asyncio.CancelledError:
            raise
        except Exception:
            pass
        if not self._closing and not self._dead:
            self._die("gone", "the monitor closed the connection; dropping what follows")
