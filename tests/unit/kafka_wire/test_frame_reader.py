"""The Kafka listener's frame reader: the bytes a StreamReader would give, whatever the reads' sizes."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
from typing import Any

import pytest
import uvloop

from minikafka.broker.kafka_wire.frame_reader import (
    DIRECT_FRAME_BYTES,
    READ_AHEAD_BYTES,
    FrameBudget,
    FrameReaderProtocol,
)


class FakeTransport(asyncio.Transport):
    def __init__(self, ssl: bool = False) -> None:
        super().__init__(extra={"sslcontext": object()} if ssl else None)
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def deliver(protocol: FrameReaderProtocol, data: bytes) -> None:
    """As a transport does: ask for a buffer, fill what fits, repeat."""
    while data:
        buffer = protocol.get_buffer(-1)
        assert len(buffer) > 0
        size = min(len(buffer), len(data))
        buffer[:size] = data[:size]
        protocol.buffer_updated(size)
        data = data[size:]


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


async def read_frames(protocol: FrameReaderProtocol, count: int) -> list[bytes]:
    frames = []
    for _ in range(count):
        size = struct.unpack(">i", await protocol.readexactly(4))[0]
        frames.append(bytes(await protocol.read_frame(size)))
    return frames


def bodies(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([0, 1, 7, 300, 70_000, 300_000])) for _ in range(12)]


@pytest.mark.parametrize("seed", range(6))
def test_frames_arrive_whole_however_the_bytes_are_split(seed: int) -> None:
    async def run() -> list[bytes]:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        protocol.connection_made(FakeTransport())
        wire = b"".join(framed(body) for body in expected)
        rng = random.Random(seed)

        async def send() -> None:
            position = 0
            while position < len(wire):
                step = rng.choice([1, 3, 4, 100, 65_536, 200_000])
                deliver(protocol, wire[position : position + step])
                position += step
                await asyncio.sleep(0)  # the reader may run between reads, or not

        sender = asyncio.create_task(send())
        frames = await read_frames(protocol, len(expected))
        await sender
        return frames

    expected = bodies(seed)
    assert asyncio.run(run()) == expected


def test_connections_sharing_a_scratch_buffer_read_their_own_bytes() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        scratch = bytearray(1000)
        first, second = FrameReaderProtocol(loop, scratch), FrameReaderProtocol(loop, scratch)
        for protocol in (first, second):
            protocol.connection_made(FakeTransport())
        for step in range(40):
            deliver(first, framed(b"1" * step))
            deliver(second, framed(b"2" * (step * 37)))
        assert await read_frames(first, 40) == [b"1" * step for step in range(40)]
        assert await read_frames(second, 40) == [b"2" * (step * 37) for step in range(40)]

    asyncio.run(run())


def test_a_frame_is_read_only_and_its_own_buffer() -> None:
    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        protocol.connection_made(FakeTransport())
        deliver(protocol, framed(b"a" * 100_000) + framed(b"b" * 10))
        size = struct.unpack(">i", await protocol.readexactly(4))[0]
        first = await protocol.read_frame(size)
        assert first.readonly
        await protocol.readexactly(4)
        assert bytes(await protocol.read_frame(10)) == b"b" * 10
        assert bytes(first) == b"a" * 100_000  # the next frame did not overwrite it

    asyncio.run(run())


def test_end_of_stream_inside_a_frame_gives_what_came() -> None:
    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        protocol.connection_made(FakeTransport())
        deliver(protocol, struct.pack(">i", 1000) + b"x" * 300)
        await protocol.readexactly(4)
        reading = asyncio.create_task(protocol.read_frame(1000))
        await asyncio.sleep(0)
        deliver(protocol, b"y" * 200)
        protocol.eof_received()
        with pytest.raises(asyncio.IncompleteReadError) as raised:
            await reading
        assert raised.value.partial == b"x" * 300 + b"y" * 200
        assert raised.value.expected == 1000
        with pytest.raises(asyncio.IncompleteReadError):
            await protocol.readexactly(4)

    asyncio.run(run())


@pytest.mark.parametrize("ssl", [False, True])
def test_a_half_closed_plain_connection_stays_open_for_answers(ssl: bool) -> None:
    """As a StreamReaderProtocol: EOF keeps a plain transport open for writing (not one over TLS)."""

    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        protocol.connection_made(FakeTransport(ssl))
        assert protocol.eof_received() is (not ssl)

    asyncio.run(run())


def test_a_lost_connection_raises_its_error() -> None:
    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        protocol.connection_made(FakeTransport())
        reading = asyncio.create_task(protocol.readexactly(4))
        await asyncio.sleep(0)
        protocol.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(ConnectionResetError):
            await reading

    asyncio.run(run())


def test_reading_pauses_while_too_much_waits_unread() -> None:
    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        transport = FakeTransport()
        protocol.connection_made(transport)
        small = [framed(b"z" * 1000) for _ in range(READ_AHEAD_BYTES // 1000 + 10)]
        deliver(protocol, b"".join(small))
        assert transport.paused
        await read_frames(protocol, len(small))
        assert not transport.paused

    asyncio.run(run())


def test_a_read_longer_than_the_read_ahead_resumes_reading() -> None:
    """A SASL token or a gathered frame may be longer than READ_AHEAD_BYTES: reading must not stay paused."""

    async def run() -> None:
        protocol = FrameReaderProtocol(asyncio.get_running_loop())
        transport = FakeTransport()
        protocol.connection_made(transport)
        token = b"t" * (READ_AHEAD_BYTES * 3)
        reading = asyncio.create_task(protocol.readexactly(len(token)))
        position = 0
        while position < len(token):
            assert not transport.paused
            deliver(protocol, token[position : position + 10_000])
            position += 10_000
            await asyncio.sleep(0)
        assert await reading == token

    asyncio.run(run())


@pytest.mark.parametrize("use_uvloop", [False, True])
def test_an_answer_reaches_a_client_that_half_closed(use_uvloop: bool) -> None:
    """A client that sends its request and shuts down its sending side gets the answer, written through a
    StreamWriter over this protocol, as the listener writes."""

    async def run() -> bytes:
        loop = asyncio.get_running_loop()
        server, client = socket.socketpair()
        server.setblocking(False)
        protocol = FrameReaderProtocol(loop)
        transport: Any
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, server)
        reader, writer = await asyncio.open_connection(sock=client)
        writer.write(framed(b"request"))
        writer.write_eof()
        answers = asyncio.StreamWriter(transport, protocol, None, loop)
        try:
            size = struct.unpack(">i", await protocol.readexactly(4))[0]
            answers.write(framed(bytes(await protocol.read_frame(size)).upper()))
            await answers.drain()
            return await asyncio.wait_for(reader.readexactly(4 + len(b"REQUEST")), 30)
        finally:
            writer.close()
            answers.close()

    runner = uvloop.run if use_uvloop else asyncio.run
    assert runner(run()) == framed(b"REQUEST")


@pytest.mark.parametrize("use_uvloop", [False, True])
def test_over_a_socket(use_uvloop: bool) -> None:
    """Through a real transport (asyncio's and uvloop's, the broker's): a 2 MB frame received into its buffer and
    a larger one gathered, among small ones."""
    expected = [b"small", b"m" * 2_000_000, b"", b"g" * (DIRECT_FRAME_BYTES + 1000), b"tail" * 1000]

    async def run() -> list[bytes]:
        loop = asyncio.get_running_loop()
        server, client = socket.socketpair()
        server.setblocking(False)
        protocol = FrameReaderProtocol(loop)
        transport: Any
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, server)
        _, writer = await asyncio.open_connection(sock=client)
        writer.write(b"".join(framed(body) for body in expected))
        draining = asyncio.create_task(writer.drain())  # the reader must read for the writer to finish
        try:
            return await asyncio.wait_for(read_frames(protocol, len(expected)), 30)
        finally:
            await draining
            writer.close()
            transport.close()

    runner = uvloop.run if use_uvloop else asyncio.run
    assert runner(run()) == expected


def test_size_prefixes_alone_allocate_no_more_than_the_listeners_budget() -> None:
    """Connections that send a frame's size and nothing more hold at most the budget in frame buffers; past it a
    frame is gathered as its bytes come, and the budget is given back as frames complete or their connections end."""

    async def run() -> None:
        loop = asyncio.get_running_loop()
        budget = FrameBudget(limit=3 * 1_000_000)
        protocols = [FrameReaderProtocol(loop, budget=budget) for _ in range(5)]
        for protocol in protocols:
            protocol.connection_made(FakeTransport())
        reads = [asyncio.create_task(p.read_frame(1_000_000)) for p in protocols]
        await asyncio.sleep(0)
        assert budget.held == 3_000_000  # two of the five wait without a buffer of their own
        for protocol in protocols:
            deliver(protocol, b"z" * 1_000_000)
        assert [bytes(await read) for read in reads] == [b"z" * 1_000_000] * 5
        assert budget.held == 0
        waiting = [FrameReaderProtocol(loop, budget=budget) for _ in range(2)]
        for protocol in waiting:
            protocol.connection_made(FakeTransport())
        stuck = [asyncio.create_task(p.read_frame(1_000_000)) for p in waiting]
        await asyncio.sleep(0)
        for protocol in waiting:
            protocol.connection_lost(ConnectionResetError("gone"))
        await asyncio.gather(*stuck, return_exceptions=True)
        assert budget.held == 0

    asyncio.run(run())
