"""Byte-stream connections over the simulated network, for the Kafka wire protocol (a broker's Kafka listener, the
clients that speak to it): asyncio's StreamReader and StreamWriter over an in-memory transport pair.

Each direction keeps its bytes in order, as TCP does; each chunk is delayed and held while its link is cut, as the
network's gRPC messages are. A closed end delivers its peer an EOF after what it had written; a crashed node's
connections are reset at once (the peer reads ConnectionResetError), as a killed process's sockets are.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Callable, Coroutine
from typing import Any, Protocol


class SimNetwork(Protocol):
    """What the streams use of the simulated network (`sim/network.py`, which builds on this module)."""

    stream_listeners: dict[str, StreamListener]
    open_streams: set[SimTransport]

    def node_at(self, address: str) -> int | None: ...

    async def carry(self, source: int, destination: int | None) -> None: ...


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Accept = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]
_CLOSED = b""  # a pipe's end marker (data chunks are never empty)
_PORTS = itertools.count(40000)  # the clients' ephemeral ports: only named in peer addresses
_OPENED = itertools.count()  # the transports' creation order: a crash resets them in it, as a replay must


class StreamListener:
    """A node listening for stream connections at an address; its handler runs each connection as the node."""

    def __init__(self, network: SimNetwork, node_id: int, address: str, accept: Accept) -> None:
        self.network = network
        self.node_id = node_id
        self.address = address
        self.accept = accept
        self.context = contextvars.copy_context()  # the node's: a crash ends its connections' handlers
        # Its connections' handlers, held as a server's sockets hold theirs: a task waiting only on its own reader
        # is otherwise garbage, and collecting it would close its connection at a moment no replay keeps.
        self.handlers: dict[asyncio.Task[None], None] = {}

    def close(self) -> None:
        if self.network.stream_listeners.get(self.address) is self:
            del self.network.stream_listeners[self.address]


class SimTransport(asyncio.Transport):
    """One end of a connection: what it writes goes, in order and delayed, to its peer's protocol."""

    def __init__(self, network: SimNetwork, node_id: int, peername: tuple[str, int]) -> None:
        super().__init__()
        self.network = network
        self.node_id = node_id
        self.peername = peername
        self.protocol: asyncio.BaseProtocol | None = None
        self.peer: SimTransport | None = None
        self._pipe: asyncio.Queue[bytes] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._closing = False
        self._lost = False
        self.order = next(_OPENED)
        self._loop = asyncio.get_running_loop()

    def connect(self, protocol: asyncio.BaseProtocol, peer: SimTransport) -> None:
        self.protocol, self.peer = protocol, peer
        # Nobody's task: a pause holds the receiving node's handling of the bytes, not their delivery.
        self._pump = self._loop.create_task(self._carry(), context=contextvars.Context())
        protocol.connection_made(self)

    async def _carry(self) -> None:
        assert self.peer is not None
        while (chunk := await self._pipe.get()) != _CLOSED:
            await self.network.carry(self.node_id, self.peer.node_id)
            self.peer.received(chunk)
        await self.network.carry(self.node_id, self.peer.node_id)
        self.peer.ended(None)

    def received(self, chunk: bytes) -> None:
        if not self._lost and isinstance(self.protocol, asyncio.Protocol):
            self.protocol.data_received(chunk)

    def ended(self, error: Exception | None) -> None:
        """The connection is over for this end: its peer closed (None) or it was reset."""
        if self._lost:
            return
        self._lost = True
        if error is not None and self._pump is not None:
            self._pump.cancel()
        elif not self._closing:
            self._pipe.put_nowait(_CLOSED)  # its own pump ends after what it had queued
        self._closing = True
        if isinstance(self.protocol, asyncio.Protocol) and error is None:
            self.protocol.eof_received()
        if self.protocol is not None:
            self.protocol.connection_lost(error)
        self.network.open_streams.discard(self)

    # ---- asyncio.Transport ----

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if data and not self._closing:
            self._pipe.put_nowait(bytes(data))

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """A graceful close: the peer gets what was written, then EOF; this end's protocol is told at once."""
        if self._closing:
            return
        self._closing = True
        if self._loop.is_closed():
            return  # a writer collected after the run
        self._pipe.put_nowait(_CLOSED)
        if self.protocol is not None and not self._lost:
            self._lost = True
            self._loop.call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Both ends are over at once (a killed process's socket, an aborted connection)."""
        for end in (self, self.peer):
            if end is not None:
                end.ended(ConnectionResetError("connection reset by the simulated peer"))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.peername if name == "peername" else default

    def is_reading(self) -> bool:
        return not self._lost

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass


def client_host(node_id: int) -> str:
    return f"127.0.9.{node_id % 250}"


async def open_stream(network: SimNetwork, source: int, address: str, refused_after_s: float) -> Streams:
    """Connect `source` to the listener at `address`: its handler starts as the listening node; refused (an
    OSError, as the OS's) when nothing listens there."""
    destination = network.node_at(address)
    await network.carry(source, destination)  # the SYN: held while the link is cut
    listener = network.stream_listeners.get(address)
    if listener is None:
        await asyncio.sleep(refused_after_s)
        raise ConnectionRefusedError(f"nothing listens at {address}")
    host, _, port = address.rpartition(":")
    client = SimTransport(network, source, (host, int(port)))
    server = SimTransport(network, listener.node_id, (client_host(source), next(_PORTS)))
    loop = asyncio.get_running_loop()
    client_reader, server_reader = asyncio.StreamReader(loop=loop), asyncio.StreamReader(loop=loop)
    client_protocol = asyncio.StreamReaderProtocol(client_reader, loop=loop)
    server_protocol = listener.context.run(asyncio.StreamReaderProtocol, server_reader, loop=loop)
    client.connect(client_protocol, server)
    server.connect(server_protocol, client)
    network.open_streams.update((client, server))
    server_writer = asyncio.StreamWriter(server, server_protocol, server_reader, loop)
    handler = loop.create_task(listener.accept(server_reader, server_writer), context=listener.context.copy())
    listener.handlers[handler] = None
    handler.add_done_callback(lambda done: listener.handlers.pop(done, None))
    await network.carry(destination if destination is not None else -1, source)  # the SYN-ACK
    return client_reader, asyncio.StreamWriter(client, client_protocol, client_reader, loop)


def reset_node(network: SimNetwork, node_id: int) -> None:
    """A node's process died: its listeners are gone and its connections reset."""
    for listener in [entry for entry in network.stream_listeners.values() if entry.node_id == node_id]:
        listener.close()
    for transport in sorted(network.open_streams, key=lambda t: t.order):
        if transport.node_id == node_id:
            transport.reset()
