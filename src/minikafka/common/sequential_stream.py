"""One request at a time on a long-lived gRPC bidi stream, its answer read by the caller's own task.

A follower's fetcher has one Fetch outstanding per leader and waits for its answer before the next, so it needs no
reader task: reading in the caller saves the hop from a reader task to the caller on every answer, which with
acks=all lies on the produce path (the follower's next Fetch is what moves the high watermark). grpc.aio ends the
whole call when a pending read is cancelled, which is what a timeout, `close()` or a cancelled caller means here.

Errors are those of `PipelinedStream`: the stream's `grpc.RpcError`, after which the next call opens a new stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic

import grpc

from minikafka.common.pipelined_stream import Request, Response, StreamError, as_rpc_error


class SequentialStream(Generic[Request, Response]):
    def __init__(self, open_stream: Callable[[], Any]) -> None:
        """`open_stream` starts the bidi call, e.g. `stub.FetchStream` (called with no arguments)."""
        self._open_stream = open_stream
        self._stream: Any = None
        self._lock = asyncio.Lock()  # a second caller waits for the first one's answer
        self._ended: StreamError | None = None  # why the call in progress had its stream cancelled here

    async def call(self, request: Request, timeout: float | None = None) -> Response:
        """Send `request` and read its answer; a timeout or a cancelled caller abandons the stream."""
        async with self._lock:
            if self._stream is None:
                self._stream = self._open_stream()
            stream = self._stream
            self._ended = None
            timer = None
            if timeout is not None:
                deadline = StreamError("no answer within the request timeout", grpc.StatusCode.DEADLINE_EXCEEDED)
                timer = asyncio.get_running_loop().call_later(timeout, self._end, stream, deadline)
            try:
                await stream.write(request)
                response = await stream.read()
            except (asyncio.CancelledError, Exception) as error:  # also grpc.RpcError, InvalidStateError
                self._abandon(stream)
                if self._ended is not None:
                    raise self._ended from None
                if isinstance(error, asyncio.CancelledError):
                    raise
                raise as_rpc_error(error) from error
            finally:
                if timer is not None:
                    timer.cancel()
            if response is grpc.aio.EOF:
                self._abandon(stream)
                raise StreamError("the server ended the stream")
            return response

    def _end(self, stream: Any, why: StreamError) -> None:
        self._ended = why
        self._abandon(stream)

    def _abandon(self, stream: Any) -> None:
        if self._stream is stream:
            self._stream = None
        stream.cancel()

    async def close(self) -> None:
        if self._stream is not None:
            self._end(self._stream, StreamError("closed"))
