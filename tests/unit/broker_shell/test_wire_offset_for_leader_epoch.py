"""OffsetForLeaderEpoch on the Kafka listener answers as the gRPC front end does (one replica-manager method):
where the asked epoch ends, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a stale or future current epoch, and
UNKNOWN_TOPIC_OR_PARTITION for a partition the topic lacks."""

from __future__ import annotations

from pathlib import Path

from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from test_fetch_sessions_served import LEADER_EPOCH, leader_of_two_partitions

from minikafka.broker.kafka_wire import offset_for_leader_epoch
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.record_batch import Record, build_batch


async def test_epoch_end_offsets_and_leader_epoch_checks(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    manager.produce(TopicPartition("orders", 0), build_batch([Record(b"v"), Record(b"w")]), 1, 30000)
    asked = [
        OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=LEADER_EPOCH)
        for current in (LEADER_EPOCH, -1, LEADER_EPOCH - 1, LEADER_EPOCH + 1)
    ]
    asked.append(OffsetForLeaderPartition(partition=7, current_leader_epoch=-1, leader_epoch=LEADER_EPOCH))
    body = OffsetForLeaderEpochRequest(
        replica_id=-1, topics=(OffsetForLeaderTopic(topic="orders", partitions=tuple(asked)),)
    )
    request = Request(ApiHeader(23, 4, 1), "test", body)
    answer = offset_for_leader_epoch.handle(WireContext(manager, "PLAINTEXT"), request)
    got = [(int(p.error_code.value), p.leader_epoch, p.end_offset) for p in answer.topics[0].partitions]
    assert got == [(0, LEADER_EPOCH, 2), (0, LEADER_EPOCH, 2), (74, -1, -1), (75, -1, -1), (3, -1, -1)]
