"""The two broker front ends answer alike, as Kafka answers, because both call one request layer: each test drives
the gRPC servicer and the Kafka listener's handlers against a real ReplicaManager and logs, without processes.

Where the front ends had drifted apart: Fetch with min_bytes 0 (answered at once, as Kafka does), a diverging epoch
(answered at once, also to a consumer naming its last fetched epoch), a Produce's acks check and timeout. Where both
were wrong: a Fetch listing one partition many times, or many partitions with big batches (a whole batch per line
whatever max_bytes said), and ListOffsets naming a partition twice."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.init_producer_id.v4 import request as init_producer_id_v4
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.produce.v9 import request as produce_v9
from test_fetch_sessions_served import FOLLOWER, FOLLOWER_EPOCH, LEADER_EPOCH, TOPIC_ID, leader_of_two_partitions
from test_wire_fetch_sessions import committed

from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.kafka_wire import fetch as wire_fetch
from minikafka.broker.kafka_wire import init_producer_id as wire_init_producer_id
from minikafka.broker.kafka_wire import list_offsets as wire_list_offsets
from minikafka.broker.kafka_wire import produce as wire_produce
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.service import BrokerService
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.fetch_response_wire import decode_fetch_response, encode_fetch_response
from minikafka.common.record_batch import Record, build_batch
from minikafka.pb import broker_pb2

FRONT_ENDS = ("grpc", "kafka")
BIG = 64 * 1024  # bytes of one record's value: a batch of one record is a little more


@contextmanager
def at_once(manager: ReplicaManager) -> Iterator[None]:
    """Inside, a fetch that parks fails the test: the request must be answered without waiting."""

    async def waited(_for_replica: bool, _timeout_s: float) -> bool:
        raise AssertionError("the fetch waited instead of answering at once")

    manager.wait_for_change = waited  # type: ignore[method-assign]
    try:
        yield
    finally:
        del manager.wait_for_change


# ---- the same consumer Fetch through either front end, as (topic, partition, error, hwm, records, diverging) ----


async def consumer_fetch(
    manager: ReplicaManager,
    front_end: str,
    lines: list[tuple[int, int, int]],
    min_bytes: int = 1,
    max_bytes: int = 50 << 20,
    max_wait_ms: int = 60_000,
) -> list[tuple[int, int, int, int, tuple[int, int] | None]]:
    """A sessionless consumer Fetch of `lines` (partition, fetch offset, last fetched epoch) of topic "orders";
    each answered partition as (partition, error, high watermark, bytes of records, diverging (epoch, end))."""
    if front_end == "grpc":
        request = broker_pb2.FetchRequest(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes)
        topic = request.topics.add(topic="orders")
        for partition, offset, last_epoch in lines:
            topic.partitions.add(
                partition=partition,
                fetch_offset=offset,
                current_leader_epoch=-1,
                last_fetched_epoch=last_epoch,
                partition_max_bytes=1 << 20,
            )
        service = BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))
        answer = decode_fetch_response(encode_fetch_response(await service.Fetch(request, None)))
        return [
            (
                p.partition_index,
                p.error_code,
                p.high_watermark,
                len(records),
                (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) if p.HasField("diverging_epoch") else None,
            )
            for _, p, records in answer.partitions()
        ]
    body = fetch_v12.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=0,
        session_epoch=-1,
        topics=(
            fetch_v12.FetchTopic(
                topic="orders",
                partitions=tuple(
                    fetch_v12.FetchPartition(
                        partition=p, fetch_offset=o, last_fetched_epoch=e, partition_max_bytes=1 << 20
                    )
                    for p, o, e in lines
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    response = await wire_fetch.handle(WireContext(manager, "PLAINTEXT"), Request(ApiHeader(1, 12, 1), "t", body))
    return [
        (
            p.partition_index,
            int(p.error_code.value),
            p.high_watermark,
            len(p.records or b""),
            (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) if p.diverging_epoch.epoch >= 0 else None,
        )
        for t in response.responses
        for p in t.partitions
    ]


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_min_bytes_zero_answers_at_once(tmp_path: Path, front_end: str) -> None:
    manager = leader_of_two_partitions(tmp_path)
    with at_once(manager):
        answer = await consumer_fetch(manager, front_end, [(0, 0, -1)], min_bytes=0)
    assert answer == [(0, ErrorCode.NONE, 0, 0, None)]


def two_records_in_epoch(tmp_path: Path) -> ReplicaManager:
    """orders-0 holds offsets 0-1, written in LEADER_EPOCH; its epoch cache knows an epoch 0 before, ending at 0."""
    manager = leader_of_two_partitions(tmp_path)
    manager.replicas[TopicPartition("orders", 0)].log.assign_epoch_start_offset(0, 0)
    committed(manager, 0, 2)
    return manager


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_a_diverging_epoch_answers_at_once(tmp_path: Path, front_end: str) -> None:
    manager = two_records_in_epoch(tmp_path)
    with at_once(manager):
        # A consumer that read offsets 0-1 in epoch 0 (from a leader since replaced): epoch 0 ends at 0 here.
        answer = await consumer_fetch(manager, front_end, [(0, 2, 0)])
    assert answer == [(0, ErrorCode.NONE, 2, 0, (0, 0))]


async def test_a_followers_diverging_epoch_answers_at_once(tmp_path: Path) -> None:
    manager = two_records_in_epoch(tmp_path)
    request = broker_pb2.FetchRequest(max_wait_ms=60_000, min_bytes=1)
    request.replica_state.replica_id, request.replica_state.replica_epoch = FOLLOWER, FOLLOWER_EPOCH
    request.topics.add(topic_id=TOPIC_ID.bytes).partitions.add(
        partition=0, fetch_offset=2, current_leader_epoch=LEADER_EPOCH, last_fetched_epoch=0
    )
    service = BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))
    with at_once(manager):
        answer = decode_fetch_response(encode_fetch_response(await service.Fetch(request, None)))
    [(_, partition, _)] = list(answer.partitions())
    assert (partition.diverging_epoch.epoch, partition.diverging_epoch.end_offset) == (0, 0)


# ---- Fetch's response size (the amplification a forged request could cause) ----


def big_batches(manager: ReplicaManager, partition: int, count: int) -> int:
    """`count` committed batches of one big record each; the size of one batch."""
    tp = TopicPartition("orders", partition)
    size = 0
    for i in range(count):
        batch = build_batch([Record(b"%d" % i + b"x" * BIG)])
        size = len(batch)
        manager.produce(tp, batch, 1, 30000)
    end = manager.replicas[tp].log.log_end_offset
    for follower in (1, 2):
        manager.follower_fetch(tp, follower, FOLLOWER_EPOCH, LEADER_EPOCH, end, LEADER_EPOCH, 1 << 20)
    return size


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_one_partition_listed_many_times_is_read_once(tmp_path: Path, front_end: str) -> None:
    manager = leader_of_two_partitions(tmp_path)
    size = big_batches(manager, 0, 1)
    answer = await consumer_fetch(manager, front_end, [(0, 0, -1)] * 200, max_bytes=1024)
    assert answer == [(0, ErrorCode.NONE, 1, size, None)]  # one entry; its first batch whole past max_bytes


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_one_batch_at_most_past_max_bytes(tmp_path: Path, front_end: str) -> None:
    manager = leader_of_two_partitions(tmp_path)
    size = big_batches(manager, 0, 3)
    big_batches(manager, 1, 3)
    # Under the limit the first partition gets what fits; the next gets the rest, whole batches only.
    answer = await consumer_fetch(manager, front_end, [(0, 0, -1), (1, 0, -1)], max_bytes=size * 2 + size // 2)
    assert [(p, records) for p, _, _, records, _ in answer] == [(0, size * 2), (1, 0)]
    # A limit below one batch: the first partition's first batch whole, nothing from the second.
    answer = await consumer_fetch(manager, front_end, [(0, 0, -1), (1, 0, -1)], max_bytes=1)
    assert [(p, error, hwm, records) for p, error, hwm, records, _ in answer] == [(0, 0, 3, size), (1, 0, 3, 0)]
    # An empty first partition does not use up the one batch allowed past the limit.
    answer = await consumer_fetch(manager, front_end, [(0, 3, -1), (1, 0, -1)], max_bytes=1)
    assert [(p, records) for p, _, _, records, _ in answer] == [(0, 0), (1, size)]


# ---- Produce ----


async def produce(manager: ReplicaManager, front_end: str, acks: int, timeout_ms: int, records: bytes) -> Any:
    """A Produce of `records` to orders-0 and orders-1; the handler's future, not awaited."""
    if front_end == "grpc":
        request = broker_pb2.ProduceRequest(acks=acks, timeout_ms=timeout_ms)
        topic = request.topic_data.add(name="orders")
        for partition in (0, 1):
            topic.partition_data.add(index=partition, records=records)
        return BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))._start_produce(request)
    body = produce_v9.ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(
            produce_v9.TopicProduceData(
                name="orders",
                partition_data=tuple(produce_v9.PartitionProduceData(index=p, records=records) for p in (0, 1)),
            ),
        ),
    )
    return wire_produce.handle(WireContext(manager, "PLAINTEXT"), Request(ApiHeader(0, 9, 1), "t", body))


