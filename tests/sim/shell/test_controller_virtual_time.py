"""The real controller shell (`RaftDriver` over its on-disk log, `QuorumController`, the gRPC servicer called
in-process) on a virtual clock: a single voter elects itself, registers and unfences a broker, and fences it once
its heartbeats stop for broker.session.timeout.ms, all in simulated seconds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog.testing
from virtual_loop import run_virtual

from minikafka.common.config import load_config
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.process import attach_controller, raft_driver
from minikafka.pb import controller_pb2

BROKER_ID = 5


async def until(condition: Callable[[], bool], poll_s: float = 0.05) -> None:
    while not condition():
        await asyncio.sleep(poll_s)


def controller_config(data_dir: Path) -> ControllerConfig:
    return load_config(
        ControllerConfig,
        {
            "node.id": "1",
            "process.roles": "controller",
            "listeners": "PLAINTEXT://127.0.0.1:1",
            "controller.quorum.voters": "1@127.0.0.1:1",
            "log.dirs": str(data_dir),
            "broker.session.timeout.ms": "9000",
        },
    )


def run_scenario(data_dir: Path, seed: int) -> dict[str, Any]:
    """Elect, register, heartbeat for 20 simulated seconds, fall silent until fenced; what was seen, with every
    event logged, in order."""
    config = controller_config(data_dir)
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        driver = raft_driver(config)
        service = attach_controller(config, driver)
        controller = service.controller
        driver.start()
        controller.start()
        await until(lambda: controller.active)
        seen["active_at"] = loop.time()

        def fenced() -> bool:
            return controller.read(lambda: controller.state.image.brokers[BROKER_ID].fenced)

        registration = controller_pb2.BrokerRegistrationRequest(broker_id=BROKER_ID, incarnation_id="i" * 22)
        registration.listeners.add(name="PLAINTEXT", host="127.0.0.1", port=1)
        epoch = (await service.BrokerRegistration(registration, None)).broker_epoch
        for _ in range(10):  # a heartbeat every 2 simulated seconds, caught up: unfenced
            heartbeat = controller_pb2.BrokerHeartbeatRequest(
                broker_id=BROKER_ID, broker_epoch=epoch, current_metadata_offset=driver.core.high_watermark
            )
            await service.BrokerHeartbeat(heartbeat, None)
            await asyncio.sleep(2)
        seen["fenced_while_heartbeating"] = fenced()
        last_heartbeat = loop.time() - 2
        await until(fenced)
        seen["silent_s"] = loop.time() - last_heartbeat
        await controller.stop()
        await driver.stop()

    with structlog.testing.capture_logs() as events:
        run_virtual(scenario(), seed=seed)
    seen["events"] = events
    return seen


def test_a_broker_that_stops_heartbeating_is_fenced_after_the_session_timeout_in_simulated_time(
    tmp_path: Path,
) -> None:
    seen = run_scenario(tmp_path, seed=1)
    assert seen["active_at"] < 10
    assert seen["fenced_while_heartbeating"] is False
    assert 9 <= seen["silent_s"] <= 10


def test_the_same_seed_is_the_same_run(tmp_path: Path) -> None:
    """Election timeouts come from the loop's seeded random: one seed replays event for event, another differs."""
    first = run_scenario(tmp_path / "first", seed=1)
    again = run_scenario(tmp_path / "again", seed=1)
    other = run_scenario(tmp_path / "other", seed=2)
    assert len(first["events"]) > 10
    assert first["events"] == again["events"] and first["active_at"] == again["active_at"]
    assert other["active_at"] != first["active_at"]
