"""A controller replays a big commit a slice per loop turn: the event loop is never held for the whole of it, the
records still replay in order to the image a replay in one go builds, and a high watermark heard meanwhile waits
for the records before it."""

from __future__ import annotations

import asyncio
import uuid

from manual_raft import CONFIG, ManualRaft

from minikafka.common.config import load_config
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Partition, Record, Topic, encode_record
from minikafka.kraft_controller.quorum_controller import REPLAY_RECORDS_PER_TURN, QuorumController
from minikafka.kraft_controller.raft.messages import LogEntry

PARTITIONS = 2 * REPLAY_RECORDS_PER_TURN + 100  # three slices


def big_topic() -> list[Record]:
    topic_id = uuid.UUID(int=7)
    records: list[Record] = [Topic(name="big", topic_id=topic_id)]
    records += [
        Partition(topic_id=topic_id, partition_id=index, replicas=(1, 2, 3), isr=(1, 2, 3), leader=1 + index % 3)
        for index in range(PARTITIONS)
    ]
    return records


def follower() -> QuorumController:
    raft = ManualRaft()
    raft.leader_id = 2  # another node leads: this one only replays
    controller = QuorumController(load_config(ControllerConfig, CONFIG), raft, clock=lambda: 0)
    controller.handle_leader_change(1, 2, 0)
    return controller


def entries(records: list[Record], base_offset: int = 1) -> list[LogEntry]:
    return [LogEntry(offset, 1, encode_record(record)) for offset, record in enumerate(records, base_offset)]


async def test_a_big_commit_is_replayed_a_slice_per_loop_turn_and_in_order() -> None:
    records = big_topic()
    controller = follower()
    controller.handle_commit(entries(records))
    # Control entries after the records committed too: that must not pass for the records being replayed.
    controller.handle_high_watermark(len(records) + 3)
    assert controller.replayed_offset == REPLAY_RECORDS_PER_TURN  # offsets 1..500: the first slice only
    assert len(controller.state.committed.topics_by_name["big"].partitions) == REPLAY_RECORDS_PER_TURN - 1
    deadline = asyncio.get_running_loop().time() + 5
    while controller.replayed_offset < len(records) + 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0)
    assert controller.replayed_offset == len(records) + 2  # the control entries after the last record too
    expected = MetadataImage.from_records(records, len(records))
    assert controller.state.committed.topics_by_name["big"].partitions == expected.topics_by_name["big"].partitions
    await controller.stop()


def test_without_a_running_loop_the_whole_commit_is_replayed_at_once() -> None:
    records = big_topic()
    controller = follower()
    controller.handle_commit(entries(records))
    assert controller.replayed_offset == len(records)
    assert len(controller.state.committed.topics_by_name["big"].partitions) == PARTITIONS
