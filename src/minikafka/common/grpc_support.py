"""gRPC plumbing shared by every process and client: channel/server options and the server factory.

Record batches can be large, so both ends raise gRPC's 4 MiB default message limits (as measured
facts: the limit applies on server and channel alike).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from minikafka.common.errors import ListenerBindError
from minikafka.common.node_environment import simulated_node
from minikafka.common.tls import ServerSecurity, TlsFiles

MAX_MESSAGE_BYTES = 64 * 1024 * 1024

GRPC_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Loopback clusters restart nodes often: reconnect quickly instead of backing off for up to 2 minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)

Registrar = Callable[[grpc.aio.Server], None]


@dataclass(frozen=True)
class BoundServer:
    server: grpc.aio.Server
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


async def start_server(
    host: str,
    port: int,
    registrars: Sequence[Registrar],
    security: ServerSecurity | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    max_receive_bytes: int = MAX_MESSAGE_BYTES,
) -> BoundServer:
    """Create, register and start a grpc.aio server; `port` 0 picks a free port (reported back). With `security`
    it serves TLS only. `max_receive_bytes`: the largest message it reads (gRPC receives a message whole before
    any handler sees it, so this bounds what one call can make it hold). A simulated node serves on its network,
    through the same interceptors."""
    node = simulated_node()
    if node is not None:
        return BoundServer(node.network.serve(node.node_id, host, port, registrars, interceptors), host, port)
    _refuse_outside_simulated_nodes(f"serve {host}:{port}")
    receive = "grpc.max_receive_message_length"
    options = (*(o for o in GRPC_OPTIONS if o[0] != receive), (receive, min(max_receive_bytes, MAX_MESSAGE_BYTES)))
    server = grpc.aio.server(options=options, interceptors=list(interceptors))
    for register in registrars:
        register(server)
    in_use = OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
    try:  # grpcio answers a port it cannot bind with 0 or, in newer releases, a RuntimeError
        if security is None:
            bound_port = server.add_insecure_port(f"{host}:{port}")
        else:
            credentials = security.tls.server_credentials(security.require_client_auth)
            bound_port = server.add_secure_port(f"{host}:{port}", credentials)
    except RuntimeError:
        bound_port = 0
    if bound_port == 0:
        raise ListenerBindError(f"{host}:{port}", in_use)
    await server.start()
    return BoundServer(server, host, bound_port)


def insecure_channel(
    address: str, tls: TlsFiles | None = None, interceptors: Sequence[grpc.aio.ClientInterceptor] = ()
) -> grpc.aio.Channel:
    """A channel to `address` (over TLS with `tls`); in a node of a host-mode run, filtered by the run's network
    cuts; in a simulated node, a channel of its simulated network."""
    node = simulated_node()
    if node is not None:
        return node.network.channel(node.node_id, address)
    _refuse_outside_simulated_nodes(f"connect to {address}")
    chain = list(interceptors) or None
    if tls is None:
        channel = grpc.aio.insecure_channel(address, options=GRPC_OPTIONS, interceptors=chain)
    else:
        channel = grpc.aio.secure_channel(address, tls.channel_credentials(), options=GRPC_OPTIONS, interceptors=chain)
    link = link_filter_from_environment(address)
    return channel if link is None else FilteredChannel(channel, link)  # type: ignore[return-value]


def _refuse_outside_simulated_nodes(action: str) -> None:
    """On a simulation's loop (one with a virtual `wall_time`), code running as no simulated node would reach the
    real network, answered on real time: a replay would then differ. Refused, so such a call is found at once."""
    if hasattr(asyncio._get_running_loop(), "wall_time"):  # noqa: SLF001 - None off the loop
        raise RuntimeError(f"cannot {action}: on a simulation's loop, outside any simulated node")


# Failures that say the peer could not be reached (or never answered), as opposed to an answer refusing the call.
_CONNECTION_FAILURES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
_RETIRED_CHANNEL_GRACE_S = 1.0


def connection_failed(error: grpc.RpcError) -> bool:
    """Whether a failed call says its peer was unreachable or silent (a reason to connect to it anew)."""
    code = error.code() if callable(getattr(error, "code", None)) else None
    return code in _CONNECTION_FAILURES


class PeerChannels:
    """One channel per peer address, made anew after a call to that peer failed to connect or got no answer.

    A new channel resolves the peer's name again: a restarted container may come back at a new address, and a
    kept channel would keep dialling the old one until gRPC's minimum time between resolutions (30 s) passed, or
    keep waiting on a connection to an address that is gone.
    """

    def __init__(self, tls: TlsFiles | None = None) -> None:
        self._tls = tls
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._retiring: set[asyncio.Task[None]] = set()

    def get(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = insecure_channel(address, self._tls)
        return channel

    def retire(self, address: str) -> None:
        """Drop the peer's channel: the next `get` makes a new one. Calls still on the old one get a moment to
        end before it closes."""
        channel = self._channels.pop(address, None)
        if channel is None:
            return
        task = asyncio.get_running_loop().create_task(channel.close(_RETIRED_CHANNEL_GRACE_S))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()
        # Only when some are left: a fetcher's coroutine closed by the garbage collector after its loop ended runs
        # this with no loop, and gather asks for one even with nothing to wait on.
        if self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)


def sync_channel(address: str, tls: TlsFiles | None = None) -> grpc.Channel:
    """A blocking channel (over TLS with `tls`), for command-line tools that make a few calls."""
    if tls is None:
        return grpc.insecure_channel(address, options=GRPC_OPTIONS)
    return grpc.secure_channel(address, tls.channel_credentials(), options=GRPC_OPTIONS)


# ---- the in-process link filter (a run's network cuts when the kernel cannot drop packets) ----

CUTS_ENV = "MINIKAFKA_NETWORK_CUTS"
NODE_ID_ENV = "MINIKAFKA_NODE_ID"
_POLL_S = 0.05
RECHECK_S = 0.05  # how often a node looks at the cuts file again


class LinkFilter:
    """Whether this node's calls to an address are cut, from the run's cuts file (re-read when it changes).

    A cut call behaves as a dropped packet does: it neither fails nor proceeds; it hangs until the link heals
    (then goes on, as TCP retransmits) or its deadline passes (DEADLINE_EXCEEDED).
    """

    def __init__(self, path: Path, node_id: int, address: str, recheck_s: float = RECHECK_S) -> None:
        self._recheck_s = recheck_s
        self._path = path
        self._node_id = node_id
        self._address = address
        self._stamp: int | None = None
        self._cut = False
        self._checked_at = -recheck_s

    def is_cut(self) -> bool:
        """Looked up at most every RECHECK_S: the stat costs more than a fetch's Python on the replication path
        (acks=all fell 5-10% with a stat per stream message), and a cut may take that long to bite."""
        now = time.monotonic()
        if now - self._checked_at < self._recheck_s:
            return self._cut
        self._checked_at = now
        try:
            stamp = self._path.stat().st_mtime_ns
        except FileNotFoundError:
            self._cut = False
            return False
        if stamp != self._stamp:
            self._stamp = stamp
            self._cut = self._read_cut()
        return self._cut

    def _read_cut(self) -> bool:
        try:
            document = json.loads(self._path.read_text())
        except (OSError, ValueError):
            return self._cut  # a file being replaced: keep the last answer until the next change
        peer = document.get("nodes", {}).get(self._address)
        if peer is None:
            return False
        return any(_drops(cut, self._node_id, peer) for cut in document.get("active", []))

    async def wait_open(self, deadline: float | None, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Return once the link is not cut; raise DEADLINE_EXCEEDED at `deadline` (loop time), CANCELLED when
        `cancelled()` says the call was given up."""
        loop = asyncio.get_running_loop()
        while self.is_cut():
            if cancelled():
                raise _rpc_error(grpc.StatusCode.CANCELLED, "call cancelled while the link was cut")
            if deadline is not None and loop.time() >= deadline:
                raise _rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer: the link is cut")
            await asyncio.sleep(_POLL_S)


