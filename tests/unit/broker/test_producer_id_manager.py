"""The broker's producer ids come from controller blocks: never one twice, even to callers waiting together for a
block or across a prefetched one, and COORDINATOR_LOAD_IN_PROGRESS when no controller answers."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.broker import producer_id_manager as module
from minikafka.broker.producer_id_manager import ProducerIdManager
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import controller_pb2


class _Controller:
    def __init__(self, block: int, answers: bool = True) -> None:
        self.block = block
        self.answers = answers
        self.next = 0
        self.calls = 0

    async def call(self, method: str, request: object) -> controller_pb2.AllocateProducerIdsResponse | None:
        self.calls += 1
        await asyncio.sleep(0)  # the answer comes back after other callers have asked
        if not self.answers:
            return None
        start, self.next = self.next, self.next + self.block
        return controller_pb2.AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=self.block)


async def test_ids_are_unique_across_blocks_and_concurrent_callers() -> None:
    controller = _Controller(block=10)
    manager = ProducerIdManager(controller, 1, lambda: 5)  # type: ignore[arg-type]
    ids = await asyncio.gather(*(manager.generate() for _ in range(95)))
    ids += [await manager.generate() for _ in range(30)]
    assert sorted(ids) == list(range(len(ids)))  # every id once, no block skipped


async def test_no_controller_is_coordinator_load_in_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "RETRY_BACKOFF_S", 0)
    manager = ProducerIdManager(_Controller(10, answers=False), 1, lambda: 5)  # type: ignore[arg-type]
    with pytest.raises(KafkaError) as raised:
        await manager.generate()
    assert raised.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
