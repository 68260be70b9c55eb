"""gRPC plumbing shared by every process and client: channel/server options and the server factory.

Record batches can be large, so both ends raise gRPC's 4 MiB default message limits (as measured
facts: the limit applies on server and channel alike).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

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


async def start_server(host: str, port: int, registrars: Sequence[Registrar]) -> BoundServer:
    """Create, register and start a grpc.aio server; `port` 0 picks a free port (reported back)."""
    server = grpc.aio.server(options=GRPC_OPTIONS)
    for register in registrars:
        register(server)
    bound_port = server.add_insecure_port(f"{host}:{port}")
    if bound_port == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    await server.start()
    return BoundServer(server, host, bound_port)


def insecure_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=GRPC_OPTIONS)


def sync_channel(address: str) -> grpc.Channel:
    """A blocking channel, for command-line tools that make a few calls."""
    return grpc.insecure_channel(address, options=GRPC_OPTIONS)
