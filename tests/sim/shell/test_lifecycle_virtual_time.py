"""The real broker lifecycle shell (`LifecycleManager`: registration, heartbeats, self-fencing) on a virtual clock,
against a controller that answers for a simulated minute and then goes silent."""

from __future__ import annotations

import asyncio
from typing import Any

from virtual_loop import run_virtual

from minikafka.broker.config import BrokerConfig
from minikafka.broker.lifecycle_manager import LifecycleManager
from minikafka.common.config import load_config
from minikafka.pb import controller_pb2

BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
    "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "9000",
    "broker.self.fencing.enable": "true",
    "broker.self.fencing.timeout.ms": "18000",
}


class ControllerThatFallsSilent:
    """Registers and unfences the broker; from `silent_from` (the loop's time) no call is answered."""

    def __init__(self, silent_from: float) -> None:
        self.silent_from = silent_from
        self.heartbeats_at: list[float] = []

    async def call(self, method: str, request: Any, attempt_timeout_s: float | None = None) -> Any:
        now = asyncio.get_running_loop().time()
        if now >= self.silent_from:
            await asyncio.sleep(1)  # a call that times out unanswered
            return None
        if method == "BrokerRegistration":
            return controller_pb2.BrokerRegistrationResponse(broker_epoch=100)
        self.heartbeats_at.append(now)
        return controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)

    async def close(self) -> None:
        pass


def test_heartbeats_keep_their_interval_and_silence_self_fences_after_its_timeout_in_simulated_time() -> None:
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        manager = LifecycleManager(load_config(BrokerConfig, BROKER), lambda: 1000)
        controller = manager.controller = ControllerThatFallsSilent(silent_from=60.0)  # type: ignore[assignment]
        manager.start()
        await manager.unfenced.wait()
        seen["unfenced_at"] = loop.time()
        await asyncio.sleep(61 - loop.time())  # the controller has gone silent
        await asyncio.sleep(controller.heartbeats_at[-1] + 17 - loop.time())  # 17 s since its last answer: serving
        seen["serving_before_timeout"] = manager.serving
        while not manager.self_fenced:
            await asyncio.sleep(0.1)
        seen["self_fenced_at"] = loop.time()
        seen["heartbeats_at"] = controller.heartbeats_at
        await manager.stop()

    run_virtual(scenario())
    heartbeats = seen["heartbeats_at"]
    assert seen["unfenced_at"] < 1
    assert seen["serving_before_timeout"]
    assert 29 <= len(heartbeats) <= 31  # one per broker.heartbeat.interval.ms over the simulated minute
    assert all(1.9 <= later - earlier <= 2.1 for earlier, later in zip(heartbeats[1:], heartbeats[2:], strict=False))
    # Self-fenced once broker.self.fencing.timeout.ms passed since the last answer, within one retry.
    assert heartbeats[-1] + 18 <= seen["self_fenced_at"] <= heartbeats[-1] + 18 + 2.5


CLIENT_TIMEOUT_S = 2.0  # ControllerClient's wait for an answer, unless the call names its own


class ControllerMovingLeadershipsSlowly:
    """Answers every heartbeat at once; a want_shutdown one is granted only from `grant_from` (the loop's time) on,
    as a controller moving thousands of leaderships, its brokers replaying the moves, does. From `silent_from` no
    call is answered."""

    def __init__(self, grant_from: float, silent_from: float = float("inf"), busy_s: float = 0.0) -> None:
        self.grant_from = grant_from
        self.silent_from = silent_from
        self.busy_s = busy_s  # from the first want_shutdown on, each heartbeat is answered this late
        self.not_yet = 0

    async def call(self, method: str, request: Any, attempt_timeout_s: float | None = None) -> Any:
        now = asyncio.get_running_loop().time()
        if now >= self.silent_from:
            await asyncio.sleep(1)  # a call that times out unanswered
            return None
        if method == "BrokerRegistration":
            return controller_pb2.BrokerRegistrationResponse(broker_epoch=100)
        if request.want_shutdown and self.busy_s:
            waited = CLIENT_TIMEOUT_S if attempt_timeout_s is None else attempt_timeout_s
            await asyncio.sleep(min(self.busy_s, waited))  # as ControllerClient: an answer later is none
            if self.busy_s > waited:
                return None
            now = asyncio.get_running_loop().time()
        granted = request.want_shutdown and now >= self.grant_from
        self.not_yet += request.want_shutdown and not granted
        return controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=granted, should_shutdown=granted)

    async def close(self) -> None:
        pass


def shut_down(controller: ControllerMovingLeadershipsSlowly) -> dict[str, Any]:
    """The broker's stop as the process makes it: a controlled shutdown with the wait's own bound."""
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        exits: list[float] = []
        manager = LifecycleManager(
            load_config(BrokerConfig, BROKER), lambda: 1000, on_exit=lambda: exits.append(loop.time())
        )
        manager.controller = controller  # type: ignore[assignment]
        manager.start()
        await manager.unfenced.wait()
        seen["asked_at"] = loop.time()
        await manager.controlled_shutdown()
        seen["returned_at"] = loop.time()
        seen["granted"] = manager.shutdown_granted.is_set()
        seen["exits"] = exits
        await manager.stop()

    run_virtual(scenario())
    return seen


def test_a_controlled_shutdown_the_controller_grants_after_several_session_timeouts_completes() -> None:
    # The controller answers "not yet" for 40 simulated seconds (over four session timeouts of 9 s), then lets go.
    controller = ControllerMovingLeadershipsSlowly(grant_from=40.0)
    seen = shut_down(controller)
    assert seen["granted"] and len(seen["exits"]) == 1
    assert seen["returned_at"] >= 40.0 and controller.not_yet >= 15


def test_a_controlled_shutdown_ends_a_session_timeout_after_the_controller_went_silent() -> None:
    # Waiting on while the controller answers is bounded by its silence: silent for a session, it has fenced us.
    controller = ControllerMovingLeadershipsSlowly(grant_from=float("inf"), silent_from=5.0)
    seen = shut_down(controller)
    assert len(seen["exits"]) == 1
    assert seen["returned_at"] - 5.0 <= 9 + 2.5


def test_a_controlled_shutdown_completes_when_the_busy_controller_answers_every_heartbeat_late() -> None:
    # Moving thousands of leaderships keeps the controller's queue busy: each heartbeat is answered 3 s after it
    # was sent, later than the client's usual wait but within Kafka's half session, and the grant comes at 30 s.
    controller = ControllerMovingLeadershipsSlowly(grant_from=30.0, busy_s=3.0)
    seen = shut_down(controller)
    assert seen["granted"] and len(seen["exits"]) == 1
    assert seen["returned_at"] >= 30.0 and controller.not_yet >= 5
