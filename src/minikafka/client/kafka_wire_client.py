"""A minimal client of the Kafka wire protocol (kio entities over asyncio streams), for minikafka's tools that talk
to brokers' Kafka listeners as Kafka's own tools do: one request at a time per connection."""

from __future__ import annotations

import asyncio
import importlib
import io
import ssl
import struct
from typing import TYPE_CHECKING, Any

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.node_environment import simulated_node

SIZE = struct.Struct(">i")
CLIENT_ID = "minikafka"

if TYPE_CHECKING:
    from kio.static.protocol import ResponsePayload


# kio is imported where it is used: loading it takes about a second, which every CLI command would pay, since the
# parser names this module's commands (consumer-groups).


def request_class(api_key: int, api_version: int) -> Any:  # a class picked at run time: its fields too
    from kio.index import load_request_schema

    return load_request_schema(api_key, api_version)


def response_class(api_key: int, api_version: int) -> type[ResponsePayload]:
    from kio.index import load_response_schema

    return load_response_schema(api_key, api_version)


def nested(cls: type, name: str) -> type:
    """A nested entity class of the same generated module as `cls`."""
    return getattr(importlib.import_module(cls.__module__), name)


class KafkaConnection:
    def __init__(self, address: str, timeout_s: float, ssl_context: ssl.SSLContext | None = None) -> None:
        """`ssl_context`: connect with TLS (an SSL listener)."""
        self.address = address
        self.timeout_s = timeout_s
        self.ssl_context = ssl_context
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._streams is None:
            host, _, port = self.address.rpartition(":")
            try:
                node = simulated_node()  # a simulated client reaches the brokers over the simulated network
                opening = (
                    node.network.open_stream(node.node_id, self.address)
                    if node is not None
                    else asyncio.open_connection(host, int(port), ssl=self.ssl_context)
                )
                streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] = await asyncio.wait_for(
                    opening, self.timeout_s
                )
            except (OSError, TimeoutError) as error:
                raise KafkaError(ErrorCode.NETWORK_EXCEPTION, f"cannot connect to {self.address}: {error}") from None
            self._streams = streams
        return self._streams

    async def send(self, body: Any) -> Any:
        """Send one request entity and return the response entity."""
        async with self._lock:
            try:
                return await asyncio.wait_for(self._exchange(body), self.timeout_s)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as error:
                self._drop()
                raise KafkaError(ErrorCode.NETWORK_EXCEPTION, f"{self.address}: {type(error).__name__}") from None
            except BaseException:
                # Cancelled or failed between the request and its whole answer: the stream may still hold that
                # answer, which the next request would read as its own.
                self._drop()
                raise

    async def _exchange(self, body: Any) -> Any:
        from kio.serial import entity_reader, entity_writer

        reader, writer = await self._connect()
        self._correlation_id += 1
        header_cls = type(body).__header_schema__
        out = io.BytesIO()
        out.write(b"\0\0\0\0")
        header = header_cls(
            request_api_key=type(body).__api_key__,
            request_api_version=type(body).__version__,
            correlation_id=self._correlation_id,
            client_id=CLIENT_ID,
        )
        entity_writer(header_cls)(out, header)
        entity_writer(type(body))(out, body)
        frame = out.getbuffer()
        SIZE.pack_into(frame, 0, len(frame) - SIZE.size)
        writer.write(bytes(frame))
        del frame
        await writer.drain()
        size = SIZE.unpack(await reader.readexactly(SIZE.size))[0]
        data = await reader.readexactly(size)
        response_cls = response_class(type(body).__api_key__, type(body).__version__)
        header_read, used = entity_reader(response_cls.__header_schema__)(data, 0)
        if header_read.correlation_id != self._correlation_id:  # as Kafka's clients check it
            raise KafkaError(
                ErrorCode.NETWORK_EXCEPTION,
                f"{self.address}: correlation id {header_read.correlation_id} answers request {self._correlation_id}",
            )
        response: ResponsePayload
        response, _ = entity_reader(response_cls)(data, used)
        return response

    async def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


class KafkaWireClient:
    """Connections to brokers by address, opened on first use."""

    def __init__(self, bootstrap: list[str], timeout_s: float = 10.0) -> None:
        if not bootstrap:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "no Kafka listener address given")
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self._connections: dict[str, KafkaConnection] = {}

    def connection(self, address: str) -> KafkaConnection:
        if address not in self._connections:
            self._connections[address] = KafkaConnection(address, self.timeout_s)
        return self._connections[address]

    async def any_broker(self, body: Any) -> Any:
        """Send to the first bootstrap broker that answers."""
        last: KafkaError | None = None
        for address in self.bootstrap:
            try:
                return await self.connection(address).send(body)
            except KafkaError as error:
                last = error
        assert last is not None
        raise last

    async def close(self) -> None:
        for connection in self._connections.values():
            await connection.close()
