"""AdminClient.wait_for_topic and ready_topic: a just-created topic is unknown to the brokers for a moment, then
leaderless."""

from __future__ import annotations

import pytest

from minikafka.client.admin import AdminClient, PartitionDescription, TopicDescription
from minikafka.common.errors import ErrorCode, KafkaError


def partition(leader: int) -> PartitionDescription:
    return PartitionDescription(
        partition=0, leader=leader, leader_epoch=0, partition_epoch=0, replicas=[1, 2], isr=[1, 2]
    )


def scripted(admin: AdminClient, answers: list, asked: list | None = None) -> None:  # noqa: ANN001
    def describe_topics(names, servers=()):  # noqa: ANN001, ANN202
        if asked is not None:
            asked.append(list(servers))
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, KafkaError):
            raise answer
        return [answer]

    admin.describe_topics = describe_topics  # type: ignore[method-assign]


def test_waits_through_unknown_topic_and_missing_leaders() -> None:
    admin = AdminClient()
    unknown = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "topic 't'")
    ready = TopicDescription("t", "id", [partition(1)])
    scripted(admin, [unknown, TopicDescription("t", "id", [partition(-1)]), ready])
    assert admin.wait_for_topic("t", timeout_s=5, poll_s=0) == ready


def test_other_errors_are_raised_and_the_deadline_holds() -> None:
    admin = AdminClient()
    scripted(admin, [KafkaError(ErrorCode.INVALID_REQUEST, "t")])
    with pytest.raises(KafkaError) as raised:
        admin.wait_for_topic("t", timeout_s=5, poll_s=0)
    assert raised.value.code == ErrorCode.INVALID_REQUEST
    scripted(admin, [TopicDescription("t", "id", [partition(-1)])])
    with pytest.raises(KafkaError) as raised:
        admin.wait_for_topic("t", timeout_s=0, poll_s=0)
    assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT


def test_ready_topic_asks_the_named_broker_and_is_none_until_every_partition_has_a_leader() -> None:
    admin = AdminClient()
    asked: list[list[str]] = []
    leaderless = TopicDescription("t", "id", [partition(1), partition(-1)])
    scripted(admin, [KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "t"), leaderless], asked)
    assert admin.ready_topic("t", servers=["127.0.0.1:9"]) is None
    assert admin.ready_topic("t", servers=["127.0.0.1:9"]) is None
    assert asked == [["127.0.0.1:9"], ["127.0.0.1:9"]]
    ready = TopicDescription("t", "id", [partition(1), partition(2)])
    scripted(admin, [ready])
    assert admin.ready_topic("t") == ready
