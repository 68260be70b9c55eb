"""Admin requests a hostile client may send, refused by the controller whatever path asked: deleting or growing an
internal topic (INVALID_TOPIC_EXCEPTION), and one operation of more than Kafka's 10,000 records
(POLICY_VIOLATION, nothing written)."""

from __future__ import annotations

import pytest
from controller_harness import Harness

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.operation_bound import MAX_RECORDS_PER_USER_OP
from minikafka.kraft_controller.control.requests import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)


@pytest.fixture
def started(harness: Harness) -> Harness:
    for broker_id in (1, 2, 3):
        harness.start_broker(broker_id)
    harness.create_topic("__consumer_offsets", partitions=5, rf=3)
    harness.create_topic("t", partitions=1, rf=1)
    return harness


def test_internal_topics_cannot_be_deleted(started: Harness) -> None:
    result = started.commit(started.controller.delete_topics(DeleteTopicsRequest(("__consumer_offsets", "t"))))
    assert [(t.name, t.error_code) for t in result.topics] == [
        ("__consumer_offsets", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("t", ErrorCode.NONE),
    ]
    assert "__consumer_offsets" in started.image.topics_by_name and "t" not in started.image.topics_by_name


def test_internal_topics_cannot_grow(started: Harness) -> None:
    request = CreatePartitionsRequest((CreatePartitionsTopic("__consumer_offsets", 7),), False)
    result = started.commit(started.controller.create_partitions(request))
    expected = [("__consumer_offsets", ErrorCode.INVALID_TOPIC_EXCEPTION)]
    assert [(r.name, r.error_code) for r in result.results] == expected
    assert len(started.image.topics_by_name["__consumer_offsets"].partitions) == 5


@pytest.mark.parametrize("validate_only", [False, True])
def test_one_create_topics_of_more_than_10000_records_is_refused_whole(started: Harness, validate_only: bool) -> None:
    topics = (CreatableTopic("small", 1, 1, (), {}), CreatableTopic("huge", 12_000, 1, (), {}))
    result = started.commit(started.controller.create_topics(CreateTopicsRequest(topics, validate_only)))
    assert [(t.name, t.error_code) for t in result.topics] == [
        ("small", ErrorCode.POLICY_VIOLATION),
        ("huge", ErrorCode.POLICY_VIOLATION),
    ]
    assert "excessively large batch" in result.topics[0].error_message
    assert "small" not in started.image.topics_by_name and "huge" not in started.image.topics_by_name


def test_a_forged_partition_count_is_refused_before_anything_is_allocated(started: Harness) -> None:
    topics = (CreatableTopic("forged", 2**31 - 1, 1, (), {}),)
    result = started.commit(started.controller.create_topics(CreateTopicsRequest(topics, False)))
    assert result.topics[0].error_code == ErrorCode.POLICY_VIOLATION


def test_the_bound_counts_every_topic_of_the_request(started: Harness) -> None:
    # Each topic alone is fine: 1 Topic record + 4,000 Partition records; three of them are not.
    topics = tuple(CreatableTopic(f"m{i}", 4_000, 1, (), {}) for i in range(3))
    result = started.commit(started.controller.create_topics(CreateTopicsRequest(topics, False)))
    assert {t.error_code for t in result.topics} == {ErrorCode.POLICY_VIOLATION}
    exactly = (CreatableTopic("edge", MAX_RECORDS_PER_USER_OP - 1, 1, (), {}),)
    result = started.commit(started.controller.create_topics(CreateTopicsRequest(exactly, False)))
    assert result.topics[0].error_code == ErrorCode.NONE


def test_create_partitions_of_more_than_10000_new_partitions_is_refused_whole(started: Harness) -> None:
    request = CreatePartitionsRequest((CreatePartitionsTopic("t", 12_001),), False)
    result = started.commit(started.controller.create_partitions(request))
    assert [(r.name, r.error_code) for r in result.results] == [("t", ErrorCode.POLICY_VIOLATION)]
    assert len(started.image.topics_by_name["t"].partitions) == 1
