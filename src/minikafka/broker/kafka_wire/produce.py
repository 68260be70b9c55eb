"""Produce: decoded into the request layer's ProduceRequest (`broker.requests.produce`, the gRPC front end's path
too) and its answer encoded; acks=0 gets no response at all, as in Kafka."""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from typing import Any

from minikafka.broker.kafka_wire.api_versions import PRODUCE
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, has_field, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.requests.produce import (
    ProducePartition,
    ProducePartitionAnswer,
    ProduceRequest,
    by_topic,
    handle_produce,
    produce_refusals,
)
from minikafka.common.errors import ErrorCode

# Produce v12 is the transaction.version 2 producer's: it sends no AddPartitionsToTxn, the leader adds the partition.
ADD_PARTITIONS_VERSION = 12


def handle(ctx: WireContext, request: Request) -> Awaitable[Any | None]:
    """Append now, answer later: the appends of pipelined requests happen in the order they arrived."""
    body = request.body
    decoded = ProduceRequest(
        body.acks,
        int(body.timeout.total_seconds() * 1000),
        [
            ProducePartition(TopicPartition(topic.name, data.index), bytes(data.records or b""))
            for topic in body.topic_data or ()
            for data in topic.partition_data or ()
        ],
        body.transactional_id,
        add_partitions=body.transactional_id is not None and request.header.api_version >= ADD_PARTITIONS_VERSION,
    )
    cls = response_class(PRODUCE, request.header.api_version)
    refused = produce_refusals(ctx.manager, ctx.caller, decoded, getattr(body, "transactional_id", None))
    return handle_produce(ctx.manager, decoded, functools.partial(_response, cls, body.acks), ctx.verifier, refused)


def _response(cls: type, acks: int, answers: list[ProducePartitionAnswer]) -> Any | None:
    if acks == 0:
        return None
    topic_entry = sibling(cls, "TopicProduceResponse")
    topics = tuple(
        build(topic_entry, name=name, partition_responses=tuple(_partition(cls, answer) for answer in answers))
        for name, answers in by_topic(answers).items()
    )
    return build(cls, responses=topics, throttle_time=0)


def _partition(cls: type, answer: ProducePartitionAnswer) -> Any:
    ok = answer.error == ErrorCode.NONE
    return build(
        sibling(cls, "PartitionProduceResponse"),
        index=answer.tp.partition,
        error_code=answer.error,
        base_offset=answer.base_offset,
        log_append_time=answer.log_append_time_ms,
        log_start_offset=answer.log_start_offset,
        record_errors=_record_errors(cls, answer),
        error_message=None if ok else answer.message or None,
    )


def _record_errors(cls: type, answer: ProducePartitionAnswer) -> tuple[Any, ...]:
    """The records a Produce refused, by index in the batch (v8 on; older versions have only the error code)."""
    partition_entry = sibling(cls, "PartitionProduceResponse")
    if not answer.record_errors or not has_field(partition_entry, "record_errors"):
        return ()
    entry = sibling(cls, "BatchIndexAndErrorMessage")
    return tuple(
        build(entry, batch_index=error.batch_index, batch_index_error_message=error.message)
        for error in answer.record_errors
    )
