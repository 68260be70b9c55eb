"""DeleteRecords: the leader's log start moves up (to the high watermark for -1), never past the high watermark
(OFFSET_OUT_OF_RANGE); earlier records are no longer fetched nor listed; the log start survives a restart; a
follower follows the leader's log start from its Fetch answers; a broker that does not lead answers
NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.delete_records.v0 import request as v0
from kio.schema.delete_records.v2 import request as v2

from minikafka.broker.fetch_session import PartitionFetchState
from minikafka.broker.fetcher import FollowerAnswer
from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.delete_records import deletion_target
from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_follower, make_leader
from minikafka.broker.replica_manager import EARLIEST_TIMESTAMP, Replica, ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.uuid4()
SMALL_SEGMENTS = LogConfig(segment_bytes=200)  # a few batches a segment


def leading_manager(tmp_path: Path, records: int = 10, high_watermark: int = 8) -> ReplicaManager:
    config = SimpleNamespace(node_id=0)
    topic = SimpleNamespace(name="orders", topic_id=TOPIC_ID)
    image = SimpleNamespace(
        topics_by_name={"orders": topic},
        partition=lambda topic_id, index: object() if index < 2 else None,
        brokers={},  # the follower (1) is not alive: the low watermark is the leader's log start alone
    )
    logs = SimpleNamespace(unopened={})
    manager = ReplicaManager(config, logs, SimpleNamespace(image=image), None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    log = PartitionLog.open(tmp_path / "orders-0", SMALL_SEGMENTS, 0)
    for i in range(records):
        log.append_as_leader(build_batch([Record(b"v%d" % i)]), 1, 0)
    log.high_watermark = high_watermark
    metadata = PartitionMetadata((0, 1), (0, 1), 0, 1, 1)
    role = make_leader("orders-0", 0, 10, metadata, records, high_watermark, PartitionConfig(1, 30000), 0).state
    manager.replicas[TP] = Replica(TP, TOPIC_ID, log, role, ProducePurgatory("orders-0"))
    return manager


def delete(manager: ReplicaManager, offsets: dict[int, int], version: int = 2) -> dict[int, tuple[int, int]]:
    """partition -> (error code, low watermark) as the listener answers a DeleteRecords."""
    schema = v2 if version == 2 else v0
    partitions = tuple(schema.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets.items())
    body = schema.DeleteRecordsRequest(
        topics=(schema.DeleteRecordsTopic(name="orders", partitions=partitions),),
        timeout=datetime.timedelta(seconds=30),
    )
    ctx = WireContext(manager, "PLAINTEXT")
    response: Any = asyncio.run(apis.HANDLERS[21](ctx, Request(ApiHeader(21, version, 1), "test", body)))
    encode_response(1, response)  # every field is one kio can write at this version
    [topic] = response.topics
    return {p.partition_index: (int(p.error_code.value), p.low_watermark) for p in topic.partitions}


def test_delete_records_is_advertised_with_kafka_4s_range() -> None:
    assert api_versions.SUPPORTED[21] == (0, 2)


def test_the_log_start_moves_inside_a_segment_and_earlier_records_are_gone(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    log = manager.replicas[TP].log
    assert len(log.segments) > 2
    assert delete(manager, {0: 5}) == {0: (0, 5)}
    assert log.log_start_offset == 5 and log.segments[0].base_offset <= 5  # whole segments below it went
    assert manager.list_offset(TP, EARLIEST_TIMESTAMP, -1).offset == 5
    assert manager.consumer_fetch(TP, 4, -1, 1 << 20).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert manager.consumer_fetch(TP, 5, -1, 1 << 20).error == ErrorCode.NONE
    assert delete(manager, {0: 3}) == {0: (0, 5)}  # never backwards


def test_minus_one_is_the_high_watermark_and_beyond_it_is_out_of_range(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    assert delete(manager, {0: 9}, version=0) == {0: (int(ErrorCode.OFFSET_OUT_OF_RANGE), -1)}
    assert delete(manager, {0: -2}) == {0: (int(ErrorCode.OFFSET_OUT_OF_RANGE), -1)}
    assert manager.replicas[TP].log.log_start_offset == 0  # nothing moved
    assert delete(manager, {0: -1}) == {0: (0, 8)}


def test_the_log_start_survives_a_restart(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    delete(manager, {0: 6})
    manager.replicas[TP].log.close()
    reopened = PartitionLog.open(tmp_path / "orders-0", SMALL_SEGMENTS, 0)
    assert reopened.log_start_offset == 6


def test_a_partition_not_led_here_and_one_outside_the_topic(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    answered = delete(manager, {1: 1, 7: 1})
    assert answered[1] == (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1)
    assert answered[7] == (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1)


def test_the_decision_names_the_high_watermark() -> None:
    refused = deletion_target(9, 8, "orders-0")
    assert refused.error == ErrorCode.OFFSET_OUT_OF_RANGE and "high watermark 8" in (refused.message or "")
    assert deletion_target(-1, 8, "orders-0").offset == 8


def test_a_follower_follows_the_leaders_log_start_below_its_high_watermark(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    log = manager.replicas[TP].log
    manager.replicas[TP].role = make_follower("orders-0", 0, PartitionMetadata((0, 1), (0, 1), 1, 2, 2), 10, 8).state
    sent = PartitionFetchState(TOPIC_ID.bytes, "orders", 0, 2, 10, 1, 0, 1 << 20)
    assert manager.apply_follower_answer(FollowerAnswer(1, sent, ErrorCode.NONE, 9, b"", None, 7))
    assert log.log_start_offset == 7 and log.high_watermark == 9
    assert manager.apply_follower_answer(FollowerAnswer(1, sent, ErrorCode.NONE, 9, b"", None, 12))
    assert log.log_start_offset == 9  # capped at its own high watermark


def alive_follower(manager: ReplicaManager) -> None:
    follower = SimpleNamespace(broker_epoch=11, fenced=False, in_controlled_shutdown=False)
    manager.metadata.image.brokers = {1: follower}


async def test_the_answer_waits_for_the_live_followers_log_start(tmp_path: Path) -> None:
    """Kafka's DelayedDeleteRecords: the low watermark is the lowest log start over the leader and its followers
    on live brokers; the answer comes once it reached the offset."""
    manager = leading_manager(tmp_path)
    alive_follower(manager)
    waiting = asyncio.ensure_future(manager.delete_records_replicated(TP, 5, 30))
    await asyncio.sleep(0)
    assert not waiting.done() and manager.replicas[TP].log.log_start_offset == 5  # the leader moved at once
    manager.follower_fetch(TP, 1, 11, 1, 8, -1, 1 << 20, log_start_offset=3)
    await asyncio.sleep(0)
    assert not waiting.done()  # the follower still starts below 5
    manager.follower_fetch(TP, 1, 11, 1, 8, -1, 1 << 20, log_start_offset=5)
    deleted = await asyncio.wait_for(waiting, 5)
    assert (deleted.error, deleted.low_watermark) == (ErrorCode.NONE, 5)


async def test_a_follower_that_never_follows_times_the_request_out(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    alive_follower(manager)
    deleted = await manager.delete_records_replicated(TP, 5, 0.05)
    assert deleted.error == ErrorCode.REQUEST_TIMED_OUT
    assert manager.replicas[TP].log.log_start_offset == 5  # as in Kafka, the leader's log start stays moved


async def test_log_starts_heard_in_an_earlier_leader_epoch_do_not_count(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    alive_follower(manager)
    manager.follower_fetch(TP, 1, 11, 1, 8, -1, 1 << 20, log_start_offset=5)
    metadata = PartitionMetadata((0, 1), (0, 1), 0, 2, 2)
    manager.replicas[TP].role = make_leader("orders-0", 0, 10, metadata, 10, 8, PartitionConfig(1, 30000), 0).state
    deleted = await manager.delete_records_replicated(TP, 5, 0.05)
    assert deleted.error == ErrorCode.REQUEST_TIMED_OUT  # leader epoch 2 has not heard from the follower yet
