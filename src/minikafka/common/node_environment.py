"""Where a node's shell reaches the network, the disk and its stop signal: its own process's (gRPC, the file system,
SIGTERM) unless a simulation runs it in one process with other nodes. Then the context the node's tasks run in
carries the simulated ones, so the shipped shells run unchanged; production never sets it."""

from __future__ import annotations

import asyncio
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol


class SimulatedNetwork(Protocol):
    def channel(self, source: int, address: str) -> Any:
        """A channel from node `source` to `address`, with the calls grpc.aio's channels make."""

    def serve(self, node_id: int, host: str, port: int, registrars: Any, interceptors: Any = ()) -> Any:
        """Serve the registrars' services at host:port as node `node_id`, each call through the interceptors as
        grpc.aio's server runs them; a server with `stop(grace)`."""

    def listen(self, node_id: int, host: str, port: int, accept: Any) -> Any:
        """Accept byte-stream connections (a Kafka listener) at host:port as node `node_id`: `accept(reader,
        writer)` serves each; a listener with `close()`."""

    async def open_stream(self, source: int, address: str) -> Any:
        """A byte-stream connection from node `source` to `address`: asyncio's (reader, writer)."""


class SimulatedDisk(Protocol):
    def opened(self, file: Any) -> None:
        """A file of this node was opened (a power loss cuts it back to what was fsynced)."""

    def check_sync(self) -> None:
        """Raise OSError when the disk cannot make writes durable (the node crashed or the disk failed)."""


@dataclass
class SimulatedNode:
    node_id: int
    network: SimulatedNetwork
    disk: SimulatedDisk
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: weakref.WeakSet[asyncio.Task[Any]] = field(default_factory=weakref.WeakSet)  # what a crash ends
    parts: dict[str, Any] = field(default_factory=dict)  # what the process shows its simulation (`expose`)
    ended: bool = False  # crashed: a task its leftover callbacks create is cancelled at once


_CURRENT: ContextVar[SimulatedNode | None] = ContextVar("minikafka_simulated_node", default=None)


def simulated_node() -> SimulatedNode | None:
    """The simulated node this code runs as; None in a real process."""
    return _CURRENT.get()


def simulated_node_of(context: Any) -> SimulatedNode | None:
    """The simulated node a `contextvars.Context` runs as."""
    return context.get(_CURRENT)


def expose(**parts: Any) -> None:
    """A process shows its parts to the simulation running it, which checks invariants on them; nothing in a real
    process."""
    node = _CURRENT.get()
    if node is not None:
        node.parts.update(parts)


def enter_simulated_node(node: SimulatedNode) -> None:
    """Run the rest of the current context (and every task it creates) as `node`."""
    _CURRENT.set(node)
