"""A follower's fetch rounds, end to end on the follower (a real ReplicaManager, its logs and its fetchers) against
fake leaders that hold each Fetch until the test answers it: an idle round reads no partition's state, and each
change (records appended, a truncation, retention, a new leader epoch, a leader moving away, a topic deleted, a
lost session) is in the next Fetch exactly as comparing every partition would list it; a full Fetch reads every
replica afresh."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker import fetcher as fetcher_module
from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.broker.metadata_listener import MetadataDelta
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.fetch_response_wire import DecodedFetchResponse, decode_fetch_response
from minikafka.common.record_batch import Record, build_batch, set_base_offset, set_partition_leader_epoch
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Partition, PartitionChange, RegisterBroker, RemoveTopic, Topic
from minikafka.pb import broker_pb2, common_pb2
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

ORDERS = uuid.UUID("11111111-2222-4333-8444-555555555555")
AUDIT = uuid.UUID("66666666-7777-4888-9999-000000000000")
PARTITIONS = 10  # of orders; audit has 2, all led by broker 0 and followed by broker 1
SESSION = 7
Listed = list[tuple[str, int, int, int, int]]  # (topic, partition, leader epoch, fetch offset, log start)


class FakeLeader:
    """A leader's FetchStream: each Fetch waits in `requests` for the test's answer."""

    def __init__(self) -> None:
        self.requests: asyncio.Queue[broker_pb2.FetchRequest] = asyncio.Queue()
        self.answers: asyncio.Queue[bytes] = asyncio.Queue()

    def open(self) -> FakeLeader:
        return self

    async def write(self, request: broker_pb2.FetchRequest) -> None:
        await self.requests.put(request)

    async def read(self) -> DecodedFetchResponse:
        return decode_fetch_response(await self.answers.get())

    def cancel(self) -> None:
        pass


class Following:
    """Broker 1 following `orders` and `audit` from broker 0, its fetchers talking to fake leaders."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        config = SimpleNamespace(
            node_id=1,
            min_insync_replicas=1,
            replica_lag_time_max_ms=30_000,
            set_keys=frozenset(),
            inter_node_tls=None,
            replica_fetch_backoff_ms=1000,
            replica_fetch_wait_max_ms=500,
            request_timeout_ms=30_000,
            replica_fetch_min_bytes=1,
            replica_fetch_response_max_bytes=10 << 20,
            replica_fetch_max_bytes=1 << 20,
        )
        records: list[Any] = [RegisterBroker(b, str(b)) for b in (0, 1, 2)]
        for topic_id, name, count in ((ORDERS, "orders", PARTITIONS), (AUDIT, "audit", 2)):
            records.append(Topic(name, topic_id))
            records += [Partition(topic_id, p, (0, 1, 2), (0, 1, 2), 0) for p in range(count)]
        self.metadata = SimpleNamespace(image=MetadataImage())
        logs = LogManager(tmp_path, lambda topic: LogConfig())
        self.manager = ReplicaManager(config, logs, self.metadata, None, lambda: 11, lambda: True)  # type: ignore[arg-type]
        self.leaders = {0: FakeLeader(), 2: FakeLeader()}
        monkeypatch.setattr(self.manager, "leader_address", lambda leader_id: str(leader_id))
        monkeypatch.setattr(fetcher_module.PeerChannels, "get", lambda _self, address: address)
        monkeypatch.setattr(fetcher_module, "fetch_stream", lambda address: self.leaders[int(address)].open)
        # What reads a partition's fetch state: every replica's, once a round, before the fetch states were kept.
        self.state_reads: Counter[str] = Counter()
        latest_epoch = PartitionLog.latest_epoch

        def counted(log: PartitionLog) -> int:
            self.state_reads[log.name] += 1
            return latest_epoch.fget(log)  # type: ignore[attr-defined,no-any-return]

        monkeypatch.setattr(PartitionLog, "latest_epoch", property(counted))
        self.publish(*records)

    def publish(self, *records: Any) -> None:
        image = self.metadata.image
        for record in records:
            image = image.replay(record, image.offset + 1)
        self.metadata.image = image
        changed = tuple((topic.topic_id, index) for topic, index, _ in image.partitions())
        self.manager.on_metadata(MetadataDelta(image, changed, image.offset))

    async def request(self, leader: int = 0) -> broker_pb2.FetchRequest:
        return await asyncio.wait_for(self.leaders[leader].requests.get(), 10)

    def answer(self, *partitions: tuple[uuid.UUID, broker_pb2.FetchResponse.PartitionData], **fields: Any) -> None:
        response = broker_pb2.FetchResponse(session_id=fields.pop("session_id", SESSION), **fields)
        for topic_id, data in partitions:
            response.responses.add(topic_id=topic_id.bytes).partitions.append(data)
        self.leaders[0].answers.put_nowait(response.SerializeToString())

    async def opened(self) -> broker_pb2.FetchRequest:
        """The first Fetch to broker 0 (full), answered with a session."""
        first = await self.request()
        self.answer()
        return first

    def log(self, topic: str, partition: int) -> PartitionLog:
        return self.manager.replicas[TopicPartition(topic, partition)].log


