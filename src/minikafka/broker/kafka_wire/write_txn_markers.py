"""WriteTxnMarkers on the Kafka listener (Kafka's KafkaApis.handleWriteTxnMarkersRequest): the partition leader writes
the COMMIT or ABORT markers asked, as the coordinators' own markers (which travel between brokers on gRPC) are.

A client sends it only to abort a hanging transaction (Kafka's Admin.abortTransaction, `minikafka transactions
--abort`), and only with CLUSTER_ACTION on the cluster, as in Kafka: without it every partition is refused
CLUSTER_AUTHORIZATION_FAILED and nothing is written. The log's own checks still apply (a marker of an older
producer epoch is INVALID_PRODUCER_EPOCH, of an older coordinator epoch TRANSACTION_COORDINATOR_FENCED)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.requests.write_txn_markers import (
    MarkerAnswer,
    MarkerPartitionAnswer,
    TxnMarkerEntry,
    handle_write_txn_markers,
)
from minikafka.common.acl import AclOperation
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode

WRITE_TXN_MARKERS = 27
# v0 is gone since Kafka 4.0; v2 carries each marker's transaction version, which the leader checks it by.
VERSIONS = {WRITE_TXN_MARKERS: (1, 2)}
MARKER_TIMEOUT_MS = 30000  # a marker waits this long for the ISR, as Kafka's request.timeout.ms


def entries_of(body: Any) -> list[TxnMarkerEntry]:
    return [
        TxnMarkerEntry(
            EndTxnMarker(
                m.producer_id,
                m.producer_epoch,
                m.transaction_result,
                m.coordinator_epoch,
                int(getattr(m, "transaction_version", 0)),
            ),
            [TopicPartition(t.name, p) for t in m.topics or () for p in t.partition_indexes or ()],
        )
        for m in body.markers or ()
    ]


async def handle(ctx: WireContext, request: Request) -> Any:
    entries = entries_of(request.body)
    if ctx.allowed_on_cluster(AclOperation.CLUSTER_ACTION):
        on_written = ctx.groups.on_txn_marker if ctx.groups is not None else None
        answers = await handle_write_txn_markers(ctx.manager, entries, MARKER_TIMEOUT_MS, on_written)
    else:
        answers = [
            MarkerAnswer(
                e.marker.producer_id,
                [MarkerPartitionAnswer(tp, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for tp in e.partitions],
            )
            for e in entries
        ]
    return _response(response_class(WRITE_TXN_MARKERS, request.header.api_version), answers)


def _response(cls: type, answers: list[MarkerAnswer]) -> Any:
    markers = []
    for answer in answers:
        by_topic: dict[str, list[Any]] = {}
        for line in answer.partitions:
            by_topic.setdefault(line.tp.topic, []).append(
                build(
                    sibling(cls, "WritableTxnMarkerPartitionResult"),
                    partition_index=line.tp.partition,
                    error_code=line.error,
                )
            )
        topics = tuple(
            build(sibling(cls, "WritableTxnMarkerTopicResult"), name=name, partitions=tuple(lines))
            for name, lines in by_topic.items()
        )
        markers.append(build(sibling(cls, "WritableTxnMarkerResult"), producer_id=answer.producer_id, topics=topics))
    return build(cls, markers=tuple(markers))


HANDLERS = {WRITE_TXN_MARKERS: handle}
