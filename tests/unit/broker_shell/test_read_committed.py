"""read_committed through the request layer, on both front ends: a Fetch with isolation level 1 reads below the
last stable offset and names the aborted transactions its records overlap; ListOffsets(LATEST) answers the LSO;
WriteTxnMarkers writes the markers that move it, with acks=all."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from test_fetch_sessions_served import FOLLOWER_EPOCH, LEADER_EPOCH, leader_of_two_partitions

from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.kafka_wire import fetch as wire_fetch
from minikafka.broker.kafka_wire import list_offsets as wire_list_offsets
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.requests.write_txn_markers import TxnMarkerEntry, handle_write_txn_markers
from minikafka.broker.service import BrokerService
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode
from minikafka.common.fetch_response_wire import decode_fetch_response, encode_fetch_response
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch
from minikafka.pb import broker_pb2

FRONT_ENDS = ("grpc", "kafka")
TP = TopicPartition("orders", 0)
A, B = 9000, 9001


def replicated(manager: ReplicaManager) -> None:
    end = manager.replicas[TP].log.log_end_offset
    for follower in (1, 2):
        manager.follower_fetch(TP, follower, FOLLOWER_EPOCH, LEADER_EPOCH, end, LEADER_EPOCH, 1 << 20)


def transactional(manager: ReplicaManager, pid: int, seq: int) -> None:
    batch = build_batch(
        [Record(b"%d-%d" % (pid, seq)), Record(b"%d-%d" % (pid, seq + 1))],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        attributes=TRANSACTIONAL_FLAG,
    )
    result = manager.produce(TP, batch, 1, 30000).result()
    assert result.error == ErrorCode.NONE


async def end_txn(manager: ReplicaManager, pid: int, commit: bool) -> ErrorCode:
    entry = TxnMarkerEntry(EndTxnMarker(pid, 0, commit, 0), [TP])
    task = asyncio.ensure_future(handle_write_txn_markers(manager, [entry], 30000))
    await asyncio.sleep(0)  # the marker is appended when the handler starts; acks=all waits for the followers
    replicated(manager)
    [answer] = await task
    [partition] = answer.partitions
    return partition.error


async def scenario(tmp_path: Path) -> ReplicaManager:
    """offset 0-1: A (aborted), 2-3: B (open), 4: A's ABORT marker, 5-6: plain records."""
    manager = leader_of_two_partitions(tmp_path)
    transactional(manager, A, 0)
    transactional(manager, B, 0)
    assert await end_txn(manager, A, commit=False) == ErrorCode.NONE
    manager.produce(TP, build_batch([Record(b"p1"), Record(b"p2")]), 1, 30000)
    replicated(manager)
    return manager


async def fetch(manager: ReplicaManager, front_end: str, isolation: int) -> tuple[int, int, int, object]:
    """(high watermark, last stable offset, bytes of records, aborted [(pid, first offset)] or None)"""
    if front_end == "grpc":
        request = broker_pb2.FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation)
        request.topics.add(topic="orders").partitions.add(partition=0, fetch_offset=0, current_leader_epoch=-1)
        service = BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))
        answer = decode_fetch_response(encode_fetch_response(await service.Fetch(request, None)))
        [(_, p, records)] = list(answer.partitions())
        aborted = [(t.producer_id, t.first_offset) for t in p.aborted_transactions] if isolation else None
        return p.high_watermark, p.last_stable_offset, len(records), aborted
    body = fetch_v12.FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=(
            fetch_v12.FetchTopic(
                topic="orders",
                partitions=(fetch_v12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),),
            ),
        ),
        forgotten_topics_data=(),
    )
    response = await wire_fetch.handle(WireContext(manager, "PLAINTEXT"), Request(ApiHeader(1, 12, 1), "t", body))
    [p] = response.responses[0].partitions
    aborted = (
        None if p.aborted_transactions is None else [(t.producer_id, t.first_offset) for t in p.aborted_transactions]
    )
    return p.high_watermark, p.last_stable_offset, len(p.records or b""), aborted


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_read_committed_stops_at_the_open_transaction_and_names_the_aborted_one(
    tmp_path: Path, front_end: str
) -> None:
    manager = await scenario(tmp_path)
    log = manager.replicas[TP].log
    hwm, lso, committed_bytes, aborted = await fetch(manager, front_end, isolation=1)
    assert (hwm, lso) == (7, 2)
    assert committed_bytes == len(log.read(0, 1 << 20, max_offset=2))  # A's batch only: B's is past the LSO
    assert aborted == [(A, 0)]
    uncommitted = await fetch(manager, front_end, isolation=0)
    assert uncommitted[:2] == (7, 2) and uncommitted[2] == len(log.read(0, 1 << 20, max_offset=7))
    assert uncommitted[3] is None
    # B commits: everything is stable.
    assert await end_txn(manager, B, commit=True) == ErrorCode.NONE
    hwm, lso, committed_bytes, aborted = await fetch(manager, front_end, isolation=1)
    assert (hwm, lso, aborted) == (8, 8, [(A, 0)])
    assert committed_bytes == len(log.read(0, 1 << 20, max_offset=8))


async def list_latest(manager: ReplicaManager, front_end: str, isolation: int) -> int:
    if front_end == "grpc":
        request = broker_pb2.ListOffsetsRequest(isolation_level=isolation)
        request.topics.add(name="orders").partitions.add(partition_index=0, current_leader_epoch=-1, timestamp=-1)
        response = await BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1)).ListOffsets(request, None)
        return int(response.topics[0].partitions[0].offset)
    body = list_offsets_v7.ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=(
            list_offsets_v7.ListOffsetsTopic(
                name="orders", partitions=(list_offsets_v7.ListOffsetsPartition(partition_index=0, timestamp=-1),)
            ),
        ),
    )
    response = wire_list_offsets.handle(WireContext(manager, "PLAINTEXT"), Request(ApiHeader(2, 7, 1), "t", body))
    return int(response.topics[0].partitions[0].offset)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_list_offsets_latest_is_the_lso_for_read_committed(tmp_path: Path, front_end: str) -> None:
    manager = await scenario(tmp_path)
    assert await list_latest(manager, front_end, isolation=0) == 7
    assert await list_latest(manager, front_end, isolation=1) == 2


async def test_a_marker_for_a_partition_not_led_here_is_refused(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    entry = TxnMarkerEntry(EndTxnMarker(A, 0, True, 0), [TopicPartition("orders", 9)])
    [answer] = await handle_write_txn_markers(manager, [entry], 30000)
    assert [p.error for p in answer.partitions] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


async def test_a_marker_from_an_older_producer_epoch_is_refused(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    assert await end_txn(manager, A, commit=True) == ErrorCode.NONE
    stale = TxnMarkerEntry(EndTxnMarker(A, -1, False, 0), [TP])
    [answer] = await handle_write_txn_markers(manager, [stale], 30000)
    assert [p.error for p in answer.partitions] == [ErrorCode.INVALID_PRODUCER_EPOCH]
