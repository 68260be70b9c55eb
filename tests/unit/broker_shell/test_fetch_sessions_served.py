"""The leader's Fetch with KIP-227 sessions, through BrokerService and a real ReplicaManager and logs: a full fetch
opens a session, incremental fetches answer only partitions with news, session errors are top-level, consumers
stay sessionless, and a woken re-read does not count as a second fetch in the follower's state."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from types import SimpleNamespace

import grpc
from immutables import Map

from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.fetcher import fetch_stream
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_leader
from minikafka.broker.replica_manager import Replica, ReplicaManager
from minikafka.broker.service import BrokerService
from minikafka.common.errors import ErrorCode
from minikafka.common.fetch_response_wire import (
    SPLICE_FROM_BYTES,
    DecodedFetchResponse,
    decode_fetch_response,
    encode_fetch_response,
)
from minikafka.common.record_batch import Record, build_batch
from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage, TopicImage
from minikafka.kraft_controller.metadata.records import BrokerStatus
from minikafka.pb import broker_pb2
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

TOPIC_ID = uuid.uuid4()
FOLLOWER = 1
FOLLOWER_EPOCH = 10
LEADER_EPOCH = 1


def leader_of_two_partitions(tmp_path: Path) -> ReplicaManager:
    brokers = Map({b: BrokerRegistration(b, "x", FOLLOWER_EPOCH, (), "", BrokerStatus.UNFENCED) for b in (0, 1, 2)})
    topic = TopicImage("orders", TOPIC_ID)
    image = MetadataImage(brokers=brokers, topics_by_name=Map({"orders": topic}), topics_by_id=Map({TOPIC_ID: topic}))
    config = SimpleNamespace(node_id=0)
    manager = ReplicaManager(config, None, SimpleNamespace(image=image), None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    for partition in (0, 1):
        tp = TopicPartition("orders", partition)
        metadata = PartitionMetadata((0, 1, 2), (0, 1, 2), 0, LEADER_EPOCH, 1)
        role = make_leader(str(tp), 0, FOLLOWER_EPOCH, metadata, 0, 0, PartitionConfig(2, 30000), 0).state
        log = PartitionLog.open(tmp_path / str(tp), LogConfig(), 0)
        manager.replicas[tp] = Replica(tp, TOPIC_ID, log, role, ProducePurgatory(str(tp)))
    return manager


def fetch(offsets: dict[int, int], session_id: int, epoch: int | None, replica: bool = True) -> broker_pb2.FetchRequest:
    request = broker_pb2.FetchRequest(max_wait_ms=0, min_bytes=1, session_id=session_id)
    if epoch is not None:
        request.session_epoch = epoch
    if replica:
        request.replica_state.replica_id, request.replica_state.replica_epoch = FOLLOWER, FOLLOWER_EPOCH
    if offsets:
        topic = request.topics.add(topic_id=TOPIC_ID.bytes)
        for partition, offset in offsets.items():
            line = topic.partitions.add(partition=partition, fetch_offset=offset, current_leader_epoch=LEADER_EPOCH)
            line.last_fetched_epoch = -1 if offset == 0 else LEADER_EPOCH
    return request


async def fetched(service: BrokerService, request: broker_pb2.FetchRequest) -> DecodedFetchResponse:
    """The answer as a follower reads it: through the gRPC serializer and the follower's deserializer."""
    return decode_fetch_response(encode_fetch_response(await service.Fetch(request, None)))


def answered(response: DecodedFetchResponse) -> dict[int, tuple[int, int]]:
    """partition -> (high watermark, bytes of records)"""
    return {p.partition_index: (p.high_watermark, len(records)) for _, p, records in response.partitions()}


