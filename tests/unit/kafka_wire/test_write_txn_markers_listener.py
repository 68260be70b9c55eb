"""WriteTxnMarkers on the Kafka listener: a caller with CLUSTER_ACTION on the cluster has the leader write each
marker asked (and the group coordinator learns of those it writes); any other caller gets
CLUSTER_AUTHORIZATION_FAILED on every partition, and nothing is written."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kio.schema.write_txn_markers.v1 import request as v1
from kio.schema.write_txn_markers.v2 import request as v2

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.broker.kafka_wire.write_txn_markers import WRITE_TXN_MARKERS, entries_of
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.transaction.markers import TxnMarkerEntry, decode_request, encode_request
from minikafka.common.acl import AclOperation
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode


class Leader:
    """A replica manager that writes every marker (or refuses those of `refused`) and remembers them."""

    def __init__(self, refused: dict[TopicPartition, ErrorCode] | None = None) -> None:
        self.written: list[tuple[TopicPartition, EndTxnMarker]] = []
        self.refused = refused or {}

    def write_txn_marker(self, tp: TopicPartition, marker: EndTxnMarker, timeout_ms: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        error = self.refused.get(tp, ErrorCode.NONE)
        if error == ErrorCode.NONE:
            self.written.append((tp, marker))
        future.set_result(ProduceResult(error))
        return future


def _request() -> Request:
    marker = v1.WritableTxnMarker(
        producer_id=7,
        producer_epoch=2,
        transaction_result=False,
        topics=(v1.WritableTxnMarkerTopic(name="payments", partition_indexes=(0, 1)),),
        coordinator_epoch=0,
    )
    return Request(ApiHeader(WRITE_TXN_MARKERS, 1, 5), "admin", v1.WriteTxnMarkersRequest(markers=(marker,)))


def _answer(manager: Leader, allowed: bool, groups: Any = None) -> dict[int, ErrorCode]:
    ctx = SimpleNamespace(
        manager=manager,
        groups=groups,
        allowed_on_cluster=lambda operation: allowed and operation == AclOperation.CLUSTER_ACTION,
    )

    async def run() -> Any:
        return await apis.HANDLERS[WRITE_TXN_MARKERS](ctx, _request())  # type: ignore[arg-type]

    response = asyncio.run(run())
    encode_response(5, response)  # a valid v1 response
    [marker] = response.markers
    assert marker.producer_id == 7
    return {p.partition_index: ErrorCode.of(p.error_code) for t in marker.topics for p in t.partitions}


def test_a_caller_with_cluster_action_has_the_leader_write_the_abort_markers() -> None:
    leader = Leader({TopicPartition("payments", 1): ErrorCode.INVALID_PRODUCER_EPOCH})
    seen: list[TopicPartition] = []
    groups = SimpleNamespace(on_txn_marker=lambda tp, marker: seen.append(tp))
    assert _answer(leader, allowed=True, groups=groups) == {0: ErrorCode.NONE, 1: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert leader.written == [(TopicPartition("payments", 0), EndTxnMarker(7, 2, False, 0))]
    assert seen == [TopicPartition("payments", 0)]


def test_a_caller_without_cluster_action_is_refused_and_nothing_is_written() -> None:
    leader = Leader()
    refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert _answer(leader, allowed=False) == {0: refused, 1: refused}
    assert leader.written == []


def test_v1_and_v2_are_offered() -> None:
    assert api_versions.SUPPORTED[WRITE_TXN_MARKERS] == (1, 2)


def test_a_markers_transaction_version_reaches_the_leader_from_either_listener() -> None:
    """WriteTxnMarkers v2 (Kafka listener) and the brokers' gRPC request both carry each marker's transaction
    version, which the leader checks a marker at the producer's current epoch by."""
    marker = v2.WritableTxnMarker(
        producer_id=7,
        producer_epoch=2,
        transaction_result=True,
        topics=(v2.WritableTxnMarkerTopic(name="payments", partition_indexes=(0,)),),
        coordinator_epoch=0,
        transaction_version=2,
    )
    (wire,) = entries_of(v2.WriteTxnMarkersRequest(markers=(marker,)))
    assert wire.marker == EndTxnMarker(7, 2, True, 0, transaction_version=2)
    (grpc,) = decode_request(encode_request([TxnMarkerEntry(wire.marker, wire.partitions)]))
    assert grpc.marker.transaction_version == 2 and grpc.partitions == [TopicPartition("payments", 0)]