def listed(request: broker_pb2.FetchRequest) -> Listed:
    return [
        (t.topic, p.partition, p.current_leader_epoch, p.fetch_offset, p.log_start_offset)
        for t in request.topics
        for p in t.partitions
    ]


def forgotten(request: broker_pb2.FetchRequest) -> list[tuple[bytes, int]]:
    return [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]


def records(offset: int, count: int = 1, leader_epoch: int = 0) -> bytes:
    out = b""
    for number in range(count):
        batch = bytearray(build_batch([Record(b"v")]))
        set_base_offset(batch, 0, offset + number)
        set_partition_leader_epoch(batch, 0, leader_epoch)
        out += bytes(batch)
    return out


def data(partition: int, high_watermark: int, **fields: Any) -> broker_pb2.FetchResponse.PartitionData:
    return broker_pb2.FetchResponse.PartitionData(partition_index=partition, high_watermark=high_watermark, **fields)


@pytest.fixture
async def following(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Following]:
    follower = Following(tmp_path, monkeypatch)
    yield follower
    await follower.manager.stop()


async def test_idle_rounds_read_no_partitions_fetch_state(following: Following) -> None:
    first = await following.request()
    assert first.session_epoch == 0 and len(listed(first)) == PARTITIONS + 2
    following.state_reads.clear()
    following.answer()
    for epoch in (1, 2, 3):
        idle = await following.request()
        assert (idle.session_id, idle.session_epoch, listed(idle), forgotten(idle)) == (SESSION, epoch, [], [])
        following.answer()
    await following.request()
    assert sum(following.state_reads.values()) == 0


async def test_appended_records_truncation_and_retention_are_sent_for_their_partition_only(
    following: Following,
) -> None:
    await following.opened()
    await following.request()
    following.answer((ORDERS, data(3, 2, records=records(0, count=2))))
    assert listed(await following.request()) == [("orders", 3, 0, 2, 0)]
    following.answer((ORDERS, data(3, 2, diverging_epoch=common_pb2.EpochEndOffset(epoch=0, end_offset=1))))
    assert listed(await following.request()) == [("orders", 3, 0, 1, 0)]  # truncated to the leader's epoch end
    following.log("orders", 3).delete_before(1, reason="retention")
    following.manager.log_start_moved(TopicPartition("orders", 3))
    following.answer()
    assert listed(await following.request()) == [("orders", 3, 0, 1, 1)]


async def test_a_new_leader_epoch_is_sent_and_partitions_moved_or_deleted_are_forgotten(
    following: Following,
) -> None:
    await following.opened()
    await following.request()
    following.publish(
        PartitionChange(ORDERS, 5, leader=2),  # follows from broker 2 now
        PartitionChange(ORDERS, 6, leader=2),
        PartitionChange(ORDERS, 6, leader=0),  # back, two leader epochs on
        RemoveTopic(AUDIT),
    )
    following.answer()
    moved = await following.request()
    assert listed(moved) == [("orders", 6, 2, 0, 0)]
    assert sorted(forgotten(moved)) == sorted([(ORDERS.bytes, 5), (AUDIT.bytes, 0), (AUDIT.bytes, 1)])
    assert listed(await following.request(leader=2)) == [("orders", 5, 1, 0, 0)]  # broker 2's fetcher, in full


async def test_a_lost_session_fetches_every_partition_in_full(following: Following) -> None:
    await following.opened()
    await following.request()
    following.answer((ORDERS, data(4, 1, records=records(0))))
    await following.request()
    # Changed behind the replica manager's back, so not noted: the full Fetch reads every replica afresh.
    following.manager.replicas[TopicPartition("orders", 7)].failed_in_epoch = 0
    following.answer(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    full = await following.request()
    assert (full.session_id, full.session_epoch, len(listed(full))) == (0, 0, PARTITIONS + 1)
    assert [line for line in listed(full) if line[3] != 0] == [("orders", 4, 0, 1, 0)]
    assert ("orders", 7) not in [line[:2] for line in listed(full)]
