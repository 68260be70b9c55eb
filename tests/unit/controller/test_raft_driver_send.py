"""The Raft driver tells the core of every request that got no answer: whatever way its call fails or hangs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.kraft_controller.raft.messages import BeginQuorumEpochRequest, RaftRequest

DEADLINE_S = 10.0


class FakeStub:
    """Every Raft call of this stub behaves as `behaviour` (awaited with the call's arguments)."""

    def __init__(self, behaviour: Callable[..., Any]) -> None:
        self.behaviour = behaviour

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return self.behaviour


async def never_answers(message: object, timeout: float) -> object:
    await asyncio.Event().wait()  # ignores its timeout, as a hung stream write would
    raise AssertionError("unreachable")


async def breaks(message: object, timeout: float) -> object:
    raise ValueError("not a gRPC error")


@pytest.mark.parametrize("behaviour", [never_answers, breaks])
async def test_a_call_that_hangs_or_breaks_is_reported_to_the_core(
    tmp_path: Path, behaviour: Callable[..., Any]
) -> None:
    driver = RaftDriver(1, {1: "127.0.0.1:1", 2: "127.0.0.1:1"}, tmp_path, RaftConfig(request_timeout_ms=50), "test")
    driver._stub = lambda node_id: FakeStub(behaviour)  # type: ignore[method-assign,assignment]
    failures: list[tuple[int, RaftRequest]] = []
    handle_failure = driver.core.handle_failure

    def record(destination: int, request: RaftRequest, now_ms: int) -> list[Any]:
        failures.append((destination, request))
        return handle_failure(destination, request, now_ms)

    driver.core.handle_failure = record  # type: ignore[method-assign]
    request = BeginQuorumEpochRequest(1, 1, "test")
    sent = asyncio.create_task(driver._send(2, request))
    await asyncio.wait_for(sent, DEADLINE_S)
    assert failures == [(2, request)]
    driver.file_log.close()
