"""PipelinedStream and SequentialStream against a real grpc.aio server on loopback: answers match their requests
(many in flight on a PipelinedStream); a broken stream fails every waiting call with a grpc.RpcError and the next
call opens a new stream; a call that gets no answer in time fails with DEADLINE_EXCEEDED without wedging later
calls; a SequentialStream whose caller is cancelled or which is closed mid-call gives up that stream only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest

from minikafka.common.grpc_support import insecure_channel, start_server
from minikafka.common.pipelined_stream import PipelinedStream
from minikafka.common.sequential_stream import SequentialStream

METHOD = "/test.Echo/Pipe"
HELD = 20  # requests the server reads after b"hold" before it answers them


class EchoServer:
    """Answers each request with its bytes; b"end" ends the stream, b"abort" fails it, b"slow" is never answered
    on its stream (the server stops reading until that stream is cancelled); after b"hold", the next HELD requests
    are answered once all are read and `release` is set."""

    def __init__(self) -> None:
        self.streams_opened = 0
        self.slow_read = asyncio.Event()
        self.all_held = asyncio.Event()
        self.release = asyncio.Event()

    async def pipe(self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        self.streams_opened += 1
        held: list[bytes] = []
        async for request in requests:
            if held or request == b"hold":
                held.append(request)
                if request == b"hold":
                    yield request
                if len(held) == HELD + 1:
                    self.all_held.set()
                    await self.release.wait()
                    for waiting in held[1:]:
                        yield waiting
                    held = []
                continue
            if request == b"end":
                return
            if request == b"abort":
                await context.abort(grpc.StatusCode.INTERNAL, "asked to fail")
            if request == b"slow":
                self.slow_read.set()
                await asyncio.Event().wait()  # until the client cancels the stream
            yield request

    def register(self, server: grpc.aio.Server) -> None:
        handler = grpc.method_handlers_generic_handler(
            "test.Echo", {"Pipe": grpc.stream_stream_rpc_method_handler(self.pipe)}
        )
        server.add_generic_rpc_handlers((handler,))


Stream = PipelinedStream[bytes, bytes] | SequentialStream[bytes, bytes]
KINDS = [PipelinedStream, SequentialStream]


async def with_stream(test: Callable[[Any, EchoServer], object], kind: type[Stream] = PipelinedStream) -> None:
    echo = EchoServer()
    bound = await start_server("127.0.0.1", 0, [echo.register])
    channel = insecure_channel(bound.address)
    stream = kind(channel.stream_stream(METHOD))
    try:
        await test(stream, echo)  # type: ignore[misc]
    finally:
        await stream.close()
        await channel.close()
        await bound.server.stop(None)


@pytest.mark.parametrize("kind", KINDS)
async def test_many_calls_at_once_each_get_their_own_answer_on_one_stream(kind: type[Stream]) -> None:
    """In flight together on a PipelinedStream; taking turns on a SequentialStream."""

    async def test(stream: Stream, echo: EchoServer) -> None:
        requests = [f"request-{i}".encode() for i in range(200)]
        answers = await asyncio.gather(*(stream.call(r, timeout=10) for r in requests))
        assert answers == requests
        assert echo.streams_opened == 1

    await with_stream(test, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("breaker", "code"), [(b"end", grpc.StatusCode.UNAVAILABLE), (b"abort", grpc.StatusCode.INTERNAL)]
)
async def test_a_broken_stream_fails_its_calls_and_the_next_call_reopens(
    breaker: bytes, code: grpc.StatusCode, kind: type[Stream]
) -> None:
    async def test(stream: Stream, echo: EchoServer) -> None:
        assert await stream.call(b"first", timeout=10) == b"first"
        with pytest.raises(grpc.RpcError) as failure:
            await stream.call(breaker, timeout=10)
        assert failure.value.code() == code
        assert await stream.call(b"again", timeout=10) == b"again"
        assert echo.streams_opened == 2

    await with_stream(test, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_call_without_an_answer_times_out_and_later_calls_use_a_new_stream(kind: type[Stream]) -> None:
    async def test(stream: Stream, echo: EchoServer) -> None:
        with pytest.raises(grpc.RpcError) as failure:
            await stream.call(b"slow", timeout=0.2)
        assert failure.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert await stream.call(b"after", timeout=10) == b"after"
        assert echo.streams_opened == 2

    await with_stream(test, kind)


async def test_a_cancelled_caller_leaves_the_order_of_the_other_answers_intact() -> None:
    async def test(stream: PipelinedStream[bytes, bytes], echo: EchoServer) -> None:
        assert await stream.call(b"hold", timeout=10) == b"hold"  # answers wait until every request is read
        calls = [asyncio.ensure_future(stream.call(f"call-{i}".encode(), timeout=10)) for i in range(HELD)]
        await asyncio.wait_for(echo.all_held.wait(), 10)  # every request written: the callers wait for answers
        for index in range(0, HELD, 3):
            calls[index].cancel()
        echo.release.set()
        answers = await asyncio.gather(*calls, return_exceptions=True)
        for index, answer in enumerate(answers):
            if index % 3 == 0:
                assert isinstance(answer, asyncio.CancelledError)
            else:
                assert answer == f"call-{index}".encode()
        assert await stream.call(b"after", timeout=10) == b"after"
        assert echo.streams_opened == 1

    await with_stream(test)


async def test_a_caller_cancelled_while_writing_gives_up_the_stream_and_the_next_call_reopens() -> None:
    async def test(stream: PipelinedStream[bytes, bytes], echo: EchoServer) -> None:
        first = asyncio.ensure_future(stream.call(b"first", timeout=10))
        second = asyncio.ensure_future(stream.call(b"second", timeout=10))
        await asyncio.sleep(0)  # the first call is writing (the new stream's headers first); the second waits
        first.cancel()
        # The first stream is given up (an answer to "first" may come or not); the second call opens another.
        assert await second == b"second"
        assert await stream.call(b"after", timeout=10) == b"after"
        assert first.cancelled()

    await with_stream(test)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_is_gone_fails_the_call_with_unavailable(kind: type[Stream]) -> None:
    echo = EchoServer()
    bound = await start_server("127.0.0.1", 0, [echo.register])
    address = bound.address
    await bound.server.stop(None)
    channel = insecure_channel(address)
    stream = kind(channel.stream_stream(METHOD))
    try:
        with pytest.raises(grpc.RpcError) as failure:
            await stream.call(b"anyone?", timeout=5)
        assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await stream.close()
        await channel.close()


async def test_a_cancelled_sequential_caller_gives_up_the_stream_and_the_next_call_reopens() -> None:
    async def test(stream: SequentialStream[bytes, bytes], echo: EchoServer) -> None:
        assert await stream.call(b"first", timeout=10) == b"first"
        waiting = asyncio.ensure_future(stream.call(b"slow", timeout=10))
        await asyncio.wait_for(echo.slow_read.wait(), 10)  # the server holds it: the caller is reading
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await stream.call(b"after", timeout=10) == b"after"
        assert echo.streams_opened == 2

    await with_stream(test, SequentialStream)


async def test_closing_a_sequential_stream_mid_call_fails_that_call_with_unavailable() -> None:
    async def test(stream: SequentialStream[bytes, bytes], echo: EchoServer) -> None:
        waiting = asyncio.ensure_future(stream.call(b"slow", timeout=10))
        await asyncio.wait_for(echo.slow_read.wait(), 10)
        await stream.close()
        with pytest.raises(grpc.RpcError) as failure:
            await waiting
        assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
        assert await stream.call(b"after", timeout=10) == b"after"

    await with_stream(test, SequentialStream)
