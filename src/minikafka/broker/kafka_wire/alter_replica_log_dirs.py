"""AlterReplicaLogDirs: move a replica to another of its broker's log directories. A broker here has one log
directory (log.dirs names a single one), so the only move there is is to where the replica already is, a no-op
answered NONE as Kafka answers it; another path is LOG_DIR_NOT_FOUND, an offline directory KAFKA_STORAGE_ERROR,
and a partition the broker does not host REPLICA_NOT_AVAILABLE (Kafka's answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode

ALTER_REPLICA_LOG_DIRS = 34
VERSIONS = {ALTER_REPLICA_LOG_DIRS: (1, 2)}  # Kafka 4.0's range


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(ALTER_REPLICA_LOG_DIRS, request.header.api_version)
    allowed = ctx.allowed_on_cluster(AclOperation.ALTER)  # Kafka: ALTER on the cluster, else every partition refused
    results: dict[str, list[Any]] = {}
    partition_cls = sibling(cls, "AlterReplicaLogDirPartitionResult")
    for directory in request.body.dirs or ():
        for topic in directory.topics or ():
            for partition in topic.partitions or ():
                code = _answer(ctx, directory.path, TopicPartition(topic.name, partition)) if allowed else None
                error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if code is None else code
                results.setdefault(topic.name, []).append(
                    build(partition_cls, partition_index=partition, error_code=error)
                )
    topic_cls = sibling(cls, "AlterReplicaLogDirTopicResult")
    topics = tuple(build(topic_cls, topic_name=name, partitions=tuple(parts)) for name, parts in results.items())
    return build(cls, throttle_time=0, results=topics)


def _answer(ctx: WireContext, path: str, tp: TopicPartition) -> ErrorCode:
    logs = ctx.manager.logs
    if Path(path).resolve() != logs.log_dir.resolve():
        return ErrorCode.LOG_DIR_NOT_FOUND
    if logs.offline:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if tp not in ctx.manager.replicas:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    return ErrorCode.NONE


HANDLERS = {ALTER_REPLICA_LOG_DIRS: handle}
