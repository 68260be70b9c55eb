"""CreatePartitions with Kafka's rules: only an increase, the topic's replication factor, one valid manual
assignment per new partition, and new partitions led by an unfenced replica."""

from __future__ import annotations

import pytest
from controller_harness import Harness

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import CreatePartitionsRequest, CreatePartitionsTopic


def _create(harness: Harness, *topics: CreatePartitionsTopic, validate_only: bool = False) -> dict[str, ErrorCode]:
    result = harness.commit(harness.controller.create_partitions(CreatePartitionsRequest(topics, validate_only)))
    return {r.name: r.error_code for r in result.results}


@pytest.fixture
def started(harness: Harness) -> Harness:
    for broker_id in (1, 2, 3):
        harness.start_broker(broker_id)
    harness.create_topic("t", partitions=2, rf=2)
    return harness


def test_new_partitions_keep_the_replication_factor_and_get_leaders(started: Harness) -> None:
    assert _create(started, CreatePartitionsTopic("t", 5)) == {"t": ErrorCode.NONE}
    topic = started.image.topics_by_name["t"]
    assert sorted(topic.partitions) == [0, 1, 2, 3, 4]
    for index in (2, 3, 4):
        partition = topic.partitions[index]
        assert len(partition.replicas) == 2 and partition.leader == partition.isr[0] in partition.replicas


def test_a_manual_assignment_is_used_as_given(started: Harness) -> None:
    assert _create(started, CreatePartitionsTopic("t", 3, ((3, 1),))) == {"t": ErrorCode.NONE}
    assert started.image.topics_by_name["t"].partitions[2].replicas == (3, 1)


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (CreatePartitionsTopic("t", 2), ErrorCode.INVALID_PARTITIONS),
        (CreatePartitionsTopic("t", 1), ErrorCode.INVALID_PARTITIONS),
        (CreatePartitionsTopic("nope", 4), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (CreatePartitionsTopic("t", 4, ((1, 2),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatePartitionsTopic("t", 3, ((1, 2, 3),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatePartitionsTopic("t", 3, ((1, 1),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatePartitionsTopic("t", 3, ((1, 9),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ],
)
def test_kafkas_refusals(started: Harness, topic: CreatePartitionsTopic, error: ErrorCode) -> None:
    before = started.image
    assert _create(started, topic) == {topic.name: error}
    assert started.image.topics_by_name == before.topics_by_name


def test_validate_only_writes_nothing(started: Harness) -> None:
    assert _create(started, CreatePartitionsTopic("t", 4), validate_only=True) == {"t": ErrorCode.NONE}
    assert len(started.image.topics_by_name["t"].partitions) == 2
