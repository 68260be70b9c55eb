"""`consume`'s options as kafka-console-consumer takes them, and the read_end line that ends a --json read."""

from __future__ import annotations

import pytest

from minikafka.client.consume_command import ConsumeOptions, consumer_config, parse_offset, start_offset
from minikafka.client.consumer import EARLIEST, LATEST, ReadEnd
from minikafka.common.cli_support import CliError


@pytest.mark.parametrize(
    ("text", "offset"), [("earliest", EARLIEST), ("latest", LATEST), ("-2", EARLIEST), ("-1", LATEST), ("7", 7)]
)
def test_offsets_kafka_accepts(text: str, offset: int) -> None:
    assert parse_offset(text) == offset


@pytest.mark.parametrize("text", ["-5", "soon", "1.5"])
def test_any_other_offset_is_a_one_line_error(text: str) -> None:
    with pytest.raises(CliError, match=f"INVALID_REQUEST: the provided offset value '{text}' is incorrect"):
        parse_offset(text)


def test_offset_needs_a_partition() -> None:
    with pytest.raises(CliError, match="partition is required when offset is specified"):
        start_offset(ConsumeOptions("t", offset="5"))
    assert start_offset(ConsumeOptions("t", partition=1, offset="5")) == 5
    assert start_offset(ConsumeOptions("t", from_beginning=True)) == EARLIEST
    assert start_offset(ConsumeOptions("t")) == LATEST


def test_consumer_properties_by_their_kafka_names() -> None:
    config = consumer_config(["default.api.timeout.ms=5000", "retry.backoff.ms=50"])
    assert (config.default_api_timeout_ms, config.retry_backoff_ms) == (5000, 50)
    assert consumer_config([]).default_api_timeout_ms == 60000  # Kafka's default
    with pytest.raises(CliError, match="INVALID_CONFIG"):
        consumer_config(["session.timeout.ms=1"])
    with pytest.raises(CliError, match="INVALID_CONFIG"):
        consumer_config(["default.api.timeout.ms=soon"])


def test_a_read_reached_its_end_only_at_the_high_watermark_without_an_error() -> None:
    assert ReadEnd("t", 0, 0, 10, 10, None).reached
    assert not ReadEnd("t", 0, 0, 9, 10, None).reached
    assert not ReadEnd("t", 0, 0, 10, 10, "NOT_LEADER_OR_FOLLOWER").reached
    assert not ReadEnd("t", 0, None, None, None, "LEADER_NOT_AVAILABLE").reached
    assert ReadEnd("t", 1, 0, 4, 4, None).to_json() == {
        "type": "read_end",
        "topic": "t",
        "partition": 1,
        "start_offset": 0,
        "position": 4,
        "high_watermark": 4,
        "reached": True,
        "error": None,
        "log_end": None,
        "isolation_level": "read_uncommitted",
    }
    # The whole log was read only when the leader confirmed its log end at the position.
    assert ReadEnd("t", 0, 0, 10, 10, None, log_end=10).complete
    assert not ReadEnd("t", 0, 0, 10, 10, None).complete
    assert not ReadEnd("t", 0, 0, 10, 10, None, log_end=12).complete
