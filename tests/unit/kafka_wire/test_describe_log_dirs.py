"""DescribeLogDirs: the broker's one log directory with each partition log's size (all of them for a null topic
list, only those asked for otherwise) and the directory's bytes (v4); an offline directory is
KAFKA_STORAGE_ERROR with no partitions."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.describe_log_dirs.v1 import request as v1
from kio.schema.describe_log_dirs.v4 import request as v4

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig


def log_manager(tmp_path: Path) -> LogManager:
    logs = LogManager(tmp_path / "data", lambda _topic: LogConfig())
    for tp in (TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("audit", 0)):
        log = logs.get_or_create(tp, uuid.uuid4(), 0)
        log.append_as_leader(build_batch([Record(b"v" * 10)]), 1, 0)
    return logs


def answer(logs: LogManager, version: int, body: Any) -> Any:
    ctx = WireContext(SimpleNamespace(logs=logs), "PLAINTEXT")  # type: ignore[arg-type]
    response = apis.HANDLERS[35](ctx, Request(ApiHeader(35, version, 1), "test", body))
    encode_response(1, response)  # every field is one kio can write at this version
    return response


def sizes(response: Any) -> dict[str, int]:
    [result] = response.results
    return {f"{t.name}-{p.partition_index}": p.partition_size for t in result.topics for p in t.partitions}


def test_advertised_versions_are_kafka_4s() -> None:
    assert api_versions.SUPPORTED[35] == (1, 4)


def test_every_partition_log_with_its_size_and_the_directorys_bytes(tmp_path: Path) -> None:
    logs = log_manager(tmp_path)
    response = answer(logs, 4, v4.DescribeLogDirsRequest(topics=None))
    [result] = response.results
    assert int(result.error_code.value) == ErrorCode.NONE and result.log_dir == str((tmp_path / "data").resolve())
    expected = logs.get(TopicPartition("orders", 0)).size_bytes
    assert sizes(response) == {"audit-0": expected, "orders-0": expected, "orders-1": expected} and expected > 0
    assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes


def test_only_the_partitions_asked_for(tmp_path: Path) -> None:
    body = v1.DescribeLogDirsRequest(topics=(v1.DescribableLogDirTopic(topic="orders", partitions=(1, 7)),))
    assert list(sizes(answer(log_manager(tmp_path), 1, body))) == ["orders-1"]


def test_an_offline_directory_is_a_storage_error(tmp_path: Path) -> None:
    logs = log_manager(tmp_path)
    logs.failures.mark_offline(logs.log_dir, "test")
    [result] = answer(logs, 4, v4.DescribeLogDirsRequest(topics=None)).results
    assert int(result.error_code.value) == ErrorCode.KAFKA_STORAGE_ERROR and result.topics == ()
