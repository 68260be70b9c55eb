"""Produce: every partition's batches go to the replica manager in request order (the same path as the gRPC
front end); acks=0 gets no response at all, as in Kafka."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from minikafka.broker.kafka_wire.api_versions import PRODUCE
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import answered
from minikafka.common.errors import ErrorCode


def handle(ctx: WireContext, request: Request) -> Awaitable[Any | None]:
    """Append now, answer later: the appends of pipelined requests happen in the order they arrived."""
    body = request.body
    timeout_ms = int(body.timeout.total_seconds() * 1000) or 30000
    work: list[tuple[TopicPartition, asyncio.Future[ProduceResult]]] = []
    for topic in body.topic_data or ():
        for data in topic.partition_data or ():
            tp = TopicPartition(topic.name, data.index)
            if body.acks not in (0, 1, -1):
                job = answered(ProduceResult(ErrorCode.INVALID_REQUIRED_ACKS, message=f"acks {body.acks}"))
            else:
                job = ctx.manager.produce(tp, bytes(data.records or b""), body.acks, timeout_ms)
            work.append((tp, job))
    return _answer(ctx, request, work)


async def _answer(
    ctx: WireContext, request: Request, work: list[tuple[TopicPartition, asyncio.Future[ProduceResult]]]
) -> Any | None:
    results = [(tp, await job) for tp, job in work]
    if request.body.acks == 0:
        return None
    cls = response_class(PRODUCE, request.header.api_version)
    by_topic: dict[str, list[Any]] = {}
    for tp, result in results:
        by_topic.setdefault(tp.topic, []).append(_partition(ctx, cls, tp, result))
    topic_entry = sibling(cls, "TopicProduceResponse")
    topics = tuple(build(topic_entry, name=name, partition_responses=tuple(parts)) for name, parts in by_topic.items())
    return build(cls, responses=topics, throttle_time=0)


def _partition(ctx: WireContext, cls: type, tp: TopicPartition, result: ProduceResult) -> Any:
    replica = ctx.manager.replicas.get(tp)
    ok = result.error == ErrorCode.NONE
    return build(
        sibling(cls, "PartitionProduceResponse"),
        index=tp.partition,
        error_code=result.error,
        base_offset=result.base_offset if ok else -1,
        log_append_time=None,
        log_start_offset=replica.log.log_start_offset if replica is not None else -1,
        record_errors=(),
        error_message=None if ok else result.message or None,
    )