async def test_sessions_answer_only_partitions_with_news(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    service = BrokerService(manager, "PLAINTEXT", FetchSessionCache(10, itertools.count(42).__next__))
    first = await fetched(service, fetch({0: 0, 1: 0}, 0, 0))
    assert all(p.error_code == 0 for _, p, _ in first.partitions())
    assert first.message.session_id == 42 and answered(first) == {0: (0, 0), 1: (0, 0)}

    idle = await fetched(service, fetch({}, 42, 1))
    assert idle.message.error_code == 0 and idle.message.session_id == 42 and answered(idle) == {}

    batch = build_batch([Record(b"v")])
    manager.produce(TopicPartition("orders", 1), batch, 1, 30000)
    news = await fetched(service, fetch({}, 42, 2))
    assert answered(news) == {1: (0, len(batch))}  # partition 0 has nothing new: left out

    moved = await fetched(service, fetch({1: 1}, 42, 3))  # only the partition whose offset moved is listed
    assert answered(moved) == {}  # the HWM stays at 0 until a second ISR member has the record
    assert manager.replicas[TopicPartition("orders", 1)].leader.follower(FOLLOWER).log_end_offset == 1  # type: ignore[union-attr]

    stale = await fetched(service, fetch({}, 42, 3))
    stale_answer = (stale.message.error_code, stale.message.session_id, answered(stale))
    assert stale_answer == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, {})
    unknown = await fetched(service, fetch({}, 7, 1))
    assert unknown.message.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    consumer = await fetched(service, fetch({0: 0, 1: 0}, 0, None, replica=False))
    assert consumer.message.session_id == 0 and set(answered(consumer)) == {0, 1}
    assert set(service.fetch_sessions.sessions) == {42}


async def test_a_woken_re_read_is_not_a_second_fetch(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    tp = TopicPartition("orders", 0)
    manager.follower_fetch(tp, FOLLOWER, FOLLOWER_EPOCH, LEADER_EPOCH, 0, -1, 1024)
    counted = manager.replicas[tp].leader.follower(FOLLOWER)  # type: ignore[union-attr]
    batch = build_batch([Record(b"v")])
    manager.produce(tp, batch, 1, 30000)
    result = manager.follower_fetch(tp, FOLLOWER, FOLLOWER_EPOCH, LEADER_EPOCH, 0, -1, 1024, record_fetch=False)
    assert result.error == ErrorCode.NONE and len(result.records) == len(batch)  # stamped with the leader epoch
    assert manager.replicas[tp].leader.follower(FOLLOWER) == counted  # type: ignore[union-attr]


async def test_offsets_for_leader_epoch_checks_the_current_leader_epoch(tmp_path: Path) -> None:
    """Kafka's OffsetsForLeaderEpoch: a requester behind the leader epoch is fenced; -1 (unknown) passes."""
    manager = leader_of_two_partitions(tmp_path)
    manager.produce(TopicPartition("orders", 0), build_batch([Record(b"v")]), 1, 30000)
    service = BrokerService(manager, "PLAINTEXT", FetchSessionCache(10, itertools.count(42).__next__))
    request = broker_pb2.OffsetsForLeaderEpochRequest(replica_id=-1)
    topic = request.topics.add(topic_id=TOPIC_ID.bytes)
    for current in (LEADER_EPOCH, -1, LEADER_EPOCH - 1, LEADER_EPOCH + 1):
        topic.partitions.add(partition=0, current_leader_epoch=current, leader_epoch=LEADER_EPOCH)
    topic.partitions.add(partition=7, current_leader_epoch=-1, leader_epoch=LEADER_EPOCH)
    answers = (await service.OffsetsForLeaderEpoch(request, None)).topics[0].partitions
    assert [(a.error_code, a.end_offset) for a in answers] == [
        (ErrorCode.NONE, 1),
        (ErrorCode.NONE, 1),
        (ErrorCode.FENCED_LEADER_EPOCH, -1),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


async def test_a_follower_reads_a_large_answer_through_grpc(tmp_path: Path) -> None:
    """The registered service and the follower's FetchStream, over a real gRPC connection: a batch above the size
    where answers are spliced comes back whole, as a view of the received bytes."""
    manager = leader_of_two_partitions(tmp_path)
    batch = build_batch([Record(bytes([n % 256]) * 1000) for n in range(100)])
    assert len(batch) > SPLICE_FROM_BYTES
    manager.produce(TopicPartition("orders", 0), batch, 1, 30000)
    server = grpc.aio.server()
    BrokerService(manager, "PLAINTEXT", FetchSessionCache(10, itertools.count(42).__next__)).register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = fetch_stream(channel)()
            await call.write(fetch({0: 0}, 0, 0))
            answer = await call.read()
            call.cancel()
    finally:
        await server.stop(None)
    ((_, partition, records),) = list(answer.partitions())
    assert partition.error_code == 0 and isinstance(records, memoryview)
    assert bytes(records)[16:] == batch[16:]  # all but the base offset and leader epoch the leader stamped
