"""The broker's channel to the active controller: tries the voters, follows NOT_CONTROLLER redirects."""

from __future__ import annotations

from typing import Any

import grpc

from minikafka.broker.config import BrokerConfig
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import insecure_channel
from minikafka.pb import controller_pb2_grpc


class ControllerClient:
    def __init__(self, config: BrokerConfig) -> None:
        self.timeout_s = min(config.request_timeout_ms / 1000, 2.0)
        self._tls = config.inter_node_tls
        self._controllers = [f"{host}:{port}" for host, port in config.voters.values()]
        self._stubs: dict[str, controller_pb2_grpc.ControllerStub] = {}
        self._channels: list[grpc.aio.Channel] = []
        self._active: str | None = None

    def _stub(self, address: str) -> controller_pb2_grpc.ControllerStub:
        if address not in self._stubs:
            channel = insecure_channel(address, self._tls)
            self._channels.append(channel)
            self._stubs[address] = controller_pb2_grpc.ControllerStub(channel)
        return self._stubs[address]

    async def call(self, method: str, request: Any) -> Any | None:
        """The active controller's answer, or None when no controller answered (the caller retries)."""
        candidates = ([self._active] if self._active else []) + [c for c in self._controllers if c != self._active]
        for address in candidates:
            try:
                response = await getattr(self._stub(address), method)(request, timeout=self.timeout_s)
            except grpc.RpcError:
                continue
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                if response.current_leader.leader_address:
                    self._active = response.current_leader.leader_address
                continue
            self._active = address
            return response
        self._active = None
        return None

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()
