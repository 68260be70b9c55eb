"""The transaction coordinator's marker channel (Kafka's TransactionMarkerChannelManager): once a transaction is
decided, each partition's leader is asked to write its COMMIT or ABORT marker, this broker's own partitions
directly and other leaders' over the inter-broker gRPC listener (WriteTxnMarkers). A partition is retried until
its leader writes the marker; only a partition whose topic is gone, or whose leader refuses the marker as stale
(the producer or the coordinator was fenced since), is given up, as in Kafka."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable

import grpc
import structlog

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.requests.write_txn_markers import (
    MarkerAnswer,
    MarkerPartitionAnswer,
    MarkerWritten,
    TxnMarkerEntry,
    handle_write_txn_markers,
)
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import PeerChannels
from minikafka.pb import broker_pb2, broker_pb2_grpc

RETRY_BACKOFF_S = 0.1  # Kafka's markers wait for the next send cycle; a leader being elected takes about this
CALL_TIMEOUT_S = 10.0
# A leader answers these for good: the marker can never be written there.
GIVE_UP = frozenset(
    {ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.PRODUCER_FENCED}
)


def encode_request(entries: list[TxnMarkerEntry]) -> broker_pb2.WriteTxnMarkersRequest:
    request = broker_pb2.WriteTxnMarkersRequest()
    for entry in entries:
        marker = request.markers.add(
            producer_id=entry.marker.producer_id,
            producer_epoch=entry.marker.producer_epoch,
            transaction_result=entry.marker.commit,
            coordinator_epoch=entry.marker.coordinator_epoch,
            transaction_version=entry.marker.transaction_version,
        )
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in entry.partitions:
            by_topic[tp.topic].append(tp.partition)
        for name, partitions in by_topic.items():
            marker.topics.add(name=name, partition_indexes=partitions)
    return request


def decode_request(request: broker_pb2.WriteTxnMarkersRequest) -> list[TxnMarkerEntry]:
    return [
        TxnMarkerEntry(
            EndTxnMarker(
                m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch, m.transaction_version
            ),
            [TopicPartition(t.name, p) for t in m.topics for p in t.partition_indexes],
        )
        for m in request.markers
    ]


def encode_response(answers: list[MarkerAnswer]) -> broker_pb2.WriteTxnMarkersResponse:
    response = broker_pb2.WriteTxnMarkersResponse()
    for answer in answers:
        marker = response.markers.add(producer_id=answer.producer_id)
        by_topic: dict[str, list[MarkerPartitionAnswer]] = defaultdict(list)
        for partition in answer.partitions:
            by_topic[partition.tp.topic].append(partition)
        for name, partitions in by_topic.items():
            topic = marker.topics.add(name=name)
            for p in partitions:
                topic.partitions.add(partition_index=p.tp.partition, error_code=int(p.error))
    return response


def decode_response(response: broker_pb2.WriteTxnMarkersResponse) -> dict[TopicPartition, ErrorCode]:
    return {
        TopicPartition(t.name, p.partition_index): ErrorCode.of(p.error_code)
        for m in response.markers
        for t in m.topics
        for p in t.partitions
    }


class MarkerChannel:
    def __init__(self, manager: ReplicaManager, on_written: MarkerWritten | None, timeout_ms: int) -> None:
        self.manager = manager
        self.on_written = on_written
        self.timeout_ms = timeout_ms
        self._channels = PeerChannels(manager.config.inter_node_tls)
        self._log = structlog.get_logger()

    async def close(self) -> None:
        await self._channels.close()

    async def write(
        self, marker: EndTxnMarker, partitions: frozenset[TopicPartitionKey], still_wanted: Callable[[], bool]
    ) -> bool:
        """Have every partition's leader write `marker`; True once each did or was given up, False when
        `still_wanted` turned false first (this broker stopped coordinating the transaction)."""
        remaining = {TopicPartition(p.topic, p.partition) for p in partitions}
        while remaining and still_wanted():
            by_leader = self._by_leader(remaining, marker)
            outcomes = await asyncio.gather(
                *(self._write_to(leader, marker, tps) for leader, tps in by_leader.items() if leader >= 0)
            )
            for outcome in outcomes:
                for tp, error in outcome.items():
                    if error == ErrorCode.NONE or error in GIVE_UP:
                        remaining.discard(tp)
                    if error in GIVE_UP:
                        self._given_up(tp, marker, error.name)
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S)
        return not remaining

    def _by_leader(self, remaining: set[TopicPartition], marker: EndTxnMarker) -> dict[int, list[TopicPartition]]:
        image = self.manager.metadata.image
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        # In partition order, not the set's (which follows string hashing): the requests go out in the same order in
        # every process, as a simulated run's replay needs.
        for tp in sorted(remaining, key=lambda tp: (tp.topic, tp.partition)):
            topic = image.topics_by_name.get(tp.topic)
            registration = topic.partitions.get(tp.partition) if topic is not None else None
            if registration is None:
                remaining.discard(tp)  # the topic was deleted: no marker is needed any more
                self._given_up(tp, marker, "topic deleted")
                continue
            by_leader[registration.leader].append(tp)
        return by_leader

    def _given_up(self, tp: TopicPartition, marker: EndTxnMarker, reason: str) -> None:
        self._log.warning(
            "transaction_marker_given_up",
            partition=str(tp),
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            result="commit" if marker.commit else "abort",
            reason=reason,
        )

    async def _write_to(
        self, leader: int, marker: EndTxnMarker, tps: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        entries = [TxnMarkerEntry(marker, tps)]
        if leader == self.manager.config.node_id:
            answers = await handle_write_txn_markers(self.manager, entries, self.timeout_ms, self.on_written)
            return {p.tp: p.error for a in answers for p in a.partitions}
        address = self.manager.leader_address(leader)
        if address is None:
            return {}
        stub = broker_pb2_grpc.BrokerStub(self._channels.get(address))
        try:
            response = await stub.WriteTxnMarkers(encode_request(entries), timeout=CALL_TIMEOUT_S)
        except grpc.RpcError:
            self._channels.retire(address)
            return {}
        return decode_response(response)
