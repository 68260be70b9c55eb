"""The JSON files of `leader-election --path-to-json-file` and `reassign-partitions --reassignment-json-file`, in
Kafka's formats; bad ones are one-line errors."""

from __future__ import annotations

import pytest

from minikafka.client.leader_election_command import partitions_from_json
from minikafka.client.reassign_partitions_command import parse_reassignment
from minikafka.common.cli_support import CliError


def test_kafka_formats_are_read() -> None:
    assert partitions_from_json(
        '{"partitions": [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 2}]}', "f"
    ) == [
        ("t", 0),
        ("u", 2),
    ]
    plan = '{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]}'
    assert parse_reassignment(plan, "f") == [("t", 0, [1, 2, 4])]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}',
            "duplicate partitions t-0",
        ),
        ('{"partitions": [{"topic": "t"}]}', "expected"),
        ("not json", "expected"),
    ],
)
def test_bad_election_files(text: str, message: str) -> None:
    with pytest.raises(CliError, match=message) as error:
        partitions_from_json(text, "f")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version": 1, "partitions": []}', "no partitions"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]},'
            ' {"topic": "t", "partition": 0, "replicas": [2]}]}',
            "more than once: t-0",
        ),
        ('{"partitions": [{"topic": "t", "partition": 0}]}', "expected"),
    ],
)
def test_bad_reassignment_files(text: str, message: str) -> None:
    with pytest.raises(CliError, match=message) as error:
        parse_reassignment(text, "f")
    assert "\n" not in str(error.value)
