"""A request cancelled between its write and its whole answer leaves that answer on the connection; the next
request must not read it as its own. The connection is dropped then, and every answer's correlation id is checked,
as Kafka's clients check it."""

from __future__ import annotations

import asyncio
import struct

import pytest

from minikafka.broker.kafka_wire.entities import build
from minikafka.client.kafka_wire_client import KafkaConnection, request_class, response_class
from minikafka.common.errors import KafkaError

API_VERSIONS = 18
SIZE = struct.Struct(">i")


async def _answer_each_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, received: asyncio.Event, echo: bool
) -> None:
    """An ApiVersions answer per request, 50 ms later, its throttle time (ms) the request's correlation id (or, with
    `echo` off, always correlation id 1)."""
    from kio.serial import entity_writer

    cls = response_class(API_VERSIONS, 3)
    while True:
        try:
            size = SIZE.unpack(await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return
        correlation_id = struct.unpack(">i", frame[4:8])[0]
        received.set()
        await asyncio.sleep(0.05)
        header = cls.__header_schema__(correlation_id=correlation_id if echo else 1)
        body = build(cls, error_code=0, api_keys=(), throttle_time=correlation_id)
        out = bytearray(b"\0\0\0\0")
        writer_buffer = _Buffer(out)
        entity_writer(cls.__header_schema__)(writer_buffer, header)
        entity_writer(cls)(writer_buffer, body)
        SIZE.pack_into(out, 0, len(out) - 4)
        writer.write(bytes(out))
        await writer.drain()


class _Buffer:
    def __init__(self, out: bytearray) -> None:
        self.out = out

    def write(self, data: bytes) -> int:
        self.out += data
        return len(data)


def _request() -> object:
    cls = request_class(API_VERSIONS, 3)
    return cls(client_software_name="test", client_software_version="1")


async def _serve(echo: bool) -> tuple[asyncio.Server, str, asyncio.Event]:
    received = asyncio.Event()
    server = await asyncio.start_server(lambda r, w: _answer_each_request(r, w, received, echo), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"127.0.0.1:{port}", received


def test_a_request_after_a_cancelled_one_gets_its_own_answer() -> None:
    async def run() -> int:
        server, address, received = await _serve(echo=True)
        async with server:
            connection = KafkaConnection(address, 5)
            first = asyncio.ensure_future(connection.send(_request()))
            await received.wait()
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            answer = await connection.send(_request())
            await connection.close()
            return int(answer.throttle_time.total_seconds() * 1000)

    assert asyncio.run(run()) == 2  # the second request's answer, not the first's


def test_an_answer_to_another_request_is_refused() -> None:
    async def run() -> None:
        server, address, _ = await _serve(echo=False)
        async with server:
            connection = KafkaConnection(address, 5)
            await connection.send(_request())  # correlation id 1: matches
            with pytest.raises(KafkaError, match="correlation id 1 answers request 2"):
                await connection.send(_request())
            await connection.close()

    asyncio.run(run())
