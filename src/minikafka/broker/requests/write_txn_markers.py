"""WriteTxnMarkers (Kafka's KafkaApis.handleWriteTxnMarkersRequest): a transaction coordinator has each partition
leader of a transaction write its COMMIT or ABORT marker. Every partition's marker is appended now, in request
order, with acks=all (as Kafka appends markers), and the answer comes once each has its outcome.

Only a coordinator sends it: it travels between brokers on the inter-broker listener, never from a client."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class TxnMarkerEntry:
    marker: EndTxnMarker
    partitions: Sequence[TopicPartition]


@dataclass(frozen=True)
class MarkerPartitionAnswer:
    tp: TopicPartition
    error: ErrorCode


@dataclass(frozen=True)
class MarkerAnswer:
    producer_id: int
    partitions: list[MarkerPartitionAnswer]


MarkerWritten = Callable[[TopicPartition, EndTxnMarker], None]


async def handle_write_txn_markers(
    manager: ReplicaManager,
    entries: Sequence[TxnMarkerEntry],
    timeout_ms: int,
    on_written: MarkerWritten | None = None,
) -> list[MarkerAnswer]:
    """`on_written` learns of each marker the ISR has: the group coordinator makes a transaction's offsets
    visible when its marker lands in __consumer_offsets (Kafka's onTransactionCompleted)."""
    jobs = [
        [(tp, manager.write_txn_marker(tp, entry.marker, timeout_ms)) for tp in entry.partitions] for entry in entries
    ]
    answers = []
    for entry, appends in zip(entries, jobs, strict=True):
        partitions = []
        for tp, job in appends:
            result = await job
            if result.error == ErrorCode.NONE and on_written is not None:
                on_written(tp, entry.marker)
            partitions.append(MarkerPartitionAnswer(tp, result.error))
        answers.append(MarkerAnswer(entry.marker.producer_id, partitions))
    return answers
