"""The metadata offset at which a topic was last created, as the coordinator notes it from each new image: a topic
created moves it, a topic deleted or any other record does not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from minikafka.broker.consumer_group.regex_resolution import TopicsVersion
from minikafka.broker.group.new_topics import NewTopics


def image(offset: int, *names: str) -> Any:
    return SimpleNamespace(offset=offset, topics_by_name={name: object() for name in names})


def test_only_a_created_topic_moves_the_new_topics_offset() -> None:
    seen = NewTopics()
    assert seen.version(image(5, "a")) == TopicsVersion(5, 5)  # the first image: every topic is new to it
    assert seen.version(image(9, "a")) == TopicsVersion(9, 5)  # another record
    assert seen.version(image(12, "a", "b")) == TopicsVersion(12, 12)  # b created
    assert seen.version(image(15, "b")) == TopicsVersion(15, 12)  # a deleted
    assert seen.version(image(15, "b", "c")) == TopicsVersion(15, 12)  # the same offset is the same image
    assert seen.version(image(20, "b", "a")) == TopicsVersion(20, 20)  # a created again
