"""DescribeLogDirs: this broker's log directory (one: log.dirs names a single directory here), each partition log
in it with its size, and the directory's total and usable bytes (v4); an offline directory is answered
KAFKA_STORAGE_ERROR with no partitions, as Kafka does."""

from __future__ import annotations

import shutil
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode

DESCRIBE_LOG_DIRS = 35
VERSIONS = {DESCRIBE_LOG_DIRS: (1, 4)}  # Kafka 4.0's range


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_LOG_DIRS, request.header.api_version)
    if not ctx.allowed_on_cluster(AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return build(cls, throttle_time=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=())
    logs = ctx.manager.logs
    result_cls = sibling(cls, "DescribeLogDirsResult")
    directory = str(logs.log_dir.resolve())
    if logs.offline:
        result = build(result_cls, error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=directory, topics=())
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, results=(result,))
    wanted = _wanted(request.body.topics)
    topics: dict[str, list[Any]] = {}
    partition_cls = sibling(cls, "DescribeLogDirsPartition")
    for tp, log in sorted(logs.logs.items(), key=lambda item: (item[0].topic, item[0].partition)):
        if wanted is not None and tp not in wanted:
            continue
        # Kafka's getLogEndOffsetLag of a current (not a future) log
        lag = max(log.high_watermark - log.log_end_offset, 0)
        values = {"partition_index": tp.partition, "partition_size": log.size_bytes, "offset_lag": lag}
        topics.setdefault(tp.topic, []).append(build(partition_cls, is_future_key=False, **values))
    topic_cls = sibling(cls, "DescribeLogDirsTopic")
    try:
        usage = shutil.disk_usage(logs.log_dir)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    result = build(
        result_cls,
        error_code=ErrorCode.NONE,
        log_dir=directory,
        topics=tuple(build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in topics.items()),
        total_bytes=total,
        usable_bytes=usable,
    )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, results=(result,))


def _wanted(topics: Any) -> set[TopicPartition] | None:
    """None: every partition (a null topic list)."""
    if topics is None:
        return None
    return {TopicPartition(t.topic, p) for t in topics for p in t.partitions}


HANDLERS = {DESCRIBE_LOG_DIRS: handle}
