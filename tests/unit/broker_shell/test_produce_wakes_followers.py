"""Parked follower fetches are woken by a produce: after an acks 0/1 answer is out (one loop turn later, as Kafka
completes delayed fetches after sending the produce response), at once for acks=all (its answer waits for them)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_leader
from minikafka.broker.replica_manager import Replica, ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

TP = TopicPartition("orders", 0)


def leading_manager(tmp_path: Path) -> ReplicaManager:
    config = SimpleNamespace(node_id=0)
    manager = ReplicaManager(config, None, None, None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    metadata = PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 1, 1)
    role = make_leader("orders-0", 0, 10, metadata, 0, 0, PartitionConfig(2, 30000), 0).state
    log = PartitionLog.open(tmp_path / "orders-0", LogConfig(), 0)
    manager.replicas[TP] = Replica(TP, uuid.uuid4(), log, role, ProducePurgatory("orders-0"))
    return manager


@pytest.mark.parametrize("acks", [0, 1])
async def test_acks_0_and_1_answer_before_the_followers_are_woken(tmp_path: Path, acks: int) -> None:
    manager = leading_manager(tmp_path)
    parked = asyncio.ensure_future(manager.wait_for_change(True, 5))
    await asyncio.sleep(0)
    answer = manager.produce(TP, build_batch([Record(b"v")]), acks, 30000)
    assert answer.done() and answer.result().error == ErrorCode.NONE
    await asyncio.sleep(0)  # the turn in which the answer is written: only now are the followers woken ...
    assert not parked.done()
    await asyncio.sleep(0)  # ... so their fetches resume a turn later
    assert parked.done() and parked.result() is True


async def test_acks_all_wakes_the_followers_at_once(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    parked = asyncio.ensure_future(manager.wait_for_change(True, 5))
    await asyncio.sleep(0)
    answer = manager.produce(TP, build_batch([Record(b"v")]), -1, 30000)
    assert not answer.done()  # waits for the followers
    await asyncio.sleep(0)  # woken by the produce itself: the fetch resumes in the very next turn
    assert parked.done() and parked.result() is True
    manager.replicas[TP].produces.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
