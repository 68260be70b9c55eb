"""The lifecycle shell against a scripted controller: it keeps heartbeating unless it asked to shut down, ends the
process when it stops, and re-registers on STALE_BROKER_EPOCH; the self-fencing keys and their check."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.lifecycle_manager import LifecycleManager
from minikafka.common.config import ConfigError, load_config
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
    "broker.heartbeat.interval.ms": "10",
    "broker.session.timeout.ms": "1000",
}


class ScriptedController:
    """Answers registrations with the next epoch and heartbeats from `answer(request)`; records what it got."""

    def __init__(self, answer: Callable[[Any], controller_pb2.BrokerHeartbeatResponse]) -> None:
        self.answer = answer
        self.registrations: list[Any] = []
        self.heartbeats: list[Any] = []

    async def call(self, method: str, request: Any, attempt_timeout_s: float | None = None) -> Any:
        if method == "BrokerRegistration":
            self.registrations.append(request)
            return controller_pb2.BrokerRegistrationResponse(broker_epoch=100 * len(self.registrations))
        self.heartbeats.append(request)
        return self.answer(request)

    async def close(self) -> None:
        pass


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while asyncio.get_running_loop().time() < deadline:
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


def manager_with(answer: Callable[[Any], controller_pb2.BrokerHeartbeatResponse]) -> tuple[LifecycleManager, list]:  # type: ignore[type-arg]
    exits: list[bool] = []
    manager = LifecycleManager(load_config(BrokerConfig, BROKER), lambda: 1000, on_exit=lambda: exits.append(True))
    manager.controller = ScriptedController(answer)  # type: ignore[assignment]
    return manager, exits


async def test_a_should_shutdown_the_broker_did_not_ask_for_leaves_it_heartbeating_and_unfenced_again() -> None:
    # Someone else's want_shutdown heartbeat: the controller's next answer to us says should_shutdown (and fenced).
    answers = iter([controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=True, should_shutdown=True)])

    def answer(request: Any) -> controller_pb2.BrokerHeartbeatResponse:
        return next(answers, controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False))

    manager, exits = manager_with(answer)
    controller = manager.controller
    manager.start()
    try:
        await until(lambda: len(controller.heartbeats) >= 5 and manager.serving, "heartbeats go on, unfenced")  # type: ignore[attr-defined]
        assert not exits and not manager.shutdown_granted.is_set()
    finally:
        await manager.stop()


async def test_a_stale_broker_epoch_makes_the_broker_register_again_with_the_same_incarnation() -> None:
    def answer(request: Any) -> controller_pb2.BrokerHeartbeatResponse:
        if request.broker_epoch == 100:  # the first registration: lost by the controller
            return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        return controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)

    manager, exits = manager_with(answer)
    controller = manager.controller
    manager.start()
    try:
        await until(lambda: manager.serving, "registered again and unfenced")
        assert manager.broker_epoch == 200
        assert [r.incarnation_id for r in controller.registrations] == [manager.incarnation_id] * 2  # type: ignore[attr-defined]
        assert not exits
    finally:
        await manager.stop()


async def test_a_granted_controlled_shutdown_stops_heartbeating_and_ends_the_process() -> None:
    def answer(request: Any) -> controller_pb2.BrokerHeartbeatResponse:
        return controller_pb2.BrokerHeartbeatResponse(
            is_caught_up=True, is_fenced=request.want_shutdown, should_shutdown=request.want_shutdown
        )

    manager, exits = manager_with(answer)
    controller = manager.controller
    manager.start()
    try:
        await until(lambda: manager.serving, "unfenced")
        await manager.controlled_shutdown(timeout_s=10)
        assert exits == [True] and not manager.serving
        sent = len(controller.heartbeats)  # type: ignore[attr-defined]
        await until(lambda: manager._task is not None and manager._task.done(), "the heartbeat loop ended")
        assert len(controller.heartbeats) == sent  # type: ignore[attr-defined]
    finally:
        await manager.stop()


async def test_a_request_failing_unexpectedly_is_retried_not_the_end_of_the_heartbeats() -> None:
    failures = [RuntimeError("answer we cannot read")]

    def answer(request: Any) -> controller_pb2.BrokerHeartbeatResponse:
        if failures:
            raise failures.pop()
        return controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)

    manager, exits = manager_with(answer)
    controller = manager.controller
    manager.start()
    try:
        await until(lambda: manager.serving and len(controller.heartbeats) >= 3, "heartbeats go on, unfenced")  # type: ignore[attr-defined]
        assert not failures and not exits
    finally:
        await manager.stop()


def test_self_fencing_is_off_by_default_and_its_timeout_must_exceed_the_session_timeout() -> None:
    config = load_config(BrokerConfig, BROKER)
    assert not config.self_fencing_enable and config.self_fencing_timeout_ms > 9000
    enabled = {**BROKER, "broker.self.fencing.enable": "true"}
    assert load_config(BrokerConfig, {**enabled, "broker.self.fencing.timeout.ms": "1001"}).self_fencing_enable
    with pytest.raises(ConfigError) as error:
        load_config(BrokerConfig, {**enabled, "broker.self.fencing.timeout.ms": "1000"})
    assert "broker.self.fencing.timeout.ms" in str(error.value)
    assert "must be greater than broker.session.timeout.ms (1000)" in str(error.value)


async def test_offline_log_dirs_the_controller_never_acknowledges_end_in_a_warning_not_an_error() -> None:
    # The controller keeps answering "not shutting down": the wait times out, and the caller must get control back
    # (it then stops the broker) rather than an exception.
    def answer(request: Any) -> controller_pb2.BrokerHeartbeatResponse:
        return controller_pb2.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)

    manager, _ = manager_with(answer)
    manager.start()
    try:
        await until(lambda: manager.serving, "unfenced")
        await manager.report_offline_log_dirs(("/tmp/unused",), timeout_s=0.05)
        assert not manager.shutdown_granted.is_set()
    finally:
        await manager.stop()
