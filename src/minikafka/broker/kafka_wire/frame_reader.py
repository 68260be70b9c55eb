"""The Kafka listener's read side: a request frame's body is received straight into a buffer of its own.

asyncio's StreamReader copies every received byte three times before a request reaches its decoder (the
transport's read into a new bytes object, the append to the reader's buffer, `readexactly`'s copy out of it); for a
megabyte Produce that is several copies of the whole batch. Here the socket (or the TLS layer) writes a frame's body
into the frame's own buffer once the size prefix is known. Bytes read ahead of any wanted frame (size prefixes, small
requests, a frame's first bytes in the same read as its prefix) go through a small scratch buffer as before.

A frame's buffer is allocated when its size prefix has been read, as Kafka's NetworkReceive does, for frames up to
DIRECT_FRAME_BYTES (a producer's requests are at most about 1 MB by default), while the listener's connections hold
less than DIRECT_BUDGET_BYTES of such buffers still waiting for their bytes. A larger frame, or one past that
budget, is gathered as its bytes come, as before, so a client must send the bytes the broker holds for it: clients
that send size prefixes and nothing more cannot make the broker allocate memory for them.

The same answers as a StreamReader: `readexactly` and `read_frame` raise IncompleteReadError (with what came) at
end of stream and the transport's error when the connection was lost; reading pauses while more than
READ_AHEAD_BYTES wait unread and no read wants them, as a StreamReader's limit does.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

SCRATCH_BYTES = 64 * 1024  # one read when no frame's body is wanted (copied out at once: one per listener will do)
READ_AHEAD_BYTES = 128 * 1024  # unread bytes before reading pauses (a StreamReader's 2 x 64 KiB)
DIRECT_FRAME_BYTES = 2 * 1024 * 1024
DIRECT_BUDGET_BYTES = 64 * 1024 * 1024  # a listener's frame buffers allocated ahead of their bytes, in all


class FrameBudget:
    """The bytes of frame buffers a listener's connections hold allocated before their bytes came."""

    def __init__(self, limit: int = DIRECT_BUDGET_BYTES) -> None:
        self.limit = limit
        self.held = 0

    def take(self, n: int) -> bool:
        if self.held + n > self.limit:
            return False
        self.held += n
        return True

    def give_back(self, n: int) -> None:
        self.held -= n


class FrameSource(Protocol):
    """What a connection reads from: this module's protocol, or a StreamReader in a simulated node."""

    async def readexactly(self, n: int) -> bytes: ...

    async def read_frame(self, n: int) -> bytes | memoryview: ...


class StreamFrames:
    """A StreamReader as a FrameSource (the simulated network hands out StreamReaders)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readexactly(self, n: int) -> bytes:
        return await self._reader.readexactly(n)

    async def read_frame(self, n: int) -> bytes | memoryview:
        return await self._reader.readexactly(n)


class FrameReaderProtocol(asyncio.BufferedProtocol):
    """A connection's protocol: reads as above, and what a StreamWriter's drain and close wait on. Not an
    asyncio.Protocol (so no StreamReaderProtocol or FlowControlMixin): uvloop reads into `get_buffer` only for a
    protocol that is not one."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, scratch: bytearray | None = None, budget: FrameBudget | None = None
    ) -> None:
        """`scratch`: a buffer to share with the listener's other connections. A transport calls `buffer_updated`
        right after reading into `get_buffer`'s answer, on the loop's one thread, so one connection's read is
        copied out before another's can land there. `budget`: the listener's, shared the same way."""
        self._loop = loop
        self._budget = budget if budget is not None else FrameBudget()
        self._transport: Any = None
        self._scratch = scratch if scratch is not None else bytearray(SCRATCH_BYTES)
        self._unread = bytearray()  # read ahead, in order, before any frame body being filled
        self._frame: bytearray | None = None  # the body being received straight into its buffer
        self._filled = 0
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._error: BaseException | None = None
        self._paused = False  # reading
        self._over_ssl = False
        self._wanted = 0  # the bytes a waiting readexactly needs: reading does not pause below them
        self._closed = loop.create_future()
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._lost = False

    # ---- asyncio's side ----

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # uvloop's transports are not asyncio.Transport instances
        self._over_ssl = transport.get_extra_info("sslcontext") is not None

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        return memoryview(self._scratch)

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                self._frame = None  # whole: a read before the reader wakes goes to the scratch buffer
                self._wake()
            return
        self._unread += memoryview(self._scratch)[:nbytes]
        self._wake()
        if len(self._unread) > max(READ_AHEAD_BYTES, self._wanted) and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        # As a StreamReaderProtocol: a client that half-closes a plain connection still gets its answers.
        return not self._over_ssl

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self._error = exc
        self._eof = True
        self._lost = True
        self._wake()
        if not self._closed.done():
            self._closed.set_result(None)
        if self._drained is not None and not self._drained.done():
            if exc is None:
                self._drained.set_result(None)
            else:
                self._drained.set_exception(exc)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # ---- a StreamWriter's side (asyncio's FlowControlMixin does the same for a StreamReaderProtocol) ----

    async def _drain_helper(self) -> None:
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._writing_paused:
            return
        if self._drained is None or self._drained.done():
            self._drained = self._loop.create_future()
        await asyncio.shield(self._drained)  # one answer is written at a time; shielded, a cancel leaves it

    def _get_close_waiter(self, stream: Any) -> asyncio.Future[None]:
        return self._closed

    # ---- the connection's side ----

    async def readexactly(self, n: int) -> bytes:
        """`n` bytes gathered in the read-ahead (a size prefix, a SASL token, a frame above DIRECT_FRAME_BYTES)."""
        self._wanted = n
        try:
            while len(self._unread) < n:
                self._check_open(bytes(self._unread), n)
                self._resume_if_drained()
                await self._wait()
        finally:
            self._wanted = 0
        data = bytes(self._unread[:n])
        del self._unread[:n]
        self._resume_if_drained()
        return data

    async def read_frame(self, n: int) -> memoryview:
        """A frame body of `n` bytes, in a buffer of its own (read-only: the decoder wants that)."""
        if n > DIRECT_FRAME_BYTES or not self._budget.take(n):
            return memoryview(await self.readexactly(n))
        try:
            frame = bytearray(n)
            ahead = min(n, len(self._unread))
            frame[:ahead] = memoryview(self._unread)[:ahead]
            del self._unread[:ahead]
            self._resume_if_drained()
            if ahead < n:
                self._frame, self._filled = frame, ahead
                try:
                    while self._filled < n:
                        self._check_open(bytes(frame[: self._filled]), n)
                        await self._wait()
                finally:
                    self._frame = None
        finally:
            self._budget.give_back(n)
        return memoryview(frame).toreadonly()

    def _check_open(self, partial: bytes, expected: int) -> None:
        if self._error is not None:
            raise self._error
        if self._eof:
            raise asyncio.IncompleteReadError(partial, expected)

    async def _wait(self) -> None:
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _resume_if_drained(self) -> None:
        if self._paused and len(self._unread) <= max(READ_AHEAD_BYTES, self._wanted) and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
