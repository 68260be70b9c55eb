"""Requests pipelined on one long-lived gRPC bidi stream, each answered in order, as Kafka pipelines requests on
one connection. A unary call costs about twice the CPU of a stream message in grpc.aio (benchmarks/), and Produce
is a hot path, so the producer sends it this way (the follower fetchers, one Fetch at a time, use SequentialStream).

`call()` writes a request and waits for its answer; when the stream breaks, every waiting call fails with the
stream's `grpc.RpcError` (so callers keep their unary error handling) and the next call opens a new stream.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import grpc

Request = TypeVar("Request")
Response = TypeVar("Response")


class StreamError(grpc.RpcError):
    """The stream broke (ended by the server, closed here) or a call got no answer in time."""

    def __init__(self, details: str, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class PipelinedStream(Generic[Request, Response]):
    def __init__(self, open_stream: Callable[[], Any]) -> None:
        """`open_stream` starts the bidi call, e.g. `stub.ProduceStream` (called with no arguments), and returns it
        or an awaitable of it (a SASL session's token may have to be fetched first). What it raises, the call that
        needed a new stream raises."""
        self._open_stream = open_stream
        self._stream: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: deque[asyncio.Future[Response]] = deque()
        self._write_lock = asyncio.Lock()

    async def call(self, request: Request, timeout: float | None = None) -> Response:
        """Send `request` and wait for its answer; a timeout abandons the stream (later answers would not match)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Response] = loop.create_future()
        answer.add_done_callback(_retrieve)  # a caller cancelled meanwhile leaves no "never retrieved" warning
        async with self._write_lock:  # the order of writes is the order of answers
            if self._stream is None:
                opened = self._open_stream()
                self._stream = await opened if inspect.isawaitable(opened) else opened
                self._reader = asyncio.create_task(self._read(self._stream, self._waiting))
            self._waiting.append(answer)
            stream, waiting = self._stream, self._waiting
            try:
                await stream.write(request)
            except asyncio.CancelledError:
                # The request may or may not have left: its answer could not be told apart from the next one's.
                self._abandon(stream, waiting, StreamError("a call was cancelled while its request was written"))
                raise
            except Exception as error:  # grpc.RpcError, or the call already finished (InvalidStateError)
                self._abandon(stream, waiting, as_rpc_error(error))
        # A timer, not wait_for(shield()): those add two loop turns between the answer and the caller, on every
        # call. A cancelled caller cancels only its answer, which the reader then skips, keeping the order.
        timer = None if timeout is None else loop.call_later(timeout, self._expire, stream, waiting, answer)
        try:
            return await answer
        finally:
            if timer is not None:
                timer.cancel()

    def _expire(self, stream: Any, waiting: deque[asyncio.Future[Response]], answer: asyncio.Future[Response]) -> None:
        if answer.done():
            return
        answer.set_exception(StreamError("no answer within the request timeout", grpc.StatusCode.DEADLINE_EXCEEDED))
        self._abandon(stream, waiting, StreamError("an earlier request on this stream timed out"))

    async def _read(self, stream: Any, waiting: deque[asyncio.Future[Response]]) -> None:
        try:
            while True:
                response = await stream.read()
                if response is grpc.aio.EOF:
                    raise StreamError("the server ended the stream")
                if waiting:
                    answer = waiting.popleft()
                    if not answer.done():
                        answer.set_result(response)
        except (grpc.RpcError, asyncio.CancelledError) as error:
            self._abandon(stream, waiting, as_rpc_error(error))

    def _abandon(self, stream: Any, waiting: deque[asyncio.Future[Response]], error: grpc.RpcError) -> None:
        """Fail what waits on `stream` and forget it; a newer stream (already reopened) is left alone."""
        while waiting:
            answer = waiting.popleft()
            if not answer.done():
                answer.set_exception(error)
        if self._stream is stream:
            self._stream = None
            self._waiting = deque()
            if self._reader is not None and self._reader is not asyncio.current_task():
                self._reader.cancel()
            self._reader = None
            stream.cancel()

    async def close(self) -> None:
        if self._stream is not None:
            reader = self._reader
            self._abandon(self._stream, self._waiting, StreamError("closed"))
            if reader is not None:
                await asyncio.gather(reader, return_exceptions=True)


def _retrieve(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled():
        answer.exception()


def as_rpc_error(error: BaseException) -> grpc.RpcError:
    if isinstance(error, grpc.RpcError):
        return error
    return StreamError(f"stream closed: {type(error).__name__}")
