"""The broker's channel to the active controller: tries the voters, follows NOT_CONTROLLER redirects."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import grpc

from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import PeerChannels, connection_failed
from minikafka.common.tls import TlsFiles
from minikafka.pb import controller_pb2_grpc

RETRY_BACKOFF_S = 0.1
NO_CONTROLLER = "no controller answered"


class ControllerClientConfig(Protocol):
    """What the client needs of its node's config: a broker's, or a controller's serving Kafka clients."""

    @property
    def request_timeout_ms(self) -> int: ...

    @property
    def inter_node_tls(self) -> TlsFiles | None: ...

    @property
    def voters(self) -> dict[int, tuple[str, int]]: ...

    @property
    def bootstrap_servers(self) -> list[str]: ...


class ControllerClient:
    def __init__(self, config: ControllerClientConfig) -> None:
        self.timeout_s = min(config.request_timeout_ms / 1000, 2.0)
        self.request_timeout_s = config.request_timeout_ms / 1000  # a forwarded request that gives no timeout
        self._peers = PeerChannels(config.inter_node_tls)
        configured = [f"{host}:{port}" for host, port in config.voters.values()] + config.bootstrap_servers
        self._addresses: Callable[[], Sequence[str]] = lambda: configured
        self._stubs: dict[str, controller_pb2_grpc.ControllerStub] = {}
        self._active: str | None = None

    def follow(self, addresses: Callable[[], Sequence[str]]) -> None:
        """Ask the controllers `addresses()` names at each call (the voter set's endpoints, as the metadata log
        tells them: a controller added later is found where it registered)."""
        self._addresses = addresses

    def _stub(self, address: str) -> controller_pb2_grpc.ControllerStub:
        if address not in self._stubs:
            self._stubs[address] = controller_pb2_grpc.ControllerStub(self._peers.get(address))
        return self._stubs[address]

    def _reconnect(self, address: str) -> None:
        """The next call to `address` resolves its name again on a new channel (a restarted controller's
        container may have a new address)."""
        self._stubs.pop(address, None)
        self._peers.retire(address)

    async def call(
        self, method: str, request: Any, deadline: float | None = None, attempt_timeout_s: float | None = None
    ) -> Any | None:
        """The active controller's answer, or None when no controller answered (the caller retries). Each
        controller is asked at most once, waiting `attempt_timeout_s` (default: the client's) for its answer; one
        that names the active controller sends the request there next. No call outlasts `deadline` (the loop's
        `time()`) by more than a moment."""
        candidates = ([self._active] if self._active else []) + [c for c in self._addresses() if c != self._active]
        asked: set[str] = set()
        loop = asyncio.get_running_loop()
        while candidates:
            address = candidates.pop(0)
            if address in asked:
                continue
            asked.add(address)
            attempt_s = self.timeout_s if attempt_timeout_s is None else attempt_timeout_s
            timeout_s = attempt_s if deadline is None else min(attempt_s, deadline - loop.time())
            if timeout_s <= 0:
                return None  # out of time, not out of controllers: the active one stays known
            try:
                response = await getattr(self._stub(address), method)(request, timeout=timeout_s)
            except grpc.RpcError as error:
                if connection_failed(error):
                    self._reconnect(address)
                continue
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                if response.current_leader.leader_address:
                    self._active = response.current_leader.leader_address
                    candidates.insert(0, self._active)
                continue
            self._active = address
            return response
        self._active = None
        return None

    async def call_within(self, method: str, request: Any, timeout_s: float) -> Any | None:
        """The active controller's answer, asked again while none answers (NOT_CONTROLLER from every controller
        during an election, or none reachable) until `timeout_s` has passed; None if none answered by then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            answer = await self.call(method, request, deadline)
            if answer is not None or loop.time() + RETRY_BACKOFF_S >= deadline:
                return answer
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def call_forwarded(self, method: str, request: Any) -> Any | None:
        """A client's request (one with a `timeout_ms`) forwarded within its own timeout: the active controller's
        answer, or None when none answered in time."""
        timeout_s = request.timeout_ms / 1000 if request.timeout_ms > 0 else self.request_timeout_s
        return await self.call_within(method, request, timeout_s)

    async def forward(self, method: str, request: Any, response_type: type) -> Any:
        """A client's request forwarded as it is: the controller's answer, or REQUEST_TIMED_OUT (retriable) when none
        answered in time."""
        answer = await self.call_forwarded(method, request)
        if answer is None:
            return response_type(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=NO_CONTROLLER)
        return answer

    async def close(self) -> None:
        self._stubs.clear()
        await self._peers.close()