def produce_answers(response: Any) -> list[tuple[int, int, int, int]]:
    """(partition, error, base offset, log start offset) of either front end's response"""
    return [
        (p.index, int(getattr(p.error_code, "value", p.error_code)), p.base_offset, p.log_start_offset)
        for t in response.responses
        for p in t.partition_responses
    ]


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_invalid_acks_refuse_every_partition_and_append_nothing(tmp_path: Path, front_end: str) -> None:
    manager = leader_of_two_partitions(tmp_path)
    response = await (await produce(manager, front_end, 2, 30000, build_batch([Record(b"v")])))
    refused = ErrorCode.INVALID_REQUIRED_ACKS
    assert produce_answers(response) == [(0, refused, -1, -1), (1, refused, -1, -1)]
    assert [manager.replicas[TopicPartition("orders", p)].log.log_end_offset for p in (0, 1)] == [0, 0]


async def test_kafka_produce_timeout_zero_does_not_wait(tmp_path: Path) -> None:
    """Kafka's acks=all with timeout 0: what the ISR has not yet replicated times out at once (no 30 s default)."""
    manager = leader_of_two_partitions(tmp_path)
    answer = await produce(manager, "kafka", -1, 0, build_batch([Record(b"v")]))
    waiting = [len(manager.replicas[TopicPartition("orders", p)].produces) for p in (0, 1)]
    assert waiting == [0, 0]  # expired when it was added, not parked in the purgatory for a default timeout
    timed_out = ErrorCode.REQUEST_TIMED_OUT
    assert produce_answers(await answer) == [(0, timed_out, -1, 0), (1, timed_out, -1, 0)]


