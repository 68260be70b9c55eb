"""A scenario's create-topic step when the client's retry meets the topic its own lost attempt committed, and what
a wait on the ISR says when its deadline passes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from minikafka.client.admin import PartitionDescription, TopicDescription
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.scenario.steps import StepFailed, Steps


class AdminWhoseRetryFindsTheTopic:
    """CreateTopics answers TOPIC_ALREADY_EXISTS, and the topic is there with `replicas`."""

    def __init__(self, replicas: list[list[int]]) -> None:
        self.replicas = replicas

    def create_topic(self, name: str, **_: object) -> None:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists")

    def describe_topics(self, names: list[str]) -> list[TopicDescription]:
        partitions = [PartitionDescription(i, r[0], 0, 0, r, r) for i, r in enumerate(self.replicas)]
        return [TopicDescription(names[0], "id", partitions)]


def steps_with(admin: AdminWhoseRetryFindsTheTopic) -> Steps:
    steps = Steps.__new__(Steps)  # no cluster: the step talks only to the admin client here
    steps.admin = admin  # type: ignore[assignment]
    steps.cluster = SimpleNamespace(brokers=[], pids={})  # type: ignore[assignment]
    steps.guarded = True
    steps.records = []
    steps._described = {}
    return steps


def test_the_topic_with_the_asked_replicas_counts_as_created() -> None:
    steps = steps_with(AdminWhoseRetryFindsTheTopic([[1, 2]]))
    steps.create_topic("flap-3", [[1, 2]], "the topic is created")
    assert steps.records[-1].ok
    assert "retry found it" in steps.records[-1].observed


def test_a_topic_with_other_replicas_fails_the_step() -> None:
    steps = steps_with(AdminWhoseRetryFindsTheTopic([[2]]))
    with pytest.raises(StepFailed, match="TOPIC_ALREADY_EXISTS"):
        steps.create_topic("flap-3", [[1]], "the topic is created")
    assert not steps.records[-1].ok


class AdminWhoseBrokersLearnTheTopicLate(AdminWhoseRetryFindsTheTopic):
    """The first Metadata answer does not know the topic yet (UNKNOWN_TOPIC_OR_PARTITION)."""

    def __init__(self, replicas: list[list[int]]) -> None:
        super().__init__(replicas)
        self.asked = 0

    def describe_topics(self, names: list[str]) -> list[TopicDescription]:
        self.asked += 1
        if self.asked == 1:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{names[0]}'")
        return super().describe_topics(names)


def test_the_topic_is_asked_for_again_until_the_brokers_know_it() -> None:
    admin = AdminWhoseBrokersLearnTheTopicLate([[1]])
    steps = steps_with(admin)
    steps.create_topic("flap-3", [[1]], "the topic is created")
    assert steps.records[-1].ok and admin.asked == 2


def test_a_wait_on_the_isr_that_times_out_says_what_it_last_saw() -> None:
    steps = steps_with(AdminWhoseRetryFindsTheTopic([[1, 2]]))
    with pytest.raises(StepFailed, match=r"not within its deadline of 0.2 s \(last seen: leader 1, ISR \[1, 2\]"):
        steps.wait_isr("orders", [1, 2, 3], "broker 3 rejoins", deadline_s=0.2)
