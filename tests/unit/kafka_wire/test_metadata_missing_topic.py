"""Metadata's answer for a topic it does not have: Kafka's INVALID_TOPIC_EXCEPTION for an illegal name (librdkafka
then fails that topic's records at once, its 0057 checks it), else retriable or unknown."""

from __future__ import annotations

import pytest

from minikafka.broker.kafka_wire.metadata import missing_topic_error
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
