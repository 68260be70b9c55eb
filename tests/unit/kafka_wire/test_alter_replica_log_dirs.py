"""AlterReplicaLogDirs: a replica "moved" to the log directory it is in is a no-op answered NONE, as Kafka answers
it (kafka-python's test_alter_replica_log_dirs); another path is LOG_DIR_NOT_FOUND, an offline directory
KAFKA_STORAGE_ERROR, a partition not hosted here REPLICA_NOT_AVAILABLE."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.alter_replica_log_dirs.v2 import request as v2

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.errors import ErrorCode
from minikafka.storage.log_config import LogConfig

HOSTED = TopicPartition("orders", 0)


def answers(tmp_path: Path, path: Path | str, offline: bool = False) -> dict[str, int]:
    logs = LogManager(tmp_path / "data", lambda _topic: LogConfig())
    logs.get_or_create(HOSTED, uuid.uuid4(), 0)
    if offline:
        logs.failures.mark_offline(logs.log_dir, "test")
    manager = SimpleNamespace(logs=logs, replicas={HOSTED: object()})
    ctx = WireContext(manager, "PLAINTEXT")  # type: ignore[arg-type]
    topic = v2.AlterReplicaLogDirTopic(name="orders", partitions=(0, 5))
    body = v2.AlterReplicaLogDirsRequest(dirs=(v2.AlterReplicaLogDir(path=str(path), topics=(topic,)),))
    response: Any = apis.HANDLERS[34](ctx, Request(ApiHeader(34, 2, 1), "test", body))
    encode_response(1, response)  # every field is one kio can write at this version
    return {
        f"{t.topic_name}-{p.partition_index}": int(p.error_code.value) for t in response.results for p in t.partitions
    }


def test_advertised_versions_are_kafka_4s() -> None:
    assert api_versions.SUPPORTED[34] == (1, 2)


def test_the_replicas_own_directory_is_a_no_op_and_an_unhosted_partition_is_not_available(tmp_path: Path) -> None:
    assert answers(tmp_path, tmp_path / "data") == {
        "orders-0": ErrorCode.NONE,
        "orders-5": ErrorCode.REPLICA_NOT_AVAILABLE,
    }


def test_another_directory_is_not_found(tmp_path: Path) -> None:
    assert set(answers(tmp_path, tmp_path / "elsewhere").values()) == {ErrorCode.LOG_DIR_NOT_FOUND}


def test_an_offline_directory_is_a_storage_error(tmp_path: Path) -> None:
    assert set(answers(tmp_path, tmp_path / "data", offline=True).values()) == {ErrorCode.KAFKA_STORAGE_ERROR}
