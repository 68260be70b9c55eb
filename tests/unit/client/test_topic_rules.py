"""Kafka's topic rules the CLI applies before any request: legal names, '.'/'_' collisions, topic config types."""

from __future__ import annotations

import pytest

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.topic import check_collision, validate_name
from minikafka.common.topic_config import validate_topic_configs


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "a/b", "a b", "é"])
def test_illegal_names(name: str) -> None:
    with pytest.raises(KafkaError) as raised:
        validate_name(name)
    assert raised.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("name", ["-starts-with-dash", "a.b", "a_b", "A-9", "a" * 249, "..."])
def test_legal_names(name: str) -> None:
    validate_name(name)


def test_dot_and_underscore_collide() -> None:
    with pytest.raises(KafkaError) as raised:
        check_collision("a_b", ["x", "a.b"])
    assert raised.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "'a.b'" in str(raised.value)
    check_collision("a.b", ["a.b", "ab", "a-b"])  # the same name is TOPIC_ALREADY_EXISTS, the controller's call


@pytest.mark.parametrize(
    "configs",
    [
        {"segment.bytes": "99999999999"},
        {"segment.bytes": "13"},
        {"min.insync.replicas": "0"},
        {"retention.ms": "forever"},
        {"retention.bytes": str(2**63)},
        {"cleanup.policy": "compact,forever"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"no.such.config": "1"},
    ],
)
def test_bad_topic_configs_are_invalid_config_naming_the_key(configs: dict[str, str]) -> None:
    with pytest.raises(KafkaError) as raised:
        validate_topic_configs(configs)
    assert raised.value.code == ErrorCode.INVALID_CONFIG
    assert next(iter(configs)) in str(raised.value)


def test_good_topic_configs() -> None:
    validate_topic_configs(
        {"segment.bytes": "2147483647", "min.insync.replicas": "2", "retention.bytes": str(2**40), "flush.ms": "0"}
    )
