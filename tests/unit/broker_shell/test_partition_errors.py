"""Requests for a partition index outside an existing topic get UNKNOWN_TOPIC_OR_PARTITION (not retriable), as
Kafka's getPartitionOrError; only a partition that exists but is not led here answers NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch

TOPIC_ID = uuid.uuid4()


def manager_with_topic(partitions: int) -> ReplicaManager:
    topic = SimpleNamespace(name="orders", topic_id=TOPIC_ID, partitions=dict.fromkeys(range(partitions)))
    image = SimpleNamespace(
        topics_by_name={"orders": topic},
        partition=lambda topic_id, index: object() if topic_id == TOPIC_ID and index in topic.partitions else None,
    )
    metadata = SimpleNamespace(image=image)
    logs = SimpleNamespace(unopened={})
    return ReplicaManager(SimpleNamespace(node_id=0), logs, metadata, None, lambda: 10, lambda: True)  # type: ignore[arg-type]


@pytest.mark.parametrize("index", [-1, 3, 99, 2**31 - 1])
async def test_a_partition_outside_the_topic_is_unknown(index: int) -> None:
    manager = manager_with_topic(3)
    tp = TopicPartition("orders", index)
    assert manager.not_hosted_error(tp) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    answer = manager.produce(tp, build_batch([Record(b"v")]), -1, 1000)
    assert answer.result().error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert manager.follower_fetch(tp, 1, 11, 0, 0, -1, 1000).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_an_existing_partition_led_elsewhere_is_not_leader_and_an_unknown_topic_is_unknown() -> None:
    manager = manager_with_topic(3)
    assert manager.not_hosted_error(TopicPartition("orders", 2)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert manager.not_hosted_error(TopicPartition("nope", 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_a_partition_whose_files_could_not_be_opened_is_a_storage_error() -> None:
    manager = manager_with_topic(3)
    tp = TopicPartition("orders", 1)
    manager.logs.unopened[tp] = TOPIC_ID  # out of file descriptors when it was to be opened
    assert manager.not_hosted_error(tp) == ErrorCode.KAFKA_STORAGE_ERROR
    assert manager.produce(tp, build_batch([Record(b"v")]), 1, 1000).result().error == ErrorCode.KAFKA_STORAGE_ERROR


def test_a_broker_that_refuses_fetches_does_not_shrink_isrs_for_them(tmp_path) -> None:  # noqa: ANN001
    """While a self-fenced broker refuses its followers' fetches, their lag is its own doing: no shrink."""
    from test_produce_wakes_followers import leading_manager

    manager = leading_manager(tmp_path)
    serving = [False]
    manager.serving = lambda: serving[0]
    proposals: list[object] = []
    manager.alter_partition.send = lambda target, proposal: proposals.append(proposal)  # type: ignore[method-assign]
    manager.metadata_broker_epochs = lambda: {0: 10, 1: 11, 2: 12}  # type: ignore[method-assign]
    manager.shrink_lagging_isrs()
    assert proposals == []
    serving[0] = True
    manager.shrink_lagging_isrs()
    assert len(proposals) == 1  # the followers never fetched within the lag time: shrunk once serving
