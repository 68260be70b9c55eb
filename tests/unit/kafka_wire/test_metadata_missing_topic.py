"""Metadata's answer for a topic it does not have: Kafka's INVALID_TOPIC_EXCEPTION for an illegal name (librdkafka
then fails that topic's records at once, its 0057 checks it), else retriable or unknown."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from minikafka.broker.kafka_wire.metadata import missing_topic_error, requested_topics
from minikafka.common.errors import ErrorCode


@pytest.mark.parametrize("name", ["bad$#!", "", "..", "x" * 250, "with space"])
def test_an_illegal_name_is_an_invalid_topic(name: str) -> None:
    assert missing_topic_error(name, True, {}) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert missing_topic_error(name, False, {}) == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_a_legal_missing_name_is_unknown_once_ready_and_not_being_created() -> None:
    assert missing_topic_error("orders", True, {}) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert missing_topic_error("orders", True, {"orders": object()}) == ErrorCode.LEADER_NOT_AVAILABLE
    assert missing_topic_error("orders", False, {}) == ErrorCode.LEADER_NOT_AVAILABLE
    assert missing_topic_error(None, True, {}) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # asked by id


def test_a_topic_asked_for_by_id_is_answered_by_name_and_an_unknown_id_is_named_unknown() -> None:
    known, unknown = uuid.uuid4(), uuid.uuid4()
    image = SimpleNamespace(topics_by_id={known: SimpleNamespace(name="orders")})
    asked = [
        SimpleNamespace(name=None, topic_id=known),
        SimpleNamespace(name="by-name", topic_id=uuid.UUID(int=0)),
        SimpleNamespace(name=None, topic_id=unknown),
    ]
    requested = requested_topics(image, asked)
    assert requested.names == ["orders", "by-name"]
    assert requested.unknown_ids == [unknown]
