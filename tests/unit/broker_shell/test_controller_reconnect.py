"""After a call to a controller fails to connect, the broker's next call to it dials on a new channel, which resolves
the controller's name again: a restarted controller's container may come back at a new address, and a kept channel
re-resolves only after gRPC's 30 s minimum between resolutions."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from minikafka.broker.controller_client import ControllerClient
from minikafka.pb import controller_pb2


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens here once the probe closes


def _count_channels(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    dialled: list[str] = []
    real = grpc.aio.insecure_channel

    def counting(target: str, *args: Any, **kwargs: Any) -> grpc.aio.Channel:
        dialled.append(target)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(grpc.aio, "insecure_channel", counting)
    return dialled


def test_a_failed_connection_is_dialled_anew_on_a_new_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    dialled = _count_channels(monkeypatch)
    address = f"127.0.0.1:{_closed_port()}"
    voters = {101: tuple(address.split(":"))}
    config = SimpleNamespace(request_timeout_ms=2000, inter_node_tls=None, voters=voters, bootstrap_servers=[])

    async def twice() -> list[Any]:
        controllers = ControllerClient(config)  # type: ignore[arg-type]
        try:
            request = controller_pb2.BrokerHeartbeatRequest(broker_id=1)
            return [await controllers.call("BrokerHeartbeat", request) for _ in range(2)]
        finally:
            await controllers.close()

    assert asyncio.run(twice()) == [None, None]  # nobody answered either call
    assert dialled == [address, address]
