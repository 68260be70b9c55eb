"""The simulated network between the nodes of one process: grpc.aio's channel and server surface over in-memory
calls, with seeded delays, drops and one-way or two-way partitions.

A call serializes its request and answer with the generated stubs' own serializers (nothing is shared between
nodes), and its handler runs in the target node's context, so a crash of that node ends it. Unary messages may be
delayed or lost (the call then gets no answer until its deadline), or duplicated: the request delivered again later,
as a replay (a proxy's, or a retransmission on a connection the caller gave up) delivers it, its handler run once
more and its answer going nowhere. A stream's messages are delayed in order and never duplicated, as TCP keeps them.
A cut link holds messages until it heals or the call's deadline passes, as a dropped packet does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import random
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import grpc

from minikafka.sim.streams import Accept, SimTransport, StreamListener, Streams, open_stream, reset_node

_POLL_S = 0.05
REFUSED_AFTER_S = 0.01  # a connection refused by a host with nothing listening comes back at once


@dataclass(frozen=True)
class NetworkFaults:
    """How the network misbehaves, drawn from the simulation's seeded random."""

    min_delay_ms: float = 0.2
    max_delay_ms: float = 2.0
    drop_probability: float = 0.0  # of a unary request or answer
    duplicate_probability: float = 0.0  # of a unary request: delivered a second time, its answer to nobody
    duplicate_max_late_ms: float = 1000.0  # how much later than its own trip a duplicate may arrive, at most


class _CallDetails(NamedTuple):
    method: str
    invocation_metadata: tuple[Any, ...]


class RpcAborted(Exception):
    """A handler's `context.abort`: the caller gets its status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


class _ServicerContext:
    """The part of grpc.aio's ServicerContext the servicers and interceptors use."""

    def __init__(self, source: int, metadata: tuple[Any, ...] = ()) -> None:
        self._peer = f"sim:node-{source}"
        self._metadata = metadata

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        raise RpcAborted(code, details)

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[Any, ...]:
        return self._metadata

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}  # the simulated listeners are plaintext: no peer certificate

    def set_code(self, code: grpc.StatusCode) -> None:
        pass

    def set_details(self, details: str) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class SimServer:
    """What the services' registrars see of a grpc.aio server, and how calls reach their handlers."""

    def __init__(self, network: SimNetwork, node_id: int, address: str, interceptors: Sequence[Any] = ()) -> None:
        self.network = network
        self.node_id = node_id
        self.address = address
        self.interceptors = tuple(interceptors)  # grpc.aio.ServerInterceptor, run on every call as grpc.aio runs them
        self.context = contextvars.copy_context()  # the node's: its handlers run as it
        self._generic: list[Any] = []
        self._handlers: dict[str, Any] = {}  # grpc.RpcMethodHandler, called as grpc.aio calls it
        self.stopped = False

    def add_generic_rpc_handlers(self, handlers: Iterable[Any]) -> None:
        self._generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        for name, handler in handlers.items():
            self._handlers[f"/{service}/{name}"] = handler

    def handler(self, method: str) -> Any:
        found = self._handlers.get(method)
        if found is None:
            for generic in self._generic:
                found = generic.service(_CallDetails(method, ()))
                if found is not None:
                    self._handlers[method] = found
                    break
        return found

    async def intercepted(self, method: str, metadata: tuple[Any, ...]) -> Any:
        """The handler of one call as grpc.aio's server finds it: each interceptor in order, given the next one as
        its continuation (the last one's the registered handler), and the handler the first one returns."""
        return await self._intercept(0, _CallDetails(method, metadata))

    async def _intercept(self, index: int, details: _CallDetails) -> Any:
        if index == len(self.interceptors):
            return self.handler(details.method)
        continuation = functools.partial(self._intercept, index + 1)
        return await self.interceptors[index].intercept_service(continuation, details)

    async def answer(self, method: str, data: bytes, source: int, metadata: tuple[Any, ...]) -> Any:
        """One unary call served: the handler its interceptors give, its answer serialized."""
        handler = await self.intercepted(method, metadata)
        if handler is None or handler.unary_unary is None:
            raise RpcAborted(grpc.StatusCode.UNIMPLEMENTED, method)
        request = handler.request_deserializer(data)
        return handler.response_serializer(await handler.unary_unary(request, _ServicerContext(source, metadata)))

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        return asyncio.get_running_loop().create_task(coroutine, context=self.context)

    async def start(self) -> None:
        pass

    async def stop(self, grace: float | None = None) -> None:
        self.stopped = True
        self.network.unbind(self)