def _drops(cut: dict[str, Any], source: int, destination: int) -> bool:
    if source in cut["from"] and destination in cut["to"]:
        return True
    return not cut["one_way"] and source in cut["to"] and destination in cut["from"]


def _rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


def link_filter_from_environment(address: str) -> LinkFilter | None:
    """The filter a node's launcher asked for (host-mode runs), or None for clients and kernel-mode nodes."""
    path, node_id = os.environ.get(CUTS_ENV), os.environ.get(NODE_ID_ENV)
    if not path or not node_id:
        return None
    return LinkFilter(Path(path), int(node_id), address)


class _FilteredUnaryUnary:
    def __init__(self, inner: Any, link: LinkFilter) -> None:
        self._inner = inner
        self._link = link

    def __call__(self, request: Any, *, timeout: float | None = None, **kwargs: Any) -> Any:
        return self._call(request, timeout, kwargs)

    async def _call(self, request: Any, timeout: float | None, kwargs: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        await self._link.wait_open(deadline)  # the request is lost while cut
        remaining = None if deadline is None else max(deadline - loop.time(), 0.001)
        response = await self._inner(request, timeout=remaining, **kwargs)
        await self._link.wait_open(deadline)  # so is the answer
        return response


class _FilteredStreamCall:
    """A bidi call whose writes and reads wait while the link is cut; `cancel()` ends a wait, as it does gRPC's."""

    def __init__(self, inner: Any, link: LinkFilter) -> None:
        self._inner = inner
        self._link = link
        self._cancelled = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def cancel(self) -> bool:
        self._cancelled = True
        return self._inner.cancel()

    async def write(self, request: Any) -> None:
        if self._link.is_cut():
            await self._link.wait_open(None, lambda: self._cancelled)
        await self._inner.write(request)

    async def read(self) -> Any:
        response = await self._inner.read()
        if self._link.is_cut():
            await self._link.wait_open(None, lambda: self._cancelled)
        return response


class _FilteredStreamStream:
    def __init__(self, inner: Any, link: LinkFilter) -> None:
        self._inner = inner
        self._link = link

    def __call__(self, *args: Any, **kwargs: Any) -> _FilteredStreamCall:
        return _FilteredStreamCall(self._inner(*args, **kwargs), self._link)


class FilteredChannel:
    """A channel whose unary and bidi calls go through a LinkFilter (the only call shapes nodes make)."""

    def __init__(self, inner: grpc.aio.Channel, link: LinkFilter) -> None:
        self._inner = inner
        self._link = link

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def unary_unary(self, *args: Any, **kwargs: Any) -> _FilteredUnaryUnary:
        return _FilteredUnaryUnary(self._inner.unary_unary(*args, **kwargs), self._link)

    def stream_stream(self, *args: Any, **kwargs: Any) -> _FilteredStreamStream:
        return _FilteredStreamStream(self._inner.stream_stream(*args, **kwargs), self._link)


Guard = Callable[[str, Callable[..., Any]], Callable[..., Any]]


def guarded_handler(
    handler: grpc.RpcMethodHandler[Any, Any], method: str, guard_unary: Guard, guard_stream: Guard
) -> grpc.RpcMethodHandler[Any, Any] | None:
    """A server interceptor's handler: the method's behaviour wrapped by the guard of its kind (unary-unary or
    stream-stream, the only kinds the services have); None for any other kind, which the interceptor decides on."""
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            guard_unary(method, handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(
            guard_stream(method, handler.stream_stream),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return None


class FirstSightings:
    """Which refusals an interceptor has logged, so each distinct one is logged once. Bounded: when full it forgets
    them all, and each is then logged again once."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._seen: set[tuple[str, ...]] = set()

    def first(self, key: tuple[str, ...]) -> bool:
        """True the first time `key` is seen (since the last forgetting): log it now."""
        if key in self._seen:
            return False
        if len(self._seen) >= self.limit:
            self._seen.clear()
        self._seen.add(key)
        return True