# ---- ListOffsets ----


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_list_offsets_naming_a_partition_twice_is_invalid_request(tmp_path: Path, front_end: str) -> None:
    manager = leader_of_two_partitions(tmp_path)
    lines = [(0, -1), (1, -1), (0, -2)]  # partition, timestamp
    if front_end == "grpc":
        request = broker_pb2.ListOffsetsRequest()
        topic = request.topics.add(name="orders")
        for partition, timestamp in lines:
            topic.partitions.add(partition_index=partition, timestamp=timestamp, current_leader_epoch=-1)
        service = BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))
        response = await service.ListOffsets(request, None)
        got = [(p.partition_index, p.error_code, p.offset) for t in response.topics for p in t.partitions]
    else:
        body = list_offsets_v7.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                list_offsets_v7.ListOffsetsTopic(
                    name="orders",
                    partitions=tuple(
                        list_offsets_v7.ListOffsetsPartition(partition_index=p, timestamp=t) for p, t in lines
                    ),
                ),
            ),
        )
        response = wire_list_offsets.handle(WireContext(manager, "PLAINTEXT"), Request(ApiHeader(2, 7, 1), "t", body))
        got = [(p.partition_index, int(p.error_code.value), p.offset) for t in response.topics for p in t.partitions]
    invalid = ErrorCode.INVALID_REQUEST
    assert got == [(0, invalid, -1), (1, ErrorCode.NONE, 0), (0, invalid, -1)]


# ---- InitProducerId ----


@pytest.mark.parametrize("front_end", FRONT_ENDS)
async def test_init_producer_id_refused_answers_no_producer_id(tmp_path: Path, front_end: str) -> None:
    """When the controller allocates no ids, both answer the error with producer id and epoch -1, as Kafka."""
    manager = leader_of_two_partitions(tmp_path)

    async def no_ids() -> int:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no controller answered")

    manager.producer_ids = SimpleNamespace(generate=no_ids)  # type: ignore[assignment]
    if front_end == "grpc":
        service = BrokerService(manager, "GRPC", FetchSessionCache(0, lambda: 1))
        response = await service.InitProducerId(broker_pb2.InitProducerIdRequest(), None)
        got = (response.error_code, response.producer_id, response.producer_epoch)
    else:
        body = init_producer_id_v4.InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=datetime.timedelta(seconds=60),
            producer_id=-1,
            producer_epoch=-1,
        )
        request = Request(ApiHeader(22, 4, 1), "t", body)
        response = await wire_init_producer_id.handle(WireContext(manager, "PLAINTEXT"), request)
        got = (int(response.error_code.value), response.producer_id, response.producer_epoch)
    assert got == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1)