@dataclass
class SimNetwork:
    rng: random.Random
    faults: NetworkFaults = NetworkFaults()
    servers: dict[str, SimServer] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)  # address -> node id, for the cuts
    cuts: set[tuple[int, int]] = field(default_factory=set)  # (from, to): messages from one to the other are held
    lost_answers: set[tuple[str, int]] = field(default_factory=set)  # (RPC name, caller): its answers never arrive
    stream_listeners: dict[str, StreamListener] = field(default_factory=dict)  # Kafka listeners, by address
    open_streams: set[SimTransport] = field(default_factory=set)  # both ends of every open stream connection
    duplicates: int = 0  # unary requests delivered a second time

    # ---- what a simulated node's shell calls ----

    def channel(self, source: int, address: str) -> SimChannel:
        return SimChannel(self, source, address)

    def serve(
        self,
        node_id: int,
        host: str,
        port: int,
        registrars: Iterable[Callable[[Any], None]],
        interceptors: Sequence[Any] = (),
    ) -> SimServer:
        address = f"{host}:{port}"
        server = SimServer(self, node_id, address, interceptors)
        for register in registrars:
            register(server)
        self.servers[address] = server
        self.nodes[address] = node_id
        return server

    def unbind(self, server: SimServer) -> None:
        if self.servers.get(server.address) is server:
            del self.servers[server.address]

    def listen(self, node_id: int, host: str, port: int, accept: Accept) -> StreamListener:
        """Accept stream connections (a Kafka listener) at host:port as node `node_id`."""
        listener = StreamListener(self, node_id, f"{host}:{port}", accept)
        self.stream_listeners[listener.address] = listener
        self.nodes[listener.address] = node_id
        return listener

    async def open_stream(self, source: int, address: str) -> Streams:
        return await open_stream(self, source, address, REFUSED_AFTER_S)

    def crashed(self, node_id: int) -> None:
        """The node's process died: its servers and listeners are gone, its stream connections reset."""
        for server in [s for s in self.servers.values() if s.node_id == node_id]:
            self.unbind(server)
        reset_node(self, node_id)

    # ---- faults ----

    def partition(self, side: Iterable[int], other: Iterable[int], one_way: bool = False) -> None:
        """Hold messages from `side` to `other` (and back unless `one_way`)."""
        for a in side:
            for b in other:
                self.cuts.add((a, b))
                if not one_way:
                    self.cuts.add((b, a))

    def lose_answers(self, rpc: str, caller: int) -> None:
        """The answers to `caller`'s calls of `rpc` (a method's path or its end, e.g. "Controller/AlterPartition")
        are lost after the handler ran: a unary call times out, a stream's answers never come."""
        self.lost_answers.add((rpc, caller))

    def answer_lost(self, method: str, caller: int) -> bool:
        return any(caller == lost_caller and method.endswith(rpc) for rpc, lost_caller in self.lost_answers)

    def heal(self) -> None:
        self.cuts.clear()
        self.lost_answers.clear()

    # ---- delivery ----

    def node_at(self, address: str) -> int | None:
        return self.nodes.get(address)

    def delay_s(self) -> float:
        return self.rng.uniform(self.faults.min_delay_ms, self.faults.max_delay_ms) / 1000

    def dropped(self) -> bool:
        return self.faults.drop_probability > 0 and self.rng.random() < self.faults.drop_probability

    def duplicated(self) -> bool:
        return self.faults.duplicate_probability > 0 and self.rng.random() < self.faults.duplicate_probability

    def replay(
        self,
        server: SimServer,
        method: str,
        data: bytes,
        source: int,
        destination: int | None,
        metadata: tuple[Any, ...],
    ) -> None:
        """Deliver a unary request again, after a seeded lateness and its own trip (held while the link is cut): it
        is served as the target node (its crash ends the replay), interceptors first, its answer going to nobody."""
        late_s = self.rng.uniform(0, self.faults.duplicate_max_late_ms) / 1000
        self.duplicates += 1

        async def deliver() -> None:
            await asyncio.sleep(late_s)
            await self.carry(source, destination)
            if self.servers.get(server.address) is not server:  # the node restarted or stopped meanwhile
                return
            with contextlib.suppress(Exception):  # RpcAborted too: the replay's caller is long gone
                await server.answer(method, data, source, metadata)

        server.spawn(deliver())

    async def carry(self, source: int, destination: int | None) -> None:
        """One message's trip: held while the link is cut, then delayed."""
        while destination is not None and (source, destination) in self.cuts:
            await asyncio.sleep(_POLL_S)
        await asyncio.sleep(self.delay_s())


class SimChannel:
    """grpc.aio.Channel's calls (unary and bidi streams, the only shapes nodes make) over the simulated network."""

    def __init__(self, network: SimNetwork, source: int, address: str) -> None:
        self.network = network
        self.source = source
        self.address = address

    def unary_unary(
        self, method: str, request_serializer: Any = None, response_deserializer: Any = None, **_: Any
    ) -> Callable[..., Any]:
        async def call(request: Any, *, timeout: float | None = None, metadata: Any = None, **__: Any) -> Any:
            try:
                async with asyncio.timeout(timeout):
                    data = request_serializer(request)
                    return await self._unary(method, data, response_deserializer, tuple(metadata or ()))
            except TimeoutError:
                raise rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded") from None

        return call

    async def _unary(self, method: str, data: bytes, deserialize: Any, metadata: tuple[Any, ...]) -> Any:
        network = self.network
        destination = network.node_at(self.address)
        await network.carry(self.source, destination)
        if network.dropped():
            await asyncio.Event().wait()  # lost: no answer until the deadline
        server = network.servers.get(self.address)
        if server is None:
            await asyncio.sleep(REFUSED_AFTER_S)
            raise rpc_error(grpc.StatusCode.UNAVAILABLE, f"nothing listens at {self.address}")
        task = server.spawn(server.answer(method, data, self.source, metadata))
        if network.duplicated():
            network.replay(server, method, data, self.source, destination, metadata)
        try:
            await asyncio.wait({task})
        finally:
            task.cancel()  # the caller gave up (deadline, cancelled): so does the handler, as gRPC's
        answer_data = _outcome(task)
        await network.carry(destination if destination is not None else -1, self.source)
        if network.dropped() or network.answer_lost(method, self.source):
            await asyncio.Event().wait()
        return deserialize(answer_data)

    def stream_stream(
        self, method: str, request_serializer: Any = None, response_deserializer: Any = None, **_: Any
    ) -> Callable[..., SimStreamCall]:
        def open_call(*_args: Any, metadata: Any = None, **__: Any) -> SimStreamCall:
            return SimStreamCall(self, method, request_serializer, response_deserializer, tuple(metadata or ()))

        return open_call

    async def close(self, grace: float | None = None) -> None:
        pass


def _outcome(task: asyncio.Task[Any]) -> Any:
    """A finished handler's answer, or the error its caller sees."""
    if task.cancelled():
        raise rpc_error(grpc.StatusCode.UNAVAILABLE, "the server went away")
    error = task.exception()
    if isinstance(error, RpcAborted):
        raise rpc_error(error.code, error.details)
    if error is not None:
        raise rpc_error(grpc.StatusCode.UNKNOWN, f"handler failed: {error!r}")
    return task.result()


_END = object()


class SimStreamCall:
    """A bidi call: writes reach the handler's request iterator and its answers reach `read`, each in order. The
    server's interceptors choose the handler when the call opens there, so its requests travel serialized."""

    def __init__(
        self, channel: SimChannel, method: str, serialize: Any, deserialize: Any, metadata: tuple[Any, ...] = ()
    ) -> None:
        self._network = channel.network
        self._source = channel.source
        self._destination = channel.network.node_at(channel.address)
        self._serialize = serialize
        self._deserialize = deserialize
        self._requests: asyncio.Queue[Any] = asyncio.Queue()
        self._answers: asyncio.Queue[Any] = asyncio.Queue()
        self._error: grpc.aio.AioRpcError | None = None
        self._task: asyncio.Task[None] | None = None
        self._method = method
        server = channel.network.servers.get(channel.address)
        handler = None if server is None else server.handler(method)
        if server is None or handler is None or handler.stream_stream is None:
            self._error = rpc_error(grpc.StatusCode.UNAVAILABLE, f"nothing serves {method} at {channel.address}")
            return
        self._task = server.spawn(self._serve(server, metadata))
        self._task.add_done_callback(self._server_ended)

    async def _incoming(self, deserialize: Any) -> AsyncIterator[Any]:
        while (data := await self._requests.get()) is not _END:
            yield deserialize(data)

    async def _serve(self, server: SimServer, metadata: tuple[Any, ...]) -> None:
        handler = await server.intercepted(self._method, metadata)
        if handler is None or handler.stream_stream is None:
            raise RpcAborted(grpc.StatusCode.UNIMPLEMENTED, self._method)
        context = _ServicerContext(self._source, metadata)
        answers = handler.stream_stream(self._incoming(handler.request_deserializer), context)
        async for answer in answers:
            data = handler.response_serializer(answer)
            await self._network.carry(self._destination if self._destination is not None else -1, self._source)
            if not self._network.answer_lost(self._method, self._source):
                self._answers.put_nowait(self._deserialize(data))

    def _server_ended(self, task: asyncio.Task[None]) -> None:
        if self._error is None:
            try:
                _outcome(task)
                self._answers.put_nowait(grpc.aio.EOF)
                return
            except grpc.aio.AioRpcError as error:
                self._error = error
        self._answers.put_nowait(_END)

    async def write(self, request: Any) -> None:
        if self._error is not None:
            raise self._error
        data = self._serialize(request)
        await self._network.carry(self._source, self._destination)
        if self._error is not None:
            raise self._error
        self._requests.put_nowait(data)

    async def read(self) -> Any:
        if self._error is not None and self._answers.empty():
            raise self._error
        answer = await self._answers.get()
        if answer is _END:
            self._answers.put_nowait(_END)
            assert self._error is not None
            raise self._error
        return answer

    async def done_writing(self) -> None:
        self._requests.put_nowait(_END)

    def cancel(self) -> bool:
        if self._error is None:
            self._error = rpc_error(grpc.StatusCode.CANCELLED, "cancelled")
        if self._task is not None:
            self._task.cancel()
        self._answers.put_nowait(_END)
        return True

    def done(self) -> bool:
        return self._error is not None

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.OK if self._error is None else self._error.code()
